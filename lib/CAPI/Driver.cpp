//===- Driver.cpp - C API of the driver -----------------------------------===//

#include "braid-c/Driver.h"

#include "braid/Driver/Compile.h"
#include "braid/Driver/Generate.h"
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
  options.initFrom = mlirStringRefCreate(nullptr, 0);
  options.dataFile = mlirStringRefCreate(nullptr, 0);
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

namespace {
/// braid-run's RunOptions from the C API's.
braid::driver::RunOptions
runOptions(const BraidRunOptions *options,
           std::optional<braid::driver::Progress> &progress) {
  braid::driver::RunOptions run;
  // Messages name the options as the options text does (zero=5).
  run.spelling = braid::OptionSpelling::Keyword;
  run.compile.backend = unwrap(options->backend).str();
  run.compile.rollRepeats = options->rollRepeats;
  run.compile.emitCpp = unwrap(options->emitCpp).str();
  run.compile.quiet = options->quiet;
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
  run.initFrom = unwrap(options->initFrom).str();
  run.dataFile = unwrap(options->dataFile).str();
  return run;
}

const braid::TrainingPipelineOptions &
unwrapPipeline(BraidTrainingPipelineOptions pipeline) {
  return *static_cast<const braid::TrainingPipelineOptions *>(pipeline.ptr);
}
} // namespace

int braidRunModel(MlirModule module, BraidTrainingPipelineOptions pipeline,
                  const BraidRunOptions *options) {
  std::optional<braid::driver::Progress> progress;
  braid::driver::RunOptions run = runOptions(options, progress);
  return braid::driver::runModel(unwrap(module), unwrapPipeline(pipeline),
                                 run);
}

BraidGenerateOptions braidGenerateOptionsGetDefault(void) {
  braid::driver::GenerateOptions defaults;
  BraidGenerateOptions options = {};
  options.tokens = 1;
  options.batch = defaults.batch;
  options.context = defaults.context;
  options.promptLen = defaults.promptLen;
  options.promptsFile = mlirStringRefCreate(nullptr, 0);
  options.temperature = defaults.temperature;
  options.topK = defaults.topK;
  options.topP = defaults.topP;
  return options;
}

int braidGenerateModel(MlirModule module, BraidTrainingPipelineOptions pipeline,
                       const BraidRunOptions *run,
                       const BraidGenerateOptions *generate) {
  std::optional<braid::driver::Progress> progress;
  braid::driver::RunOptions options = runOptions(run, progress);
  braid::driver::GenerateOptions what;
  what.tokens = generate->tokens;
  what.batch = generate->batch;
  what.context = generate->context;
  what.promptLen = generate->promptLen;
  what.promptsFile = unwrap(generate->promptsFile).str();
  what.temperature = generate->temperature;
  what.topK = generate->topK;
  what.topP = generate->topP;
  return braid::driver::generateModel(unwrap(module), unwrapPipeline(pipeline),
                                      options, what);
}

BraidServeOptions braidServeOptionsGetDefault(void) {
  braid::driver::GenerateOptions defaults;
  const braid::driver::GenerateOptions::Serve &serve = defaults.serve;
  BraidServeOptions options = {};
  options.requestsFile = mlirStringRefCreate(nullptr, 0);
  options.rate = serve.rate;
  options.requests = serve.requests;
  options.promptLen = defaults.promptLen;
  options.minPromptLen = serve.minPromptLen;
  options.outputFile = mlirStringRefCreate(nullptr, 0);
  options.endToken = serve.endToken;
  options.pageSize = serve.pageSize;
  options.kvPages = serve.kvPages;
  options.prefillChunk = serve.prefillChunk;
  options.prefillBatch = serve.prefillBatch;
  options.maxNewTokens = 16; // braid-run's --serve without --generate
  options.batch = defaults.batch;
  options.context = defaults.context;
  options.temperature = defaults.temperature;
  options.topK = defaults.topK;
  options.topP = defaults.topP;
  options.staticBatching = serve.staticBatches;
  options.tokenBudget = serve.tokenBudget;
  return options;
}

int braidServeModel(MlirModule module, BraidTrainingPipelineOptions pipeline,
                    const BraidRunOptions *run,
                    const BraidServeOptions *serve) {
  std::optional<braid::driver::Progress> progress;
  braid::driver::RunOptions options = runOptions(run, progress);
  braid::driver::GenerateOptions what;
  what.tokens = serve->maxNewTokens;
  what.batch = serve->batch;
  what.context = serve->context;
  what.promptLen = serve->promptLen;
  what.temperature = serve->temperature;
  what.topK = serve->topK;
  what.topP = serve->topP;
  what.serve.requestsFile = unwrap(serve->requestsFile).str();
  what.serve.rate = serve->rate;
  what.serve.requests = serve->requests;
  what.serve.minPromptLen = serve->minPromptLen;
  what.serve.outputFile = unwrap(serve->outputFile).str();
  what.serve.endToken = serve->endToken;
  what.serve.pageSize = serve->pageSize;
  what.serve.kvPages = serve->kvPages;
  what.serve.prefillChunk = serve->prefillChunk;
  what.serve.prefillBatch = serve->prefillBatch;
  what.serve.staticBatches = serve->staticBatching;
  what.serve.tokenBudget = serve->tokenBudget;
  if (!what.serve.enabled())
    return braid::driver::fail(
        "braidServeModel: no requests (give requestsFile, or a rate > 0)");
  return braid::driver::serveModel(unwrap(module), unwrapPipeline(pipeline),
                                   options, what);
}
