//===- FuzzContext.h - what the MLIR-side fuzz targets share ----*- C++ -*-===//
//
// Header-only: each target is one executable.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_FUZZ_FUZZCONTEXT_H
#define BRAID_FUZZ_FUZZCONTEXT_H

#include "braid/InitAllDialects.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdlib>

namespace braid::fuzz {

/// One context for the run, every dialect braid-opt knows loaded: making one
/// per input would dominate its time. Threading is off so that a crash's
/// stack is the input's own.
inline mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    braid::registerAllDialects(registry);
    auto *c = new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

/// BRAID_FUZZ_VERBOSE=1 prints what an input does (its diagnostics).
inline bool verbose() {
  static const bool on = std::getenv("BRAID_FUZZ_VERBOSE") != nullptr;
  return on;
}

/// Swallows an input's diagnostics, unless verbose().
class QuietDiagnostics : public mlir::ScopedDiagnosticHandler {
public:
  explicit QuietDiagnostics(mlir::MLIRContext &ctx)
      : ScopedDiagnosticHandler(&ctx, [](mlir::Diagnostic &) {
          return verbose() ? mlir::failure() : mlir::success();
        }) {}
};

} // namespace braid::fuzz

#endif // BRAID_FUZZ_FUZZCONTEXT_H
