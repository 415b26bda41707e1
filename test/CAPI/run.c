//===- run.c - build and run a model through the C API -------------------===//
//
// braidRunModel: a model trained two steps on one CPU rank, then on a dp=2
// grid (two ranks under mpirun) checked against the 1-rank run, and an
// option error reported before any work.
//
//===----------------------------------------------------------------------===//

// REQUIRES: mpirun
// RUN: braid-capi-run-test %braid_src/examples/gpt-tiny.mlir > %t.out 2> %t.err
// RUN: FileCheck %s < %t.out
// RUN: FileCheck %s --check-prefix=ERR < %t.err

#include "common.h"

#include "braid-c/Driver.h"
#include "braid-c/Pipelines.h"

/// Parses the model, sets `pipelineText` on fresh options and runs it.
static int run(MlirContext context, const char *text, size_t size,
               const char *pipelineText, const BraidRunOptions *options) {
  MlirModule module = braidParseModel(context, mlirStringRefCreate(text, size),
                                      mlirStringRefCreateFromCString("model.mlir"));
  if (mlirModuleIsNull(module))
    return -1;
  BraidTrainingPipelineOptions pipeline = braidTrainingPipelineOptionsCreate();
  int rc = -1;
  if (mlirLogicalResultIsSuccess(braidTrainingPipelineOptionsParse(
          pipeline, mlirStringRefCreateFromCString(pipelineText)))) {
    fflush(stdout);
    rc = braidRunModel(module, pipeline, options);
  }
  braidTrainingPipelineOptionsDestroy(pipeline);
  mlirModuleDestroy(module);
  return rc;
}

int main(int argc, char **argv) {
  size_t size;
  char *text = readModelArgument(argc, argv, &size);
  if (!text)
    return 2;
  MlirContext context = createBraidContext();

  // CHECK-LABEL: one rank:
  // CHECK: step 1 loss
  // CHECK: step 2 loss
  // CHECK: exit code 0
  BraidRunOptions options = braidRunOptionsGetDefault();
  options.steps = 2;
  options.hasSeed = true;
  options.seed = 1;
  options.quiet = true;
  printf("one rank:\n");
  int rc = run(context, text, size, "lr=0.01", &options);
  printf("exit code %d\n", rc);

  // Two ranks, compared with the 1-rank program.
  // CHECK-LABEL: dp=2 verified:
  // CHECK: verify: PASS
  // CHECK: exit code 0
  options.verify = true;
  printf("dp=2 verified:\n");
  rc = run(context, text, size, "grid=dp=2 lr=0.01", &options);
  printf("exit code %d\n", rc);

  // ERR: bad --grid 'dp=0': axis dp needs a positive size, got '0'
  // CHECK-LABEL: bad grid:
  // CHECK-NEXT: exit code 1
  printf("bad grid:\n");
  rc = run(context, text, size, "grid=dp=0", &options);
  printf("exit code %d\n", rc);

  mlirContextDestroy(context);
  free(text);
  return 0;
}
