//===- ContextAttention.cpp - ring and zigzag attention to block ops -------===//
//
// Context-parallel attention whose rows carry explicit global positions
// (`ring_axes`, `sequence_zigzag`) becomes the block ops of
// BraidBlockAttentionOps.td and, for the ring, dist.shift transfers:
//
// Forward, on rank c of the ring's n: the rank's key/value chunk is the
// first block; at step s it holds chunk (c - s) mod n. Before computing
// with the current block it starts the shift of that block to rank c + 1
// (receiving the next from c - 1), so that step s + 1's transfer overlaps
// step s's compute; each block's f32 result and log-sum-exp merge into the
// running ones. Under a causal mask over contiguous chunks a later rank's
// block is all masked: the kernels see it from the positions and add
// nothing.
//
// Backward: the forward's merged output and log-sum-exp are recomputed
// around the ring (the op saves nothing, like the single-rank kernel),
// delta = rowsum(dout * out); then the key/value chunks travel again, each
// with the f32 accumulators of its cotangents: at every step rank c adds
// its queries' share to the block it holds and shifts block and
// accumulators on. After n shifts the accumulators of chunk c are home.
//
// Without a ring one block holds every key: all-gather context parallelism
// (`query_offset_axes`: the queries are this rank's chunk, at positions
// c S..), or Ulysses over a sequence in zigzag order (every stored row).
//
//===----------------------------------------------------------------------===//

#include "BraidToDist.h"

#include "braid/Conversion/Passes.h"
#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::braid;

namespace braid::conversion {

bool isContextAttention(Operation *op) {
  if (auto a = dyn_cast<AttentionOp>(op))
    return a.getRingAxes() || a.getQueryOffsetAxes() || a.getSequenceZigzag();
  if (auto a = dyn_cast<AttentionGradOp>(op))
    return a.getRingAxes() || a.getQueryOffsetAxes() || a.getSequenceZigzag();
  return false;
}

namespace {

/// Builds the expansion of one attention or attention_grad op, at it.
struct BlockLowering {
  Operation *op;
  OpBuilder b;
  Location loc;
  Value q, k, v;
  UnitAttr causal;
  FloatAttr scale, theta;
  int64_t zigzag = 0;
  /// The ring's group, or the group whose chunk the queries are.
  std::optional<GridGroup> group;
  bool ring = false;
  FlatSymbolRefAttr grid;
  DenseI16ArrayAttr axes;
  Value coordinate;
  /// Ring step whose block the test hook leaves out, or -1.
  int64_t skipStep = -1;

  explicit BlockLowering(Operation *op)
      : op(op), b(op), loc(unnamed(op->getLoc())), q(op->getOperand(0)),
        k(op->getOperand(1)), v(op->getOperand(2)) {}

  ArrayRef<int64_t> shape(Value x) {
    return cast<RankedTensorType>(x.getType()).getShape();
  }
  RankedTensorType f32(ArrayRef<int64_t> s) {
    return RankedTensorType::get(s, b.getF32Type());
  }
  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  int64_t ranks() { return group ? group->size() : 1; }

  LogicalResult init(ArrayAttr ringAxes, ArrayAttr offsetAxes,
                     std::optional<int64_t> zigzagRanks, bool isCausal,
                     double scaleValue, FloatAttr ropeTheta) {
    causal = isCausal ? b.getUnitAttr() : UnitAttr();
    scale = b.getF64FloatAttr(scaleValue);
    theta = ropeTheta;
    zigzag = zigzagRanks.value_or(0);
    ring = bool(ringAxes);
    if (auto hook = op->getAttrOfType<IntegerAttr>(kTestSkipRingStepAttr))
      skipStep = hook.getInt();
    ArrayAttr names = ringAxes ? ringAxes : offsetAxes;
    if (names && failed(initGroup(names)))
      return failure();
    int64_t qGlobal = shape(q)[1] * ranks(), kGlobal = keyLength();
    if (zigzag && (qGlobal % (2 * zigzag) || kGlobal % (2 * zigzag)))
      return op->emitError("a sequence of ")
             << (qGlobal % (2 * zigzag) ? qGlobal : kGlobal)
             << " positions in zigzag order over " << zigzag
             << " ranks needs a multiple of " << 2 * zigzag;
    return success();
  }

