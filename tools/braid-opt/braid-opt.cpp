//===- braid-opt.cpp - Braid's opt-style driver ---------------------------===//
//
// Parses, verifies and transforms braid model descriptions with any
// registered pass or pipeline, in the manner of mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "braid/InitAllDialects.h"
#include "braid/InitAllPasses.h"
#include "braid/Support/Debug.h"
#include "test/lib/Transforms/InjectFault.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  braid::registerAllPasses();
  // -debug-only=<pass flag>: why a pass decided what it did.
  mlir::braid::registerDebugOptions();
  braid::test::registerTestPasses();
  mlir::DialectRegistry registry;
  braid::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Braid modular optimizer driver\n", registry));
}
