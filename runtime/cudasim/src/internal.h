//===- internal.h - cudasim: what its sources share ------------------------===//

#ifndef BRAID_CUDASIM_INTERNAL_H
#define BRAID_CUDASIM_INTERNAL_H

#include "cudasim/cudasim.h"

namespace cudasim {

/// The error the next cudaGetLastError() returns (per host thread, as CUDA's).
void setLastError(cudaError_t error);

/// Aborts with `message` (printf format) prefixed by "cudasim: ".
[[noreturn]] void fail(const char *format, ...) __attribute__((format(printf, 1, 2)));

} // namespace cudasim

#endif // BRAID_CUDASIM_INTERNAL_H
