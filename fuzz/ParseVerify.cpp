//===- ParseVerify.cpp - fuzz target: parse and verify a braid module -----===//
//
// libFuzzer feeds bytes as MLIR text; with every dialect braid-opt knows, they
// are parsed and the module verified. Any outcome but a crash is a pass: a
// diagnostic is what bad input must get. Seeds: the test suite's .mlir files
// (test/Fuzz/*.py copies them into a corpus).
//
//===----------------------------------------------------------------------===//

#include "FuzzContext.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext &ctx = braid::fuzz::context();
  braid::fuzz::QuietDiagnostics quiet(ctx);
  // A copy: MLIR's lexer reads up to the NUL that ends a buffer (mlir-opt's
  // files have one; libFuzzer's bytes do not).
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
