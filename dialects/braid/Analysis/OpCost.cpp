//===- OpCost.cpp - the cost of one op, through its interface -------------===//

#include "dialects/braid/Analysis/OpCost.h"

#include "dialects/braid/IR/BraidInterfaces.h"

using namespace mlir;
using namespace mlir::braid;

OpCost mlir::braid::getForwardCost(Operation *op) {
  if (auto costed = dyn_cast<OpCostInterface>(op))
    return costed.getCost();
  return {};
}
