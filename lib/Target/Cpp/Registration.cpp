//===- Registration.cpp - the --braid-to-cpp translation ------------------===//

#include "braid/InitAllDialects.h"
#include "braid/Target/Cpp.h"

#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

static llvm::cl::opt<std::string> programOption(
    "braid-program",
    llvm::cl::desc("The program to emit when the module has several: an entry "
                   "point (braid.entry) or a pipeline rank's step"),
    llvm::cl::init(""));
static llvm::cl::opt<bool> rollOption(
    "braid-roll-repeats",
    llvm::cl::desc("Print repeated op groups (layers, micro-batches) as loops "
                   "over tables of their literals"),
    llvm::cl::init(true));

void braid::registerToCppTranslation() {
  mlir::TranslateFromMLIRRegistration registration(
      "braid-to-cpp", "emit a braid program as C++/CUDA source for the runtime",
      [](mlir::Operation *op, llvm::raw_ostream &os) -> mlir::LogicalResult {
        auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
        if (!module)
          return op->emitError("expected a builtin.module");
        braid::CppEmitOptions options;
        options.rollRepeats = rollOption;
        return braid::emitProgramAsCpp(module, programOption, os, options);
      },
      [](mlir::DialectRegistry &registry) {
        braid::registerAllDialects(registry);
      });
}
