//===- InitAllDialects.h - every dialect braid-opt knows --------*- C++ -*-===//
#ifndef BRAID_INITALLDIALECTS_H
#define BRAID_INITALLDIALECTS_H

#include "mlir/IR/DialectRegistry.h"

namespace braid {
/// Registers the braid dialect and the upstream dialects Braid's pipeline uses
/// (func, arith, tensor, linalg, shard, ...), with their external models,
/// among them the upstream sharding models of the braid ops.
void registerAllDialects(mlir::DialectRegistry &registry);
} // namespace braid

#endif // BRAID_INITALLDIALECTS_H
