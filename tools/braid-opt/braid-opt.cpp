//===- braid-opt.cpp - Braid's opt-style driver ---------------------------===//
//
// Parses, verifies and transforms braid model descriptions with any
// registered pass or pipeline, in the manner of mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "braid/InitAllDialects.h"
#include "braid/InitAllPasses.h"
#include "braid/Support/CommandLine.h"
#include "braid/Support/Debug.h"
#include "test/lib/Transforms/InjectFault.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"

/// --help lists the General category first: leaves the passes and pipelines
/// there (one option whose values they are) and moves mlir-opt's own options
/// to a category after it.
static void showPassesFirst() {
  static llvm::cl::OptionCategory driverCategory("MLIR driver options");
  llvm::cl::Option *passes =
      llvm::cl::getRegisteredOptions().lookup("braid-training-pipeline");
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *option = entry.second;
    if (option != passes && option->Categories.size() == 1 &&
        option->Categories[0] == &llvm::cl::getGeneralCategory())
      option->Categories[0] = &driverCategory;
  }
}

int main(int argc, char **argv) {
  // Before anything of braid-opt's is registered: what is there is LLVM's
  // (hundreds of code generator flags), kept for --help-hidden.
  braid::hideLibraryOptions();
  braid::installVersionPrinter();
  braid::registerAllPasses();
  // -debug-only=<pass flag>: why a pass decided what it did.
  mlir::braid::registerDebugOptions();
  braid::test::registerTestPasses();
  mlir::DialectRegistry registry;
  braid::registerAllDialects(registry);
  // MlirOptMain's own steps, with Braid's parser of the command line between
  // them (registerAndParseCLIOptions would use LLVM's): its options, then
  // the input and output files parseCLIOptions would declare.
  std::string helpHeader =
      mlir::registerCLIOptions("Braid modular optimizer driver\n", registry);
  static llvm::cl::opt<std::string> inputFilename(
      llvm::cl::Positional, llvm::cl::desc("<input file>"), llvm::cl::init("-"));
  static llvm::cl::opt<std::string> outputFilename(
      "o", llvm::cl::desc("Output filename"), llvm::cl::value_desc("filename"),
      llvm::cl::init("-"));
  showPassesFirst();
  braid::parseToolCommandLine(argc, argv, helpHeader);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
