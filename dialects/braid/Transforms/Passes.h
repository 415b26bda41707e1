//===- Passes.h - passes of the braid dialect -------------------*- C++ -*-===//
#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_PASSES_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_PASSES_H

#include "dialects/braid/IR/BraidEnums.h"
#include "dialects/dist/IR/DistDialect.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::braid {

#define GEN_PASS_DECL
#include "dialects/braid/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/braid/Transforms/Passes.h.inc"

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_PASSES_H
