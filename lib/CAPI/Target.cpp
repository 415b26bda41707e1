//===- Target.cpp - C API of the plan printer and emitter -----------------===//

#include "braid-c/Target.h"
#include "braid-c/Passes.h"

#include "braid/Target/Cpp.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/CAPI/Utils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

MlirLogicalResult braidPrintPlan(MlirModule module, MlirStringRef passOptions) {
  mlir::ModuleOp op = unwrap(module);
  // Through the pass's textual form: its options are defined once, in
  // Passes.td, and the registry parses them.
  braidRegisterAllPasses();
  std::string pipeline = "braid-print-plan";
  llvm::StringRef options = unwrap(passOptions);
  if (!options.empty())
    pipeline += ("{" + options + "}").str();
  mlir::PassManager pm(op.getContext());
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, llvm::errs())))
    return mlirLogicalResultFailure();
  mlir::LogicalResult result = pm.run(op);
  llvm::outs().flush();
  return wrap(result);
}

MlirLogicalResult braidEmitCpp(MlirModule module, MlirStringRef program,
                               bool rollRepeats, MlirStringCallback callback,
                               void *userData) {
  mlir::detail::CallbackOstream stream(callback, userData);
  braid::CppEmitOptions options;
  options.rollRepeats = rollRepeats;
  mlir::LogicalResult result =
      braid::emitProgramAsCpp(unwrap(module), unwrap(program), stream, options);
  stream.flush();
  return wrap(result);
}

void braidGetPrograms(MlirModule module, MlirStringCallback callback,
                      void *userData) {
  for (mlir::func::FuncOp program : mlir::braid::getPrograms(unwrap(module)))
    callback(wrap(program.getSymName()), userData);
}
