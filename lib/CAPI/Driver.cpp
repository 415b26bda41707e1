//===- Driver.cpp - C API of the driver -----------------------------------===//

#include "braid-c/Driver.h"

#include "braid/Driver/Progress.h"
#include "braid/Driver/Run.h"
#include "braid/Pipelines.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <optional>

BraidRunOptions braidRunOptionsGetDefault(void) {
  braid::driver::RunOptions defaults;
  BraidRunOptions options = {};
  options.backend = mlirStringRefCreateFromCString("cpu");
  options.steps = defaults.steps;
  options.hasSeed = false;
  options.seed = 0;
  options.dumpDir = mlirStringRefCreate(nullptr, 0);
  options.traceFile = mlirStringRefCreate(nullptr, 0);
  options.emitCpp = mlirStringRefCreate(nullptr, 0);
  options.rollRepeats = defaults.compile.rollRepeats;
  options.quiet = defaults.compile.quiet;
  options.progress = false;
  options.compileOnly = defaults.compileOnly;
  options.verify = defaults.verify;
  options.verifyTolerance = defaults.verifyTolerance;
  return options;
}

MlirModule braidParseModel(MlirContext context, MlirStringRef source,
                           MlirStringRef name) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(unwrap(source), unwrap(name)),
      llvm::SMLoc());
  mlir::MLIRContext *ctx = unwrap(context);
  // While parsing, located messages on stderr, as braid-run prints them.
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      braid::driver::parseModel(sourceMgr, ctx);
  return wrap(module.release());
}

int braidRunModel(MlirModule module, BraidTrainingPipelineOptions pipeline,
                  const BraidRunOptions *options) {
  braid::driver::RunOptions run;
  run.compile.backend = unwrap(options->backend).str();
  run.compile.rollRepeats = options->rollRepeats;
  run.compile.emitCpp = unwrap(options->emitCpp).str();
  run.compile.quiet = options->quiet;
  std::optional<braid::driver::Progress> progress;
  if (options->progress) {
    progress.emplace(true, "braid");
    run.compile.progress = &*progress;
  }
  run.steps = options->steps;
  if (options->hasSeed)
    run.seed = options->seed;
  run.dumpDir = unwrap(options->dumpDir).str();
  run.traceFile = unwrap(options->traceFile).str();
  run.compileOnly = options->compileOnly;
  run.verify = options->verify;
  run.verifyTolerance = options->verifyTolerance;
  return braid::driver::runModel(
      unwrap(module),
      *static_cast<const braid::TrainingPipelineOptions *>(pipeline.ptr), run);
}
