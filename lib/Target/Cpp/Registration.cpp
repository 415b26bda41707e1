//===- Registration.cpp - the --braid-to-cpp translation ------------------===//

#include "braid/InitAllDialects.h"
#include "braid/Target/Cpp.h"

#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

static llvm::cl::opt<std::string>
    entryOption("braid-entry", llvm::cl::desc("Step function to emit"),
                llvm::cl::init("step"));

void braid::registerToCppTranslation() {
  mlir::TranslateFromMLIRRegistration registration(
      "braid-to-cpp", "emit a braid program as C++/CUDA source for the runtime",
      [](mlir::Operation *op, llvm::raw_ostream &os) -> mlir::LogicalResult {
        auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
        if (!module)
          return op->emitError("expected a builtin.module");
        return braid::emitProgramAsCpp(module, entryOption, os);
      },
      [](mlir::DialectRegistry &registry) {
        braid::registerAllDialects(registry);
      });
}
