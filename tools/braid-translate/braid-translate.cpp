//===- braid-translate.cpp - Braid's translation driver -------------------===//
//
// Translates braid programs out of MLIR, in the manner of mlir-translate:
// `braid-translate --braid-to-cpp program.mlir -o program.cpp`, one program
// (--braid-program=NAME when the module has several), or every program of
// a module from one parse of it, one file each (a pipeline's ranks):
// `braid-translate --braid-to-cpp --braid-output-dir=DIR module.mlir`.
//
//===----------------------------------------------------------------------===//

#include "braid/Support/CommandLine.h"
#include "braid/Target/Cpp.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  // Before the translation's options: what is registered is LLVM's.
  braid::hideLibraryOptions();
  braid::installVersionPrinter();
  braid::registerToCppTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "Braid translation driver\n"));
}
