//===- ParamViews.cpp - parameter reads made again where read -------------===//
//
// The parameter views of Pipelining.h: what autodiff's reverse pass and the
// pipeline's pieces make again where they read them instead of keeping the
// forward's.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/Transforms/Pipelining.h"

using namespace mlir;
using namespace mlir::braid;

bool mlir::braid::isParamView(Operation *op) {
  if (isa<GetParamOp>(op))
    return true;
  auto convert = dyn_cast<ConvertOp>(op);
  return convert && convert.getInput().getDefiningOp<GetParamOp>();
}

Value mlir::braid::cloneParamView(OpBuilder &b, Value view, IRMapping &map,
                                  function_ref<void(Operation *)> onClone) {
  if (Value mapped = map.lookupOrNull(view))
    return mapped;
  Operation *def = view.getDefiningOp();
  for (Value operand : def->getOperands())
    cloneParamView(b, operand, map, onClone);
  Operation *clone = b.clone(*def, map);
  if (onClone)
    onClone(clone);
  return map.lookup(view);
}
