//===- internal.h - cudasim: what its sources share ------------------------===//

#ifndef BRAID_CUDASIM_INTERNAL_H
#define BRAID_CUDASIM_INTERNAL_H

#include "cudasim/cudasim.h"

namespace cudasim {

/// The error the next cudaGetLastError() returns (per host thread, as CUDA's).
void setLastError(cudaError_t error);

/// An H200's memory, which cudaGetDeviceProperties and cudaMemGetInfo report
/// (the latter less what is allocated).
constexpr size_t kDeviceMemoryBytes = size_t(141) << 30;

/// Whether `stream` is the legacy default stream (null) or a live created one.
bool knownStream(cudaStream_t stream);

/// Aborts with `message` (printf format) prefixed by "cudasim: ".
[[noreturn]] void fail(const char *format, ...) __attribute__((format(printf, 1, 2)));

} // namespace cudasim

#endif // BRAID_CUDASIM_INTERNAL_H
