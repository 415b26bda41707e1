//===- SequenceChunks.cpp - context-parallel Mamba to chunk ops ------------===//
//
// A Mamba mixer over a sequence split into chunks (`context_axes`, one
// chunk per rank in the group's order) becomes the chunk ops of
// BraidSequenceChunkOps.td and its transfers:
//
// - The causal convolution takes a halo: the chunk's last K-1 rows shift
//   to the next rank (dist.shift, open ends: the first rank gets zeros);
//   its gradient shifts the halo's cotangent back (the last rank gets
//   zeros) and adds it into the chunk's last rows.
// - The selective scan starts from the state the previous chunks leave:
//   every chunk's zero-start final state and decay are all-gathered and
//   composed (braid.scan_carry) into the state entering this chunk, from
//   which the chunk is scanned again. The gradient runs the chunk's own
//   backward from that state, all-gathers the entering states' cotangents,
//   carries them back to this chunk's final state and decay, and adds what
//   flows through the zero-start pass.
//
//===----------------------------------------------------------------------===//

#include "BraidToDist.h"

#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::braid;

namespace braid::conversion {

bool isSequenceChunked(Operation *op) {
  return isa<Conv1dOp, Conv1dGradOp, SelectiveScanOp, SelectiveScanGradOp>(
             op) &&
         op->hasAttr("context_axes");
}

namespace {

struct ChunkLowering {
  Operation *op;
  OpBuilder b;
  Location loc;
  FlatSymbolRefAttr grid;
  DenseI16ArrayAttr axes;
  std::optional<GridGroup> group;
  int64_t ranks = 1;

  explicit ChunkLowering(Operation *op)
      : op(op), b(op), loc(unnamed(op->getLoc())) {}

  LogicalResult init() {
    FailureOr<GridGroup> group = getChunkGroup(op, "context_axes");
    if (failed(group))
      return failure();
    this->group = *group;
    ranks = group->size();
    DistGroup dist = getDistGroup(b, op, *group);
    grid = dist.grid;
    axes = dist.axes;
    return success();
  }
  Type token() { return dist::TokenType::get(b.getContext()); }
  /// `x` from the previous rank (offset 1) or the next (-1); zeros past the
  /// ends.
  Value shift(Value x, int64_t offset) {
    auto s = dist::ShiftOp::create(b, loc, x.getType(), token(), x, grid, axes,
                                   b.getI64IntegerAttr(offset), UnitAttr());
    dist::WaitOp::create(b, loc, ValueRange{s.getToken()});
    return s.getResult();
  }
  /// The halo of the chunk `x` for a convolution of `kernel` taps.
  Value halo(Value x, int64_t kernel) {
    auto type = cast<RankedTensorType>(x.getType());
    auto tail = TailOp::create(
        b, loc,
        type.clone(ArrayRef<int64_t>{type.getDimSize(0), kernel - 1,
                                     type.getDimSize(2)}),
        x);
    return shift(tail, 1);
  }
  /// Every chunk's `states` ([B, Di, N] each), gathered along dimension 0.
  SmallVector<Value> gather(ArrayRef<Value> states) {
    SmallVector<Value> all, tokens;
    for (Value s : states) {
      auto type = cast<RankedTensorType>(s.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[0] *= ranks;
      auto g = dist::AllGatherOp::create(b, loc, type.clone(shape), token(), s,
                                         grid, axes, b.getI64IntegerAttr(0));
      all.push_back(g.getResult());
      tokens.push_back(g.getToken());
    }
    dist::WaitOp::create(b, loc, tokens);
    return all;
  }
  Value coordinate() { return buildCoordinate(b, loc, op, *group); }
  void replace(ValueRange results) {
    for (auto [old, now] : llvm::zip_equal(op->getResults(), results))
      old.replaceAllUsesWith(now);
    op->erase();
  }

  LogicalResult lower(Conv1dOp c) {
    int64_t kernel = cast<RankedTensorType>(c.getWeight().getType()).getDimSize(1);
    Value y;
    if (kernel == 1) // no row depends on another chunk's
      y = Conv1dOp::create(b, loc, c.getType(), c.getInput(), c.getWeight(),
                           c.getBias(), ArrayAttr());
    else
      y = Conv1dHaloOp::create(b, loc, c.getType(), c.getInput(),
                               halo(c.getInput(), kernel), c.getWeight(),
                               c.getBias());
    y.getDefiningOp()->setLoc(c->getLoc());
    replace(y);
    return success();
  }

  LogicalResult lower(Conv1dGradOp c) {
    int64_t kernel = cast<RankedTensorType>(c.getWeight().getType()).getDimSize(1);
    if (kernel == 1) {
      auto g = Conv1dGradOp::create(b, loc, c->getResultTypes(), c.getInput(),
                                    c.getWeight(), c.getGrad(), ArrayAttr());
      replace(g->getResults());
      return success();
    }
    Value h = halo(c.getInput(), kernel);
    auto g = Conv1dHaloGradOp::create(
        b, loc, c.getDinput().getType(), c.getDweight().getType(),
        c.getDbias().getType(), h.getType(), c.getInput(), h, c.getWeight(),
        c.getGrad());
    // The next chunk's cotangent of this chunk's last rows comes back.
    Value next = shift(g.getDhalo(), -1);
    Value dx = AddTailOp::create(b, loc, g.getDinput(), next);
    replace({dx, g.getDweight(), g.getDbias()});
    return success();
  }

  /// The state entering this chunk, and every chunk's decay and final
  /// state from a zero start.
  struct Carry {
    Value h0, decayAll, hendAll, chunk;
  };
  template <typename Scan> Carry carry(Scan s) {
    ValueRange scan = s->getOperands().take_front(6);
    auto stateType = RankedTensorType::get(
        {shapeOf(scan[0])[0], shapeOf(scan[0])[2], shapeOf(scan[2])[1]},
        b.getF32Type());
    auto state = ScanChunkStateOp::create(
        b, loc, TypeRange{stateType, stateType}, scan, softplus(s));
    SmallVector<Value> all = gather({state.getHend(), state.getDecay()});
    Carry c;
    c.hendAll = all[0];
    c.decayAll = all[1];
    c.chunk = coordinate();
    c.h0 = ScanCarryOp::create(b, loc, stateType, c.decayAll, c.hendAll,
                               c.chunk);
    return c;
  }
  /// The scan's `delta_softplus`, for the chunk ops that take it.
  SmallVector<NamedAttribute> softplus(Operation *scan) {
    SmallVector<NamedAttribute> attrs;
    if (scan->hasAttr("delta_softplus"))
      attrs.push_back(b.getNamedAttr("delta_softplus", b.getUnitAttr()));
    return attrs;
  }
  static ArrayRef<int64_t> shapeOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }

