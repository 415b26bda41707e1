//===- VJPRules.cpp - vector-Jacobian products of ops ---------------------===//
//
// The dispatch through DifferentiableOpInterface, and the VJPs of the
// upstream `shard` collectives under the SPMD convention that the per-rank
// objectives sum to the loss: each rank's cotangent of a value is its share
// of the whole cotangent. The transpose of a sum over ranks is then a sum
// over ranks, of a gather a reduce-scatter and back, of an all-to-all the
// inverse all-to-all, and of a slice placing the slice into zeros.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/VJPRules.h"

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/Grid.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::braid;

bool mlir::braid::isDifferentiable(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

FailureOr<SmallVector<Value>>
mlir::braid::emitVJP(OpBuilder &b, Location loc, Operation *op,
                     ArrayRef<Value> resultCotangents) {
  if (auto differentiable = dyn_cast<DifferentiableOpInterface>(op))
    return differentiable.emitVJP(b, loc, resultCotangents);
  return op->emitError("no vector-Jacobian product for '")
         << op->getName() << "'";
}

namespace {
template <typename Model, typename Op>
using VJPModel = DifferentiableOpInterface::ExternalModel<Model, Op>;

struct AllReduceVJP : VJPModel<AllReduceVJP, shard::AllReduceOp> {
  FailureOr<SmallVector<Value>> emitVJP(Operation *op, OpBuilder &b,
                                        Location loc,
                                        ArrayRef<Value> cotangents) const {
    auto r = cast<shard::AllReduceOp>(op);
    if (r.getReduction() != shard::ReductionKind::Sum)
      return r.emitError("no vector-Jacobian product for an all-reduce "
                         "other than a sum");
    Value dy = cotangents[0];
    return SmallVector<Value>{shard::AllReduceOp::create(
        b, loc, dy.getType(), r.getGrid(), r.getGridAxes(), dy)};
  }
};

struct AllGatherVJP : VJPModel<AllGatherVJP, shard::AllGatherOp> {
  FailureOr<SmallVector<Value>> emitVJP(Operation *op, OpBuilder &b,
                                        Location loc,
                                        ArrayRef<Value> cotangents) const {
    auto g = cast<shard::AllGatherOp>(op);
    return SmallVector<Value>{shard::ReduceScatterOp::create(
        b, loc, g.getInput().getType(), g.getGridAttr(), g.getGridAxesAttr(),
        cotangents[0],
        shard::ReductionKindAttr::get(b.getContext(),
                                      shard::ReductionKind::Sum),
        g.getGatherAxisAttr())};
  }
};

struct ReduceScatterVJP : VJPModel<ReduceScatterVJP, shard::ReduceScatterOp> {
  FailureOr<SmallVector<Value>> emitVJP(Operation *op, OpBuilder &b,
                                        Location loc,
                                        ArrayRef<Value> cotangents) const {
    auto r = cast<shard::ReduceScatterOp>(op);
    return SmallVector<Value>{shard::AllGatherOp::create(
        b, loc, r.getInput().getType(), r.getGridAttr(), r.getGridAxesAttr(),
        cotangents[0], r.getScatterAxisAttr())};
  }
};

struct AllToAllVJP : VJPModel<AllToAllVJP, shard::AllToAllOp> {
  FailureOr<SmallVector<Value>> emitVJP(Operation *op, OpBuilder &b,
                                        Location loc,
                                        ArrayRef<Value> cotangents) const {
    auto a = cast<shard::AllToAllOp>(op);
    return SmallVector<Value>{shard::AllToAllOp::create(
        b, loc, a.getInput().getType(), a.getGridAttr(), a.getGridAxesAttr(),
        cotangents[0], a.getConcatAxisAttr(), a.getSplitAxisAttr())};
  }
};

struct AllSliceVJP : VJPModel<AllSliceVJP, shard::AllSliceOp> {
  FailureOr<SmallVector<Value>> emitVJP(Operation *op, OpBuilder &b,
                                        Location loc,
                                        ArrayRef<Value> cotangents) const {
    auto s = cast<shard::AllSliceOp>(op);
    FailureOr<Grid> grid = Grid::required(op);
    if (failed(grid))
      return failure();
    return SmallVector<Value>{UnsliceOp::create(
        b, loc, s.getInput().getType(), cotangents[0],
        grid->nameAttr(b.getContext(), s.getGridAxes()),
        s.getSliceAxisAttr().getInt(), /*replicas=*/1)};
  }
};
} // namespace

void mlir::braid::registerCollectiveVJPExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, shard::ShardDialect *) {
    shard::AllReduceOp::attachInterface<AllReduceVJP>(*context);
    shard::AllGatherOp::attachInterface<AllGatherVJP>(*context);
    shard::ReduceScatterOp::attachInterface<ReduceScatterVJP>(*context);
    shard::AllToAllOp::attachInterface<AllToAllVJP>(*context);
    shard::AllSliceOp::attachInterface<AllSliceVJP>(*context);
  });
}
