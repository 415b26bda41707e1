//===- common.h - helpers of the C API tests --------------------*- C -*-===//

#ifndef BRAID_TEST_CAPI_COMMON_H
#define BRAID_TEST_CAPI_COMMON_H

#include "braid-c/Dialects.h"

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#include <stdio.h>
#include <stdlib.h>

/// An MlirStringCallback that writes to stdout.
static inline void printToStdout(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

/// The contents of `path` (NUL-terminated, to free), its length in `size`;
/// NULL after a message when it cannot be read.
static inline char *readFile(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long length = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)length + 1);
  if (length < 0 || fread(text, 1, (size_t)length, f) != (size_t)length) {
    fprintf(stderr, "cannot read %s\n", path);
    fclose(f);
    free(text);
    return NULL;
  }
  text[length] = 0;
  *size = (size_t)length;
  fclose(f);
  return text;
}

/// The model file a test takes as its one argument, read by readFile; NULL
/// after a message (a usage line or readFile's).
static inline char *readModelArgument(int argc, char **argv, size_t *size) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s model.mlir\n", argv[0]);
    return NULL;
  }
  return readFile(argv[1], size);
}

/// A context with every dialect Braid uses loaded.
static inline MlirContext createBraidContext(void) {
  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  braidRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(context);
  return context;
}

#endif // BRAID_TEST_CAPI_COMMON_H
