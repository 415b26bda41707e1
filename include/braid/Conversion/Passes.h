//===- Passes.h - Braid's conversion passes ---------------------*- C++ -*-===//
#ifndef BRAID_CONVERSION_PASSES_H
#define BRAID_CONVERSION_PASSES_H

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace braid {

#define GEN_PASS_DECL
#include "braid/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "braid/Conversion/Passes.h.inc"

} // namespace braid

#endif // BRAID_CONVERSION_PASSES_H
