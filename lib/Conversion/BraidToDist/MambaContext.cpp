//===- MambaContext.cpp - a prefill's Mamba steps over cp chunks ----------===//
//
// A prefill's braid.conv_step or braid.scan_step whose prompt rows context
// parallelism splits (`context_axes`: rank c of the group's n holds rows
// [c S, (c+1) S) of every prompt of n S rows) becomes the chunk ops of
// BraidMambaContextOps.td and their transfers, training's carry
// (SequenceChunks.cpp) with the per-sequence states of inference:
//
// - The convolution takes a halo: the chunk's last K-1 inputs shift to the
//   next rank (dist.shift, open ends); the first rank starts from the
//   carried conv state (or zeros at position 0).
// - The scan starts from the state the previous chunks leave: every chunk's
//   zero-start final state and decay (braid.scan_chunk_state) are
//   all-gathered, and braid.scan_step_chunk composes them from the carried
//   state before scanning the chunk.
// - Each sequence's new state is taken on the rank holding its last row:
//   every rank's candidates are all-gathered and braid.take_chunk_state
//   copies each sequence's from its chunk into the state, in place, so every
//   cp rank holds the whole state for decode.
//
//===----------------------------------------------------------------------===//

#include "BraidToDist.h"

#include "braid/Conversion/Passes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::braid;

namespace braid::conversion {

bool isMambaContext(Operation *op) {
  return isa<ConvStepOp, ScanStepOp>(op) && op->hasAttr("context_axes");
}

namespace {

struct StepLowering {
  Operation *op;
  OpBuilder b;
  Location loc;
  std::optional<GridGroup> group;
  DistGroup dist;
  /// The chunk's rows, the prompt's and the chunk's first row (c S).
  int64_t rows = 0, promptLen = 0;
  Value firstRow;

  explicit StepLowering(Operation *op)
      : op(op), b(op), loc(unnamed(op->getLoc())) {}

  LogicalResult init(Value input, Value lastRows) {
    FailureOr<GridGroup> g = getChunkGroup(op, "context_axes");
    if (failed(g))
      return failure();
    if (!lastRows)
      return op->emitError("a Mamba step over a prompt split by cp needs "
                           "each sequence's last row (a prefill's last_rows)");
    group = *g;
    dist = getDistGroup(b, op, *group);
    rows = cast<RankedTensorType>(input.getType()).getDimSize(1);
    promptLen = rows * group->size();
    Value c = buildCoordinate(b, loc, op, *group);
    firstRow = arith::MulIOp::create(
        b, loc, c, arith::ConstantIndexOp::create(b, loc, rows));
    return success();
  }

  Type token() { return dist::TokenType::get(b.getContext()); }

  /// Every rank's `values`, each stacked along dimension 0 in group order.
  SmallVector<Value> gather(ArrayRef<Value> values) {
    SmallVector<Value> all, tokens;
    for (Value v : values) {
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[0] *= group->size();
      auto g = dist::AllGatherOp::create(b, loc, type.clone(shape), token(), v,
                                         dist.grid, dist.axes,
                                         b.getI64IntegerAttr(0));
      all.push_back(g.getResult());
      tokens.push_back(g.getToken());
    }
    dist::WaitOp::create(b, loc, tokens);
    return all;
  }

  /// The K-1 inputs before this rank's chunk: the previous rank's last rows
  /// (zeros on the first rank, which starts from the carried state).
  Value halo(Value x, int64_t kernel) {
    auto type = cast<RankedTensorType>(x.getType());
    auto tail = TailOp::create(
        b, loc,
        type.clone(ArrayRef<int64_t>{type.getDimSize(0), kernel - 1,
                                     type.getDimSize(2)}),
        x);
    auto s = dist::ShiftOp::create(b, loc, tail.getType(), token(), tail,
                                   dist.grid, dist.axes, b.getI64IntegerAttr(1),
                                   UnitAttr());
    dist::WaitOp::create(b, loc, ValueRange{s.getToken()});
    return s.getResult();
  }

