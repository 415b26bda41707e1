//===- pipeline.c - the training pipeline through the C API --------------===//
//
// Options set from their textual form and printed back, a bad option
// refused, the pipeline run on a model for a dp x tp grid, its plan printed
// (the same as braid-opt prints), and its programs listed and one emitted as C++.
//
//===----------------------------------------------------------------------===//

// RUN: braid-capi-pipeline-test %braid_src/examples/llama-tiny.mlir > %t.out 2> %t.err
// RUN: FileCheck %s < %t.out
// RUN: FileCheck %s --check-prefix=ERR < %t.err
// The plan is braid-opt's for the same options.
// RUN: braid-opt %braid_src/examples/llama-tiny.mlir --braid-training-pipeline="grid=dp=2,tp=2 zero=1 sequence-parallel=true" --braid-print-plan -o /dev/null > %t.opt
// RUN: sed -n '/^plan: /,/^end of plan$/p;/^end of plan$/q' %t.out | sed '$d' | diff - %t.opt

#include "common.h"

#include "braid-c/Passes.h"
#include "braid-c/Pipelines.h"
#include "braid-c/Target.h"

#include "mlir-c/Pass.h"

#include <string.h>

/// Collects emitted C++ (it comes in pieces).
typedef struct {
  char *data;
  size_t length;
} Text;

static void appendText(MlirStringRef piece, void *userData) {
  Text *text = userData;
  text->data = realloc(text->data, text->length + piece.length + 1);
  memcpy(text->data + text->length, piece.data, piece.length);
  text->length += piece.length;
  text->data[text->length] = 0;
}

static void printProgram(MlirStringRef name, void *userData) {
  (void)userData;
  printf("program: %.*s\n", (int)name.length, name.data);
}

int main(int argc, char **argv) {
  size_t size;
  char *text = readModelArgument(argc, argv, &size);
  if (!text)
    return 2;
  braidRegisterAllPasses();
  MlirContext context = createBraidContext();

  BraidTrainingPipelineOptions options = braidTrainingPipelineOptionsCreate();
  // CHECK: defaults: {{.*}}grid= {{.*}}microbatches=1 {{.*}}zero=0
  printf("defaults: ");
  braidTrainingPipelineOptionsPrint(options, printToStdout, NULL);
  printf("\n");

  // ERR: no such option bogus
  // CHECK: bad option: failure, unchanged: {{.*}}zero=0
  MlirLogicalResult bad = braidTrainingPipelineOptionsParse(
      options, mlirStringRefCreateFromCString("zero=1 bogus=3"));
  printf("bad option: %s, unchanged: ", mlirLogicalResultIsFailure(bad) ? "failure" : "success");
  braidTrainingPipelineOptionsPrint(options, printToStdout, NULL);
  printf("\n");

  // CHECK: parsed: success {{.*}}grid=dp=2,tp=2 {{.*}}sequence-parallel=true {{.*}}zero=1
  MlirLogicalResult parsed = braidTrainingPipelineOptionsParse(
      options, mlirStringRefCreateFromCString("grid=dp=2,tp=2 zero=1 sequence-parallel=true"));
  printf("parsed: %s ", mlirLogicalResultIsSuccess(parsed) ? "success" : "failure");
  braidTrainingPipelineOptionsPrint(options, printToStdout, NULL);
  printf("\n");

  MlirModule module = mlirModuleCreateParse(context, mlirStringRefCreate(text, size));
  if (mlirModuleIsNull(module))
    return 1;
  // CHECK: pipeline: success
  printf("pipeline: %s\n",
         mlirLogicalResultIsSuccess(braidRunTrainingPipeline(module, options))
             ? "success"
             : "failure");

  // CHECK: plan: grid dp=2,tp=2 (4 ranks)
  // CHECK: end of plan
  fflush(stdout);
  if (mlirLogicalResultIsFailure(braidPrintPlan(module, mlirStringRefCreate(NULL, 0))))
    return 1;
  fflush(stdout);
  printf("end of plan\n");

  // The lowered module's programs: its one entry point, the training step.
  // CHECK: program: step
  // CHECK-NOT: program:
  braidGetPrograms(module, printProgram, NULL);

  // CHECK: emitted: {{[1-9][0-9]*}} bytes, with braid_program_get
  Text source = {NULL, 0};
  if (mlirLogicalResultIsFailure(braidEmitCpp(module, mlirStringRefCreateFromCString("step"),
                                              true, appendText, &source)))
    return 1;
  printf("emitted: %zu bytes, %s braid_program_get\n", source.length,
         source.data && strstr(source.data, "braid_program_get(") ? "with" : "without");
  free(source.data);

  // The pipeline by name, through MLIR's own pass manager: the passes are
  // registered.
  // CHECK: by name: success
  // CHECK: plan: grid dp=2 (2 ranks)
  MlirModule other = mlirModuleCreateParse(context, mlirStringRefCreate(text, size));
  MlirPassManager pm = mlirPassManagerCreate(context);
  MlirLogicalResult added = mlirParsePassPipeline(
      mlirPassManagerGetAsOpPassManager(pm),
      mlirStringRefCreateFromCString(
          "builtin.module(braid-training-pipeline{grid=dp=2}, braid-print-plan)"),
      printToStdout, NULL);
  printf("by name: %s\n", mlirLogicalResultIsSuccess(added) ? "success" : "failure");
  fflush(stdout);
  if (mlirLogicalResultIsFailure(
          mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(other))))
    return 1;
  fflush(stdout);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(other);

  mlirModuleDestroy(module);
  braidTrainingPipelineOptionsDestroy(options);
  mlirContextDestroy(context);
  free(text);
  return 0;
}
