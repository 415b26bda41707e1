//===- OpCost.h - the cost of one op, through its interface -----*- C++ -*-===//
//
// The cost figures every later component shares (model statistics, the
// planner, the overlap scheduler, the trace's FLOPs): each op gives its own
// through OpCostInterface (BraidInterfaces.td); OpRules.h defines OpCost.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_OPCOST_H
#define BRAID_DIALECT_BRAID_ANALYSIS_OPCOST_H

#include "dialects/braid/IR/OpRules.h"

#include "mlir/IR/Operation.h"

namespace mlir::braid {

/// The cost of one execution of `op`; zero for ops that do no arithmetic
/// (reshape, get_param, func ops, ...): those without OpCostInterface.
OpCost getForwardCost(Operation *op);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_OPCOST_H
