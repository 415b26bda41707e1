//===- ZeroUpdate.cpp - ZeRO-sharded optimizer updates ---------------------===//
//
// An optimizer update sharded over `zero_axes` (ZeRO-1 and 2) becomes the
// update of this rank's range of the flat parameter and the all-gather that
// reassembles it:
//
//   %c = dist.coordinate ...          the rank's place in the group
//   braid.adamw_update @p at %off ... {range = R}   elements [c R, (c+1) R)
//   %part = braid.get_param_range @p at %off
//   %whole, %t = dist.all_gather %part ...
//   dist.wait %t
//   braid.set_param @p, %whole        (planned in place: the gather writes
//                                      the parameter)
//
// The group must list its axes in grid order: the all-gather concatenates
// the ranges in communicator order. The parameter records the group as
// `braid.zero_axes`, which the dumps of a ZeRO-2 gradient (this rank's
// range) describe their sharding by.
//
//===----------------------------------------------------------------------===//

#include "BraidToDist.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::braid;

namespace braid::conversion {

bool isZeroUpdate(Operation *op) {
  return isa<AdamWUpdateOp, SGDUpdateOp>(op) && op->hasAttr("zero_axes");
}

template <typename Update>
static LogicalResult lowerUpdate(Update u, SymbolTableCollection &symbols) {
  ArrayAttr names = u.getZeroAxesAttr();
  FailureOr<GridGroup> group =
      getGridGroup(u, names, [&] { return u.emitError(); });
  if (failed(group))
    return failure();
  if (!group->inGridOrder())
    return u.emitError("zero_axes must list grid axes in grid order (the "
                       "communicator's rank order, in which the parameter "
                       "is all-gathered)");
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(u, u.getParamAttr());
  RankedTensorType type = param.getTensorType();
  int64_t whole = type.getNumElements(), ranks = group->size();
  if (whole % ranks != 0)
    return u.emitError("a ZeRO update needs the parameter's ")
           << whole << " elements divisible by the " << ranks
           << " ranks of its zero_axes";
  int64_t range = whole / ranks;
  int64_t gradElements =
      cast<RankedTensorType>(u.getGrad().getType()).getNumElements();
  if (gradElements != whole && gradElements != range)
    return u.emitError("the gradient of a ZeRO update is the whole parameter (")
           << whole << " elements) or this rank's range (" << range
           << "), not " << gradElements;

  OpBuilder b(u);
  Location loc = unnamed(u.getLoc());
  Value c = buildCoordinate(b, loc, u, *group);
  Value offset = arith::MulIOp::create(
      b, loc, c, arith::ConstantIndexOp::create(b, loc, range));
  u.getOffsetMutable().assign(offset);
  u.setRangeAttr(b.getI64IntegerAttr(range));
  u.removeZeroAxesAttr();
  param->setAttr(kZeroAxesAttrName, names);

  b.setInsertionPointAfter(u);
  auto part = GetParamRangeOp::create(b, loc, type.clone(ArrayRef<int64_t>{range}),
                                      u.getParamAttr(), offset);
  DistGroup dist = getDistGroup(b, u, *group);
  auto gather = dist::AllGatherOp::create(
      b, loc, type.clone(ArrayRef<int64_t>{whole}),
      dist::TokenType::get(b.getContext()), part, dist.grid, dist.axes,
      b.getI64IntegerAttr(0));
  dist::WaitOp::create(b, loc, ValueRange{gather.getToken()});
  SetParamOp::create(b, loc, u.getParamAttr(), gather.getResult());
  return success();
}

LogicalResult lowerZeroUpdate(Operation *op, SymbolTableCollection &symbols) {
  if (auto u = dyn_cast<AdamWUpdateOp>(op))
    return lowerUpdate(u, symbols);
  return lowerUpdate(cast<SGDUpdateOp>(op), symbols);
}

} // namespace braid::conversion