  LogicalResult initGroup(ArrayAttr names) {
    FailureOr<GridGroup> g =
        getGridGroup(op, names, [&] { return op->emitError(); });
    if (failed(g))
      return failure();
    if (!g->inGridOrder())
      return op->emitError("context-parallel attention over grid axes ")
             << names << " must list them in grid order (the order of the "
                "communicator's ranks, around which the ring goes)";
    group = *g;
    DistGroup dist = getDistGroup(b, op, *g);
    grid = dist.grid;
    axes = dist.axes;
    coordinate = buildCoordinate(b, loc, op, *g);
    return success();
  }

  /// Positions of `count` stored rows from `start` of a `length`-row
  /// sequence.
  Value positions(Value start, int64_t count, int64_t length) {
    return SequencePositionsOp::create(
        b, loc, RankedTensorType::get({count}, b.getI64Type()), start,
        b.getI64IntegerAttr(length), b.getI64IntegerAttr(zigzag));
  }
  /// The start of the chunk `step` ring steps before this rank's:
  /// ((c + n - step) mod n) * rows.
  Value chunkStart(int64_t step, int64_t rows) {
    Value c = coordinate;
    if (step % ranks() != 0)
      c = arith::RemUIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, c, index(ranks() - step % ranks())),
          index(ranks()));
    return arith::MulIOp::create(b, loc, c, index(rows));
  }
  Value queryPositions() {
    int64_t rows = shape(q)[1];
    Value start = group ? chunkStart(0, rows) : index(0);
    return positions(start, rows, group ? rows * ranks() : rows);
  }
  int64_t keyLength() { return ring ? shape(k)[1] * ranks() : shape(k)[1]; }
  Value keyPositions(int64_t step) {
    int64_t rows = shape(k)[1];
    return positions(ring ? chunkStart(step, rows) : index(0), rows,
                     keyLength());
  }
  /// A shift of `x` one rank on around the ring.
  std::pair<Value, Value> shift(Value x) {
    auto s = dist::ShiftOp::create(b, loc, x.getType(),
                                   dist::TokenType::get(b.getContext()), x,
                                   grid, axes, b.getI64IntegerAttr(1),
                                   b.getUnitAttr());
    return {s.getResult(), s.getToken()};
  }
  std::pair<Value, Value> block(Value key, Value value, Value qPos, Value kPos) {
    auto qs = shape(q);
    auto a = AttentionBlockOp::create(
        b, loc, f32({qs[0], qs[1], qs[2], shape(v)[3]}),
        f32({qs[0], qs[1], qs[2]}), q, key, value, qPos, kPos, causal, scale,
        theta);
    return {a.getOut(), a.getLse()};
  }
  Value convert(Value x, Type to) {
    if (x.getType() == to)
      return x;
    return ConvertOp::create(b, loc, to, x);
  }
  Value zeros(ArrayRef<int64_t> s) {
    return FillOp::create(b, loc, f32(s), b.getF64FloatAttr(0.0));
  }

