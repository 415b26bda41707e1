//===-- braid-c/Passes.h - C API of Braid's passes ----------------*- C -*-===//
//
// Registration of Braid's passes and pipelines, so that MLIR's C API parses
// them by name (mlirParsePassPipeline, mlirOpPassManagerAddPipeline), e.g.
// "builtin.module(braid-training-pipeline{grid=dp=2,tp=2 zero=1})".
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_C_PASSES_H
#define BRAID_C_PASSES_H

#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Registers every Braid pass and the --braid-training-pipeline pipeline in
/// MLIR's global pass registry (what braid-opt registers).
MLIR_CAPI_EXPORTED void braidRegisterAllPasses(void);

#ifdef __cplusplus
}
#endif

#endif // BRAID_C_PASSES_H
