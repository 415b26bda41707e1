//===- run.c - build and run a model through the C API -------------------===//
//
// braidRunModel: a model trained two steps on one CPU rank, then on a dp=2
// grid (two ranks under mpirun) checked against the 1-rank run, and option
// errors reported before any work.
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

  // The pipeline's options are named as the options text names them, and
  // the run's by their field: checked before any work, as braid-run's flags.
  // ERR: schedule=1f1b orders the micro-batches of a pipeline, which one rank (no grid) with microbatches=1 does not have
  // CHECK-LABEL: schedule without a pipeline:
  // CHECK-NEXT: exit code 1
  options.verify = false;
  printf("schedule without a pipeline:\n");
  rc = run(context, text, size, "schedule=1f1b", &options);
  printf("exit code %d\n", rc);

  // ERR: steps must be at least 1 (the last step to run), found 0
  // CHECK-LABEL: no steps:
  // CHECK-NEXT: exit code 1
  options.steps = 0;
  printf("no steps:\n");
  rc = run(context, text, size, "", &options);
  printf("exit code %d\n", rc);

  mlirContextDestroy(context);
  free(text);
  return 0;
}
