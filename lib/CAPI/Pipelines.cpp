//===- Pipelines.cpp - C API of the training pipeline ---------------------===//

#include "braid-c/Pipelines.h"

#include "braid/Pipelines.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Support.h"
#include "mlir/CAPI/Utils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

using braid::TrainingPipelineOptions;

static TrainingPipelineOptions *unwrap(BraidTrainingPipelineOptions options) {
  return static_cast<TrainingPipelineOptions *>(options.ptr);
}

BraidTrainingPipelineOptions braidTrainingPipelineOptionsCreate(void) {
  return {new TrainingPipelineOptions()};
}

void braidTrainingPipelineOptionsDestroy(BraidTrainingPipelineOptions options) {
  delete unwrap(options);
}

MlirLogicalResult
braidTrainingPipelineOptionsParse(BraidTrainingPipelineOptions options,
                                  MlirStringRef text) {
  // Parsed into a copy, so that a bad value leaves the options unchanged.
  TrainingPipelineOptions parsed;
  parsed.copyOptionValuesFrom(*unwrap(options));
  if (mlir::failed(parsed.parseFromString(unwrap(text))))
    return mlirLogicalResultFailure();
  unwrap(options)->copyOptionValuesFrom(parsed);
  return mlirLogicalResultSuccess();
}

void braidTrainingPipelineOptionsPrint(BraidTrainingPipelineOptions options,
                                       MlirStringCallback callback,
                                       void *userData) {
  mlir::detail::CallbackOstream stream(callback, userData);
  unwrap(options)->print(stream);
  stream.flush();
}

MlirLogicalResult
braidTrainingPipelineAddPasses(MlirOpPassManager passManager,
                               BraidTrainingPipelineOptions options) {
  // What braid-opt's --braid-training-pipeline checks: the values, then
  // what the grid makes of them (a schedule without a pipeline).
  braid::OptionProblems problems = braid::checkTrainingPipelineOptions(
      *unwrap(options), braid::OptionSpelling::Keyword);
  for (const std::string &warning : problems.warnings)
    llvm::errs() << "braid: warning: " << warning << "\n";
  std::string error = problems.error;
  if (!error.empty() ||
      mlir::failed(braid::buildTrainingPipeline(*unwrap(passManager),
                                                *unwrap(options), &error))) {
    llvm::errs() << "braid: "
                 << (error.empty() ? "cannot build the pass pipeline" : error)
                 << "\n";
    return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}

MlirLogicalResult
braidRunTrainingPipeline(MlirModule module,
                         BraidTrainingPipelineOptions options) {
  mlir::ModuleOp op = unwrap(module);
  mlir::PassManager pm(op.getContext());
  if (mlirLogicalResultIsFailure(braidTrainingPipelineAddPasses(
          wrap(static_cast<mlir::OpPassManager *>(&pm)), options)))
    return mlirLogicalResultFailure();
  return wrap(pm.run(op));
}