  /// The state, written in place with each sequence's candidate from the
  /// chunk holding its last row; `y` and it replace the step's results.
  void finish(Value state, Value candidate, Value lastRows, Value y) {
    Value all = gather({candidate})[0];
    auto take = TakeChunkStateOp::create(b, loc, state.getType(), state, all,
                                         lastRows, b.getI64IntegerAttr(rows));
    op->getResult(1).replaceAllUsesWith(take.getNewState());
    y.getDefiningOp()->setLoc(op->getLoc());
    op->getResult(0).replaceAllUsesWith(y);
    op->erase();
  }

  LogicalResult lower(ConvStepOp c) {
    if (failed(init(c.getInput(), c.getLastRows())))
      return failure();
    int64_t kernel = c.getWeight().getType().getDimSize(1);
    if (kernel - 1 > rows)
      return c.emitError("a chunk of ")
             << rows << " prompt rows is shorter than the convolution's halo ("
             << kernel - 1 << " rows)";
    // No tap reaches before the chunk without a halo row to send.
    Value h = kernel > 1 ? halo(c.getInput(), kernel) : c.getState();
    auto chunk = ConvStepChunkOp::create(
        b, loc, c.getInput().getType(), c.getState().getType(), c.getState(),
        h, c.getInput(), c.getWeight(), c.getBias(), c.getPositions(),
        c.getLastRows(), firstRow, b.getI64IntegerAttr(promptLen));
    finish(c.getState(), chunk.getChunkState(), c.getLastRows(),
           chunk.getResult());
    return success();
  }

  LogicalResult lower(ScanStepOp s) {
    if (failed(init(s.getInput(), s.getLastRows())))
      return failure();
    SmallVector<NamedAttribute> softplus;
    if (s.getDeltaSoftplus())
      softplus.push_back(b.getNamedAttr("delta_softplus", b.getUnitAttr()));
    SmallVector<Value> scan = {s.getInput(), s.getDelta(), s.getA(),
                               s.getB(),     s.getC(),     s.getD()};
    Type stateType = s.getState().getType();
    auto own = ScanChunkStateOp::create(
        b, loc, TypeRange{stateType, stateType}, scan, softplus);
    SmallVector<Value> all = gather({own.getDecay(), own.getHend()});
    // The test hook of --braid-test-inject-fault=kind=drop-cp-prefill-carry:
    // every chunk starts from the carried state as if it were the first.
    if (s->hasAttr(kTestDropCpPrefillCarryAttr))
      for (Value &v : all)
        v = FillOp::create(b, loc, v.getType(), b.getF64FloatAttr(0.0));
    auto chunk = ScanStepChunkOp::create(
        b, loc, s.getInput().getType(), stateType, s.getState(), all[0],
        all[1], s.getInput(), s.getDelta(), s.getA(), s.getB(), s.getC(),
        s.getD(), s.getPositions(), s.getLastRows(), firstRow,
        b.getI64IntegerAttr(promptLen), s.getDeltaSoftplusAttr());
    finish(s.getState(), chunk.getChunkState(), s.getLastRows(),
           chunk.getResult());
    return success();
  }
};

} // namespace

LogicalResult lowerMambaContext(Operation *op) {
  // The chunk ops read and write the states by sequence; a serving prefill's
  // states in slots would need the candidates scattered to their slots.
  Value slots = isa<ConvStepOp>(op) ? cast<ConvStepOp>(op).getSlots()
                                    : cast<ScanStepOp>(op).getSlots();
  if (slots)
    return op->emitError("a Mamba state in slots is not split over cp (the "
                         "prompt rows of a step with `slots` must stay whole)");
  StepLowering l(op);
  if (auto c = dyn_cast<ConvStepOp>(op))
    return l.lower(c);
  return l.lower(cast<ScanStepOp>(op));
}

} // namespace braid::conversion
