//===-- braid-c/Pipelines.h - C API of the training pipeline ------*- C -*-===//
//
// The training pipeline (include/braid/Pipelines.h) from C: an options
// object holding every option of braid::TrainingPipelineOptions, set from
// the options' textual form (the one braid-opt's --braid-training-pipeline
// takes, "grid=dp=2,tp=2 zero=1 microbatches=2"), so that the options keep
// one definition; the pipeline then lowers a module in place.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_C_PIPELINES_H
#define BRAID_C_PIPELINES_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Owns a braid::TrainingPipelineOptions.
typedef struct BraidTrainingPipelineOptions {
  void *ptr;
} BraidTrainingPipelineOptions;

/// The options at their defaults (one rank, f32, AdamW).
MLIR_CAPI_EXPORTED BraidTrainingPipelineOptions
braidTrainingPipelineOptionsCreate(void);

MLIR_CAPI_EXPORTED void
braidTrainingPipelineOptionsDestroy(BraidTrainingPipelineOptions options);

/// Sets the options `text` names ("key=value" pairs separated by spaces);
/// the others keep their values. On an unknown option or a bad value, fails
/// with a message on stderr and leaves `options` as they were.
MLIR_CAPI_EXPORTED MlirLogicalResult braidTrainingPipelineOptionsParse(
    BraidTrainingPipelineOptions options, MlirStringRef text);

/// Prints every option with its value, in the form Parse takes.
MLIR_CAPI_EXPORTED void
braidTrainingPipelineOptionsPrint(BraidTrainingPipelineOptions options,
                                  MlirStringCallback callback, void *userData);

/// Adds the training pipeline's passes to `passManager` (a builtin.module
/// pass manager). Fails with a message on stderr when the options cannot make
/// a pipeline; values the passes check fail when the pipeline runs.
MLIR_CAPI_EXPORTED MlirLogicalResult braidTrainingPipelineAddPasses(
    MlirOpPassManager passManager, BraidTrainingPipelineOptions options);

/// Lowers `module` in place with the training pipeline; diagnostics go to
/// the context's handlers.
MLIR_CAPI_EXPORTED MlirLogicalResult braidRunTrainingPipeline(
    MlirModule module, BraidTrainingPipelineOptions options);

#ifdef __cplusplus
}
#endif

#endif // BRAID_C_PIPELINES_H
