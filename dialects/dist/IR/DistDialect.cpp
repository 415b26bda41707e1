//===- DistDialect.cpp - the dist dialect: registration and verifiers -----===//

#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::dist;

#include "dialects/dist/IR/DistDialect.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/dist/IR/DistOps.cpp.inc"
      >();
}

/// The peer must be a coordinate of the axes group of an existing grid.
static LogicalResult verifyPeer(Operation *op, FlatSymbolRefAttr gridName,
                                ArrayRef<int16_t> axes, int64_t peer) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridName);
  if (!grid)
    return op->emitOpError("refers to no shard.grid named ") << gridName;
  ArrayRef<int64_t> shape = grid.getShape();
  if (axes.empty())
    return op->emitOpError("needs at least one grid axis");
  int64_t ranks = 1;
  for (int16_t axis : axes) {
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
      return op->emitOpError("grid axis ")
             << axis << " is not an axis of " << gridName << " (rank "
             << shape.size() << ")";
    ranks *= shape[axis];
  }
  if (peer < 0 || peer >= ranks)
    return op->emitOpError("peer ")
           << peer << " is not a coordinate of the " << ranks
           << " ranks along the grid axes";
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPeer(*this, getGridAttr(), getGridAxes(), getPeer());
}

LogicalResult RecvOp::verify() {
  return verifyPeer(*this, getGridAttr(), getGridAxes(), getPeer());
}

LogicalResult MicrobatchOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  int64_t count = getCount(), index = getIndex();
  if (count < 1)
    return emitOpError("count must be at least 1, found ") << count;
  if (index < 0 || index >= count)
    return emitOpError("index ") << index << " is not one of the " << count
                                 << " micro-batches";
  if (input.getRank() < 1 || input.isDynamicDim(0) ||
      input.getDimSize(0) % count != 0)
    return emitOpError("the leading dimension of ")
           << input << " must be a multiple of " << count;
  SmallVector<int64_t> shape(input.getShape());
  shape[0] /= count;
  if (result.getShape() != ArrayRef<int64_t>(shape) ||
      result.getElementType() != input.getElementType())
    return emitOpError("result must be ")
           << input.clone(shape) << ", found " << result;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/dist/IR/DistOps.cpp.inc"
