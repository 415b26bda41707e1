//===- Dialects.cpp - C API of Braid's dialects ---------------------------===//

#include "braid-c/Dialects.h"

#include "braid/InitAllDialects.h"
#include "dialects/braid/IR/BraidDialect.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Braid, braid, mlir::braid::BraidDialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Dist, dist, mlir::dist::DistDialect)

void braidRegisterAllDialects(MlirDialectRegistry registry) {
  braid::registerAllDialects(*unwrap(registry));
}
