//===- Registration.cpp - the --braid-to-cpp translation ------------------===//

#include "braid/InitAllDialects.h"
#include "braid/Target/Cpp.h"

#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

static llvm::cl::opt<std::string>
    entryOption("braid-entry", llvm::cl::desc("Step function to emit"),
                llvm::cl::init("step"));
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
        return braid::emitProgramAsCpp(module, entryOption, os, options);
      },
      [](mlir::DialectRegistry &registry) {
        braid::registerAllDialects(registry);
      });
}
