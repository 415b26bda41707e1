//===-- braid-c/Version.h - C API of Braid's version --------------*- C -*-===//
//
// The version of the Braid a program is linked against, as --version prints
// it on the tools (braid/Support/Version.h); braid.__version__ in Python.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_C_VERSION_H
#define BRAID_C_VERSION_H

#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Braid's version, "MAJOR.MINOR.PATCH" (static storage).
MLIR_CAPI_EXPORTED MlirStringRef braidGetVersion(void);

/// The abbreviated hash of the git commit the library was built from; empty
/// when its sources were not a git checkout (static storage).
MLIR_CAPI_EXPORTED MlirStringRef braidGetCommit(void);

#ifdef __cplusplus
}
#endif

#endif // BRAID_C_VERSION_H
