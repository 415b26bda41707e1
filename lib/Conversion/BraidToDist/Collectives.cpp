//===- Collectives.cpp - shard collectives to dist transfers ---------------===//
//
// A shard collective over grid axes becomes the dist transfer of the same
// kind over those axes in grid order, and its dist.wait right after it. The
// runtime's collectives move one contiguous block per rank in communicator
// order; where the partitioner's blocks lie otherwise (getBlockRelayout: a
// split dimension that is not the outermost one of size above one, or the
// group's axes listed out of grid order) the tensor is brought to blocks
// [group ranks, block elements] by braid.reshape and braid.transpose before
// the transfer, and back after it.
//
//===----------------------------------------------------------------------===//

#include "BraidToDist.h"

#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using mlir::braid::BlockRelayout;
using mlir::braid::getBlockRelayout;
using mlir::braid::getGridGroup;
using mlir::braid::GridGroup;

namespace braid::conversion {

bool isShardTransfer(Operation *op) {
  return isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
             shard::AllToAllOp>(op);
}

namespace {

/// Builds the expansion of one collective, at the collective.
struct Lowering {
  Operation *op;
  OpBuilder b;
  Location loc;
  Type token;

  /// The collective's own location (its name, which dumps use) goes to the
  /// op that produces its replacement (`finish`); the ops before it get the
  /// location without the name.
  explicit Lowering(Operation *op)
      : op(op), b(op), loc(unnamed(op->getLoc())),
        token(dist::TokenType::get(op->getContext())) {}

  /// Replaces the collective by `result`, naming its producer as the
  /// collective was.
  void finish(Value result) { replaceLowered(op, result); }

