//===- braid-embed.c - Braid embedded in a C program ---------------------===//
//
// Reads a model, lowers it with the training pipeline for a device grid and
// prints the parallel plan and the size of the program Braid emits:
//   braid-embed model.mlir [GRID]        (GRID as braid-run --grid: dp=2,tp=2)
//
//===----------------------------------------------------------------------===//

#include "braid-c/Dialects.h"
#include "braid-c/Driver.h"
#include "braid-c/Pipelines.h"
#include "braid-c/Target.h"

#include "mlir-c/IR.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void countBytes(MlirStringRef text, void *userData) {
  *(size_t *)userData += text.length;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s model.mlir [GRID]\n", argv[0]);
    return 2;
  }
  FILE *file = fopen(argv[1], "rb");
  if (!file) {
    fprintf(stderr, "cannot open %s\n", argv[1]);
    return 2;
  }
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *text = malloc((size_t)size);
  size_t got = fread(text, 1, (size_t)size, file);
  fclose(file);

  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  braidRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);

  MlirModule module = braidParseModel(context, mlirStringRefCreate(text, got),
                                      mlirStringRefCreateFromCString(argv[1]));
  if (mlirModuleIsNull(module))
    return 1;

  BraidTrainingPipelineOptions options = braidTrainingPipelineOptionsCreate();
  char grid[256];
  snprintf(grid, sizeof grid, "grid=%s", argc == 3 ? argv[2] : "");
  if (mlirLogicalResultIsFailure(braidTrainingPipelineOptionsParse(
          options, mlirStringRefCreateFromCString(grid))) ||
      mlirLogicalResultIsFailure(braidRunTrainingPipeline(module, options)))
    return 1;

  fflush(stdout);
  if (mlirLogicalResultIsFailure(
          braidPrintPlan(module, mlirStringRefCreate(NULL, 0))))
    return 1;

  size_t bytes = 0;
  if (mlirLogicalResultIsFailure(
          braidEmitCpp(module, mlirStringRefCreate(NULL, 0), true,
                       countBytes, &bytes)))
    return 1;
  printf("program: %zu bytes of C++\n", bytes);

  braidTrainingPipelineOptionsDestroy(options);
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  free(text);
  return 0;
}
