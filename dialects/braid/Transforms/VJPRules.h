//===- VJPRules.h - vector-Jacobian products of braid ops -------*- C++ -*-===//
#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_VJPRULES_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_VJPRULES_H

#include "mlir/IR/Builders.h"

namespace mlir::braid {

/// True when `type` carries cotangents (float tensors; indices do not).
bool isDifferentiable(Type type);

/// Emits, at the builder's insertion point, the vector-Jacobian product of
/// `op` (a braid op other than calls): given the cotangents of its results
/// (null where a result has none), returns one cotangent per operand (null
/// for operands that are not differentiable or receive nothing). Emits a
/// located error for ops without a rule. New ops get location `loc`.
FailureOr<SmallVector<Value>> emitVJP(OpBuilder &b, Location loc,
                                      Operation *op,
                                      ArrayRef<Value> resultCotangents);

/// `act(x)` as a unary braid op.
Value createActivation(OpBuilder &b, Location loc, int activation, Value x);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_VJPRULES_H
