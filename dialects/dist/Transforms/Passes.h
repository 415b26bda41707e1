//===- Passes.h - passes of the dist dialect --------------------*- C++ -*-===//
#ifndef BRAID_DIALECT_DIST_TRANSFORMS_PASSES_H
#define BRAID_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "dialects/braid/IR/BraidEnums.h"
#include "dialects/dist/IR/DistDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dist {

#define GEN_PASS_DECL
#include "dialects/dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/dist/Transforms/Passes.h.inc"

} // namespace mlir::dist

#endif // BRAID_DIALECT_DIST_TRANSFORMS_PASSES_H
