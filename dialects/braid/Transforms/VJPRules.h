//===- VJPRules.h - vector-Jacobian products of ops -------------*- C++ -*-===//
//
// Braid's ops give their VJPs through DifferentiableOpInterface, next to each
// op family (dialects/braid/IR); the upstream `shard` collectives the
// partitioner inserts get theirs from the external models registered here.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_VJPRULES_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_VJPRULES_H

#include "mlir/IR/Builders.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::braid {

/// True when `type` carries cotangents (float tensors; indices do not).
bool isDifferentiable(Type type);

/// Emits, at the builder's insertion point, the vector-Jacobian product of
/// `op` (any op but calls): given the cotangents of its results (null where
/// a result has none), returns one cotangent per operand (null for operands
/// that are not differentiable or receive nothing). Emits a located error
/// for ops without a rule. New ops get location `loc`.
FailureOr<SmallVector<Value>> emitVJP(OpBuilder &b, Location loc,
                                      Operation *op,
                                      ArrayRef<Value> resultCotangents);

/// Attaches DifferentiableOpInterface to the `shard` collectives.
void registerCollectiveVJPExternalModels(DialectRegistry &registry);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_VJPRULES_H
