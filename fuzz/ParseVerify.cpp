//===- ParseVerify.cpp - fuzz target: parse and verify a braid module -----===//
//
// libFuzzer feeds bytes as MLIR text; with every dialect braid-opt knows, they
// are parsed and the module verified. Any outcome but a crash is a pass: a
// diagnostic is what bad input must get. Seeds: the test suite's .mlir files
// (test/Fuzz/*.py copies them into a corpus).
//
//===----------------------------------------------------------------------===//

#include "braid/InitAllDialects.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {
/// One context for the run: making one per input would dominate its time.
/// Threading is off so that a crash's stack is the input's own.
mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    braid::registerAllDialects(registry);
    auto *c = new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    c->allowUnregisteredDialects(false);
    return c;
  }();
  return *ctx;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext &ctx = context();
  // BRAID_FUZZ_VERBOSE=1 prints the diagnostics (to see what an input does).
  static const bool verbose = std::getenv("BRAID_FUZZ_VERBOSE") != nullptr;
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return verbose ? mlir::failure() : mlir::success(); });
  // A copy: MLIR's lexer reads up to the NUL that ends a buffer (mlir-opt's
  // files have one; libFuzzer's bytes do not).
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
