//===-- braid-c/Dialects.h - C API of Braid's dialects ------------*- C -*-===//
//
// Braid's dialects (braid: the model graph; dist: the per-rank program) for
// MLIR's C API, and the registration of every dialect a Braid model or pass
// uses, so that an embedding program parses models with mlirModuleCreateParse
// and prints them with mlirOperationPrint.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_C_DIALECTS_H
#define BRAID_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Braid, braid);
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Dist, dist);

/// Inserts every dialect Braid's models and passes use into `registry`:
/// braid, dist, and the upstream ones (func, shard, tensor, ...) with the
/// sharding models Braid's partitioner relies on.
MLIR_CAPI_EXPORTED void braidRegisterAllDialects(MlirDialectRegistry registry);

#ifdef __cplusplus
}
#endif

#endif // BRAID_C_DIALECTS_H
