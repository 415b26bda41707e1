//===- RuntimeLocation.h - where programs find the runtime ------*- C++ -*-===//
//
// The programs the driver builds include the runtime's headers and link its
// libraries. They come from the installation the driver's own code was
// loaded from (P/lib/libBraidCAPI.so, P/bin/braid-run, a wheel's
// braid/lib/libBraidCAPI.so: P is the parent of that file's folder), so that
// an installation keeps working wherever it is moved; from the build tree
// when the code runs from the build tree; or from $BRAID_PREFIX, which
// overrides both and must name a complete installation.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_RUNTIMELOCATION_H
#define BRAID_DRIVER_RUNTIMELOCATION_H

#include "llvm/Support/LogicalResult.h"

#include <string>

namespace braid::driver {

/// The runtime's headers (include/braid-runtime of an installation) and the
/// folder of its libraries (lib).
struct RuntimeLocation {
  std::string include, lib;
};

/// Finds the runtime as above, or prints why it cannot (a $BRAID_PREFIX
/// that is missing or incomplete, an installation without its runtime) and
/// fails. Looked up anew on each call: $BRAID_PREFIX may change in a
/// long-lived host such as Python.
llvm::FailureOr<RuntimeLocation> findRuntime();

} // namespace braid::driver

#endif // BRAID_DRIVER_RUNTIMELOCATION_H
