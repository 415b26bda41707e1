//===- check.h - CUDA error checking for the Braid CUDA backend -*- C++ -*-===//
//
// Every CUDA / cuBLASLt call of the backend and the kernels goes through
// BRAID_CUDA_CHECK / BRAID_CUBLAS_CHECK: on failure they print the call, the
// file and line and the error string, then abort. Launches are followed by
// BRAID_CUDA_CHECK_LAUNCH() (launch-configuration errors surface at once;
// faults inside a kernel surface at the next synchronizing call).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_CHECK_H
#define BRAID_RUNTIME_CUDA_CHECK_H

#include "braid/abort_message.h"

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>

namespace braid::cuda {

[[noreturn]] inline void fatal(const char *file, int line, const char *format, ...) {
  char prefix[512];
  std::snprintf(prefix, sizeof prefix, "braid runtime (cuda): %s:%d: ", file, line);
  va_list args;
  va_start(args, format);
  abortWithMessage(prefix, format, args);
}

inline void check(cudaError_t error, const char *expr, const char *file, int line) {
  if (error != cudaSuccess)
    fatal(file, line, "%s failed: %s (%s)", expr, cudaGetErrorString(error),
          cudaGetErrorName(error));
}

} // namespace braid::cuda

#define BRAID_CUDA_CHECK(expr) ::braid::cuda::check((expr), #expr, __FILE__, __LINE__)
#define BRAID_CUDA_CHECK_LAUNCH()                                                                \
  ::braid::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
#define BRAID_CUDA_FATAL(...) ::braid::cuda::fatal(__FILE__, __LINE__, __VA_ARGS__)

#endif // BRAID_RUNTIME_CUDA_CHECK_H