  RankedTensorType like(Value v, ArrayRef<int64_t> shape) {
    return cast<RankedTensorType>(v.getType()).clone(shape);
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    if (cast<RankedTensorType>(v.getType()).getShape() == shape)
      return v;
    return mlir::braid::ReshapeOp::create(b, loc, like(v, shape), v);
  }
  /// `v` viewed as `t.shape`, permuted by `t.perm`.
  Value transpose(Value v, const mlir::braid::Transpose &t) {
    Value view = reshape(v, t.shape);
    SmallVector<int64_t> shape;
    for (int64_t p : t.perm)
      shape.push_back(t.shape[p]);
    return mlir::braid::TransposeOp::create(b, loc, like(v, shape), view,
                                      b.getDenseI64ArrayAttr(t.perm));
  }
  /// The tensor as one row per rank of `group`: [ranks, elements / ranks].
  Value asBlocks(Value v, int64_t ranks) {
    int64_t n = cast<RankedTensorType>(v.getType()).getNumElements();
    return reshape(v, {ranks, n / ranks});
  }
  void wait(Value t) { dist::WaitOp::create(b, loc, ValueRange{t}); }
  /// The collective's group axes in grid order, as dist states groups.
  DenseI16ArrayAttr axes(ArrayRef<int16_t> gridAxes) {
    SmallVector<int16_t> sorted(gridAxes);
    llvm::sort(sorted);
    return b.getDenseI16ArrayAttr(sorted);
  }
};

/// The dist reduction of a shard collective's.
FailureOr<dist::ReductionKindAttr> reductionOf(Operation *op,
                                               shard::ReductionKind kind) {
  auto attr = [&](dist::ReductionKind k) {
    return dist::ReductionKindAttr::get(op->getContext(), k);
  };
  switch (kind) {
  case shard::ReductionKind::Sum:
    return attr(dist::ReductionKind::Sum);
  case shard::ReductionKind::Max:
    return attr(dist::ReductionKind::Max);
  case shard::ReductionKind::Min:
    return attr(dist::ReductionKind::Min);
  default:
    return op->emitError("dist reduces by sum, max or min, not ")
           << shard::stringifyReductionKind(kind);
  }
}

/// The collective's group, checked for the dist lowering: the op's grid, and
/// an element type the transfer keeps.
template <typename Op> FailureOr<GridGroup> groupOf(Op c) {
  if (getElementTypeOrSelf(c.getInput().getType()) !=
      getElementTypeOrSelf(c.getResult().getType()))
    return c.emitError("a transfer keeps the element type; ")
           << c.getInput().getType() << " -> " << c.getResult().getType();
  return getGridGroup(c, c.getGridAttr(), c.getGridAxes(),
                      [&] { return c.emitError(); });
}

LogicalResult lowerAllReduce(shard::AllReduceOp r) {
  FailureOr<GridGroup> group = groupOf(r);
  FailureOr<dist::ReductionKindAttr> kind = reductionOf(r, r.getReduction());
  if (failed(group) || failed(kind))
    return failure();
  Lowering l(r);
  auto t = dist::AllReduceOp::create(
      l.b, l.loc, r.getResult().getType(), l.token, r.getInput(),
      r.getGridAttr(), l.axes(r.getGridAxes()),
      *kind);
  l.wait(t.getToken());
  l.finish(t.getResult());
  return success();
}

LogicalResult lowerAllGather(shard::AllGatherOp g) {
  FailureOr<GridGroup> group = groupOf(g);
  if (failed(group))
    return failure();
  Lowering l(g);
  auto axes = l.axes(g.getGridAxes());
  auto resultType = cast<RankedTensorType>(g.getResult().getType());
  int64_t dim = g.getGatherAxis().getSExtValue(), ranks = group->size();
  std::optional<BlockRelayout> relayout =
      getBlockRelayout(resultType.getShape(), dim, *group);
  Value result;
  if (!relayout) {
    auto t = dist::AllGatherOp::create(l.b, l.loc, resultType, l.token,
                                       g.getInput(), g.getGridAttr(), axes,
                                       l.b.getI64IntegerAttr(dim));
    l.wait(t.getToken());
    result = t.getResult();
  } else {
    // Whole blocks, one per rank in communicator order, then the blocks'
    // elements into the partitioner's layout.
    Value row = l.asBlocks(g.getInput(), 1);
    int64_t n = cast<RankedTensorType>(row.getType()).getDimSize(1);
    auto t = dist::AllGatherOp::create(l.b, l.loc, l.like(row, {ranks, n}),
                                       l.token, row, g.getGridAttr(), axes,
                                       l.b.getI64IntegerAttr(0));
    l.wait(t.getToken());
    result = l.reshape(l.transpose(t.getResult(), relayout->fromBlocks),
                       resultType.getShape());
  }
  l.finish(result);
  return success();
}

LogicalResult lowerReduceScatter(shard::ReduceScatterOp r) {
  FailureOr<GridGroup> group = groupOf(r);
  FailureOr<dist::ReductionKindAttr> kind = reductionOf(r, r.getReduction());
  if (failed(group) || failed(kind))
    return failure();
  Lowering l(r);
  auto axes = l.axes(r.getGridAxes());
  auto inputType = cast<RankedTensorType>(r.getInput().getType());
  auto resultType = cast<RankedTensorType>(r.getResult().getType());
  int64_t dim = r.getScatterAxis().getSExtValue(), ranks = group->size();
  std::optional<BlockRelayout> relayout =
      getBlockRelayout(inputType.getShape(), dim, *group);
  Value result;
  if (!relayout) {
    auto t = dist::ReduceScatterOp::create(
        l.b, l.loc, resultType, l.token, r.getInput(), r.getGridAttr(), axes,
        *kind,
        l.b.getI64IntegerAttr(dim));
    l.wait(t.getToken());
    result = t.getResult();
  } else {
    Value blocks =
        l.asBlocks(l.transpose(r.getInput(), relayout->toBlocks), ranks);
    int64_t n = cast<RankedTensorType>(blocks.getType()).getDimSize(1);
    auto t = dist::ReduceScatterOp::create(
        l.b, l.loc, l.like(blocks, {1, n}), l.token, blocks, r.getGridAttr(),
        axes, *kind,
        l.b.getI64IntegerAttr(0));
    l.wait(t.getToken());
    result = l.reshape(t.getResult(), resultType.getShape());
  }
  l.finish(result);
  return success();
}

LogicalResult lowerAllToAll(shard::AllToAllOp a) {
  FailureOr<GridGroup> group = groupOf(a);
  if (failed(group))
    return failure();
  Lowering l(a);
  auto axes = l.axes(a.getGridAxes());
  auto inputType = cast<RankedTensorType>(a.getInput().getType());
  auto resultType = cast<RankedTensorType>(a.getResult().getType());
  int64_t split = a.getSplitAxis().getSExtValue();
  int64_t concat = a.getConcatAxis().getSExtValue(), ranks = group->size();
  std::optional<BlockRelayout> sendRelayout =
      getBlockRelayout(inputType.getShape(), split, *group);
  std::optional<BlockRelayout> recvRelayout =
      getBlockRelayout(resultType.getShape(), concat, *group);
  Value result;
  if (!sendRelayout && !recvRelayout) {
    auto t = dist::AllToAllOp::create(
        l.b, l.loc, resultType, l.token, a.getInput(), a.getGridAttr(), axes,
        l.b.getI64IntegerAttr(split), l.b.getI64IntegerAttr(concat));
    l.wait(t.getToken());
    result = t.getResult();
  } else {
    // Rows of the blocks sent to each rank; rows of the blocks received
    // from each, which the receive side lays out as the result.
    Value send = sendRelayout ? l.transpose(a.getInput(), sendRelayout->toBlocks)
                              : a.getInput();
    Value blocks = l.asBlocks(send, ranks);
    auto t = dist::AllToAllOp::create(
        l.b, l.loc, blocks.getType(), l.token, blocks, a.getGridAttr(), axes,
        l.b.getI64IntegerAttr(0), l.b.getI64IntegerAttr(0));
    l.wait(t.getToken());
    Value received = t.getResult();
    if (recvRelayout)
      received = l.transpose(received, recvRelayout->fromBlocks);
    result = l.reshape(received, resultType.getShape());
  }
  l.finish(result);
  return success();
}

} // namespace

LogicalResult lowerShardCollective(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([](shard::AllReduceOp r) { return lowerAllReduce(r); })
      .Case([](shard::AllGatherOp g) { return lowerAllGather(g); })
      .Case([](shard::ReduceScatterOp r) { return lowerReduceScatter(r); })
      .Case([](shard::AllToAllOp a) { return lowerAllToAll(a); })
      .Default([](Operation *op) {
        return op->emitError("not a shard collective the dist lowering knows");
      });
}

} // namespace braid::conversion
