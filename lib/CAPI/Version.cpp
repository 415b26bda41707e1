//===- Version.cpp - C API of Braid's version -----------------------------===//

#include "braid-c/Version.h"

#include "braid/Support/Version.h"

#include "mlir/CAPI/Support.h"

MlirStringRef braidGetVersion(void) { return wrap(braid::getVersion()); }

MlirStringRef braidGetCommit(void) { return wrap(braid::getCommit()); }
