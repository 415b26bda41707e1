//===- serve.c - serve requests through the C API ------------------------===//
//
// braidServeModel: llama-tiny serves a JSON-lines file of three requests on
// pages of 4 positions and prompt chunks of 4 tokens, one refused (a token
// outside the vocabulary: exit code 2, the others served), each in the
// output file; then a run with no requests fails before any work.
//
//===----------------------------------------------------------------------===//

// RUN: printf '%%s\n' '{"prompt": [17, 200, 3, 45, 99, 12], "max_new_tokens": 3}' \
// RUN:   '{"prompt": [16, 256]}' '{"prompt_len": 5, "temperature": 0.8}' > %t.jsonl
// RUN: braid-capi-serve-test %braid_src/examples/llama-tiny.mlir %t.jsonl \
// RUN:   %t.output.jsonl > %t.out 2> %t.err
// RUN: FileCheck %s < %t.out
// RUN: FileCheck %s --check-prefix=OUTPUT < %t.output.jsonl
// RUN: FileCheck %s --check-prefix=ERR < %t.err

#include "common.h"

#include "braid-c/Driver.h"
#include "braid-c/Pipelines.h"

#include <inttypes.h>

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s model.mlir requests.jsonl output.jsonl\n", argv[0]);
    return 2;
  }
  size_t size;
  char *text = readFile(argv[1], &size);
  if (!text)
    return 2;
  MlirContext context = createBraidContext();

  // braid-run's defaults.
  // CHECK: defaults: page size 16, kv pages 0, prefill chunk 0, prefill batch 1, max new tokens 16, end token -1, top-p 1, static 0
  BraidServeOptions serve = braidServeOptionsGetDefault();
  printf("defaults: page size %" PRId64 ", kv pages %" PRId64
         ", prefill chunk %" PRId64 ", prefill batch %" PRId64
         ", max new tokens %" PRId64 ", end token %" PRId64
         ", top-p %g, static %d\n",
         serve.pageSize, serve.kvPages, serve.prefillChunk, serve.prefillBatch,
         serve.maxNewTokens, serve.endToken, serve.topP,
         (int)serve.staticBatching);

  // CHECK-LABEL: served:
  // CHECK-DAG: request 0: {{[0-9]+ [0-9]+ [0-9]+$}}
  // CHECK-DAG: request 1: refused: line 2: token id 256 at prompt[1] is outside the vocabulary [0, 256)
  // CHECK-DAG: request 2: {{[0-9]+ [0-9]+ [0-9]+ [0-9]+$}}
  // CHECK: serve: 3 requests (1 refused), {{.*}} pages peak {{[0-9]+}} of 8,
  // CHECK: exit code 2
  // OUTPUT-DAG: {"request": 0, "line": 1, "ids": [{{[0-9]+, [0-9]+, [0-9]+}}], "finish": "length",
  // OUTPUT-DAG: {"request": 1, "line": 2, "refused": "token id 256 at prompt[1] is outside the vocabulary [0, 256)"}
  // OUTPUT-DAG: {"request": 2, "line": 3, "ids": [{{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}], "finish": "length",
  serve.requestsFile = mlirStringRefCreateFromCString(argv[2]);
  serve.outputFile = mlirStringRefCreateFromCString(argv[3]);
  serve.maxNewTokens = 4;
  serve.pageSize = 4;
  serve.prefillChunk = 4;
  BraidRunOptions run = braidRunOptionsGetDefault();
  run.quiet = true;
  run.hasSeed = true;
  run.seed = 3;
  BraidTrainingPipelineOptions pipeline = braidTrainingPipelineOptionsCreate();
  MlirModule module =
      braidParseModel(context, mlirStringRefCreate(text, size),
                      mlirStringRefCreateFromCString("llama-tiny.mlir"));
  if (mlirModuleIsNull(module))
    return 2;
  printf("served:\n");
  fflush(stdout);
  int rc = braidServeModel(module, pipeline, &run, &serve);
  printf("exit code %d\n", rc);
  mlirModuleDestroy(module);

  // ERR: braidServeModel: no requests (give requestsFile, or a rate > 0)
  // CHECK-LABEL: no requests:
  // CHECK-NEXT: exit code 1
  BraidServeOptions none = braidServeOptionsGetDefault();
  module = braidParseModel(context, mlirStringRefCreate(text, size),
                           mlirStringRefCreateFromCString("llama-tiny.mlir"));
  printf("no requests:\n");
  fflush(stdout);
  rc = braidServeModel(module, pipeline, &run, &none);
  printf("exit code %d\n", rc);
  mlirModuleDestroy(module);

  braidTrainingPipelineOptionsDestroy(pipeline);
  mlirContextDestroy(context);
  free(text);
  return 0;
}