  LogicalResult lower(SelectiveScanOp s) {
    Carry c = carry(s);
    SmallVector<Value> operands(s->getOperands().take_front(6));
    operands.push_back(c.h0);
    auto y = ScanChunkOp::create(b, loc, TypeRange{s.getType()}, operands,
                                 softplus(s));
    y->setLoc(s->getLoc());
    replace(y.getResult());
    return success();
  }

  LogicalResult lower(SelectiveScanGradOp s) {
    Carry c = carry(s);
    ValueRange scan = s->getOperands().take_front(6);
    SmallVector<Type> types(s->getResultTypes());
    types.push_back(c.h0.getType());
    SmallVector<Value> operands(scan);
    operands.append({c.h0, s.getGrad()});
    auto own = ScanChunkGradOp::create(b, loc, types, operands, softplus(s));
    Value dh0All = gather({own.getDh0()})[0];
    auto back = ScanCarryGradOp::create(b, loc, c.h0.getType(), c.h0.getType(),
                                        c.decayAll, c.hendAll, dh0All, c.chunk);
    SmallVector<Value> state(scan);
    state.append({back.getDhend(), back.getDdecay()});
    for (Value d : own.getResults().take_front(6))
      state.push_back(d);
    auto total = ScanChunkStateGradOp::create(b, loc, s->getResultTypes(),
                                              state, softplus(s));
    replace(total->getResults());
    return success();
  }
};

} // namespace

LogicalResult lowerSequenceChunked(Operation *op) {
  ChunkLowering l(op);
  if (failed(l.init()))
    return failure();
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<Conv1dOp, Conv1dGradOp, SelectiveScanOp, SelectiveScanGradOp>(
          [&](auto o) { return l.lower(o); })
      .Default([](Operation *o) {
        return o->emitError("not a context-parallel Mamba op");
      });
}

} // namespace braid::conversion
