//===- ir.c - Braid's dialects through MLIR's C API ----------------------===//
//
// Registers Braid's dialects into an MlirDialectRegistry, parses a model
// with MLIR's parser and with braidParseModel, and prints it back; the
// library's version (braidGetVersion) is the tools'.
//
//===----------------------------------------------------------------------===//

// RUN: braid-capi-ir-test %braid_src/examples/gpt-tiny.mlir 2>&1 | FileCheck %s
// RUN: braid-capi-ir-test %braid_src/examples/gpt-tiny.mlir > %t 2>&1
// RUN: braid-opt --version >> %t
// RUN: FileCheck %s --check-prefix=SAME < %t
// SAME: version: [[VERSION:[0-9]+\.[0-9]+\.[0-9]+]], commit [[COMMIT:[0-9a-f]*]].
// SAME: Braid version [[VERSION]]

#include "common.h"

#include "braid-c/Driver.h"
#include "braid-c/Version.h"

int main(int argc, char **argv) {
  size_t size;
  char *text = readModelArgument(argc, argv, &size);
  if (!text)
    return 2;

  // CHECK: version: {{[0-9]+\.[0-9]+\.[0-9]+}}, commit {{[0-9a-f]*}}.
  MlirStringRef version = braidGetVersion(), commit = braidGetCommit();
  printf("version: %.*s, commit %.*s.\n", (int)version.length, version.data,
         (int)commit.length, commit.data);

  // CHECK: dialects: braid dist
  MlirStringRef braid = mlirDialectHandleGetNamespace(mlirGetDialectHandle__braid__());
  MlirStringRef dist = mlirDialectHandleGetNamespace(mlirGetDialectHandle__dist__());
  printf("dialects: %.*s %.*s\n", (int)braid.length, braid.data, (int)dist.length,
         dist.data);

  MlirContext context = createBraidContext();

  // A model parses with MLIR's own parser and prints back.
  MlirModule module =
      mlirModuleCreateParse(context, mlirStringRefCreate(text, size));
  if (mlirModuleIsNull(module))
    return 1;
  // CHECK: module attributes {braid.model = {{.*}}name = "gpt-tiny"
  // CHECK: braid.param @tok_embeddings normal(2.000000e-02) : tensor<97x64xf32>
  // CHECK: func.func @step(
  // CHECK: braid.cross_entropy
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");
  mlirModuleDestroy(module);

  // braidParseModel names ops after the source's SSA names (the names of
  // dumps and traces).
  // CHECK-LABEL: named:
  // CHECK: loc("logits"
  module = braidParseModel(context, mlirStringRefCreate(text, size),
                           mlirStringRefCreateFromCString(argv[1]));
  if (mlirModuleIsNull(module))
    return 1;
  printf("named:\n");
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
  mlirOperationPrintWithFlags(mlirModuleGetOperation(module), flags, printToStdout,
                              NULL);
  mlirOpPrintingFlagsDestroy(flags);
  printf("\n");
  mlirModuleDestroy(module);

  // A module that does not parse is a null module after a located message.
  // CHECK-LABEL: bad model:
  // CHECK: bad.mlir:2:7: error: expected operation name in quotes
  // CHECK: null: 1
  printf("bad model:\n");
  fflush(stdout);
  module = braidParseModel(context, mlirStringRefCreateFromCString("module {\n  %x = \n}"),
                           mlirStringRefCreateFromCString("bad.mlir"));
  fflush(stderr);
  printf("null: %d\n", mlirModuleIsNull(module));

  mlirContextDestroy(context);
  free(text);
  return 0;
}