  /// The forward: the merged f32 output and log-sum-exp of every query row.
  LogicalResult forward(Value qPos, Value &out, Value &lse) {
    if (!ring) {
      std::tie(out, lse) = block(k, v, qPos, keyPositions(0));
      return success();
    }
    Value key = k, value = v;
    for (int64_t step = 0, n = ranks(); step < n; ++step) {
      bool more = step + 1 < n;
      Value nextK, nextV, tk, tv;
      if (more) {
        std::tie(nextK, tk) = shift(key);
        std::tie(nextV, tv) = shift(value);
      }
      if (step != skipStep) {
        auto [o, l] = block(key, value, qPos, keyPositions(step));
        if (!out) {
          out = o;
          lse = l;
        } else {
          auto m = AttentionMergeOp::create(b, loc, out.getType(),
                                            lse.getType(), out, lse, o, l);
          out = m.getMergedOut();
          lse = m.getMergedLse();
        }
      }
      if (more) {
        dist::WaitOp::create(b, loc, ValueRange{tk, tv});
        key = nextK;
        value = nextV;
      }
    }
    if (!out)
      return op->emitError("the ring leaves out every block");
    return success();
  }

  LogicalResult lowerForward(AttentionOp a) {
    if (failed(init(a.getRingAxesAttr(), a.getQueryOffsetAxesAttr(),
                    a.getSequenceZigzag(), a.getCausal(),
                    a.getScaleOrDefault(), a.getRopeThetaAttr())))
      return failure();
    Value out, lse;
    if (failed(forward(queryPositions(), out, lse)))
      return failure();
    Value result = convert(out, a.getResult().getType());
    result.getDefiningOp()->setLoc(a->getLoc());
    a.getResult().replaceAllUsesWith(result);
    a->erase();
    return success();
  }

  LogicalResult lowerBackward(AttentionGradOp a) {
    if (failed(init(a.getRingAxesAttr(), a.getQueryOffsetAxesAttr(),
                    a.getSequenceZigzag(), a.getCausal(),
                    a.getScaleOrDefault(), a.getRopeThetaAttr())))
      return failure();
    Value qPos = queryPositions(), out, lse;
    if (failed(forward(qPos, out, lse)))
      return failure();
    Value grad = a.getGrad();
    Value delta = AttentionDeltaOp::create(b, loc, lse.getType(), grad, out);
    Value dq = zeros(shape(q)), dk = zeros(shape(k)), dv = zeros(shape(v));
    auto accumulate = [&](Value key, Value value, int64_t step) {
      auto g = AttentionBlockGradOp::create(
          b, loc, dq.getType(), dk.getType(), dv.getType(), q, key, value, grad,
          qPos, keyPositions(step), lse, delta, dq, dk, dv, causal, scale,
          theta);
      dq = g.getDquery();
      dk = g.getDkey();
      dv = g.getDvalue();
    };
    if (!ring) {
      accumulate(k, v, 0);
    } else {
      Value key = k, value = v;
      for (int64_t step = 0, n = ranks(); step < n; ++step) {
        bool more = step + 1 < n;
        Value nextK, nextV, tk, tv, tdk, tdv;
        if (more) {
          std::tie(nextK, tk) = shift(key);
          std::tie(nextV, tv) = shift(value);
        }
        if (step != skipStep)
          accumulate(key, value, step);
        // The cotangents travel with their block once this rank has added
        // to them; the last shift takes them home.
        std::tie(dk, tdk) = shift(dk);
        std::tie(dv, tdv) = shift(dv);
        SmallVector<Value> tokens = {tdk, tdv};
        if (more)
          tokens.append({tk, tv});
        dist::WaitOp::create(b, loc, tokens);
        key = nextK;
        value = nextV;
      }
    }
    // The results keep the op's location (its name, which dumps use).
    SmallVector<Value> results = {convert(dq, a.getDquery().getType()),
                                  convert(dk, a.getDkey().getType()),
                                  convert(dv, a.getDvalue().getType())};
    for (auto [old, now] : llvm::zip_equal(a->getResults(), results))
      old.replaceAllUsesWith(now);
    a->erase();
    return success();
  }
};

} // namespace

LogicalResult lowerContextAttention(Operation *op) {
  BlockLowering l(op);
  if (auto a = dyn_cast<AttentionOp>(op))
    return l.lowerForward(a);
  return l.lowerBackward(cast<AttentionGradOp>(op));
}

} // namespace braid::conversion
