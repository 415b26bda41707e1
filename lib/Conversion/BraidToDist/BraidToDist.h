//===- BraidToDist.h - protocol families of the dist lowering ---*- C++ -*-===//
//
// One function per protocol family, each in its own file, called by the
// --convert-braid-to-dist pass (BraidToDist.cpp) on every op it handles.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_CONVERSION_BRAIDTODIST_BRAIDTODIST_H
#define BRAID_LIB_CONVERSION_BRAIDTODIST_BRAIDTODIST_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace braid::conversion {

/// Whether `op` is a upstream shard collective that moves data
/// (all_reduce, all_gather, reduce_scatter, all_to_all).
bool isShardTransfer(mlir::Operation *op);

/// Replaces the shard collective `op` by dist ops (Collectives.cpp).
mlir::LogicalResult lowerShardCollective(mlir::Operation *op);

} // namespace braid::conversion

#endif // BRAID_LIB_CONVERSION_BRAIDTODIST_BRAIDTODIST_H
