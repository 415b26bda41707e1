//===- device_shim.cpp - device buffers for kernel tests through ctypes ---===//
//
// Linked with the CUDA kernels built for cudasim (libbraid_kernels_cudasim.a)
// into one shared library, so that a Python test can call braid_k_* kernels
// on device memory: allocate, upload, call the kernel (null runtime context:
// the legacy default stream, which cudasim runs synchronously), download.
// A download also reports what a kernel recorded in the device error record
// (an index out of range), as the CUDA backend does at a synchronization.
// As bench/gpu's self-tests, it defines what the kernels take from the
// runtime core (backendOf: no backend for a null context; braid_dtype_size),
// so that the library needs no libbraid_runtime.
//
//===----------------------------------------------------------------------===//

#include "braid/runtime.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace braid::cuda {
void checkDeviceError(); // cuda_backend.cu
} // namespace braid::cuda

namespace braid::rt {
class Backend;
Backend *backendOf(struct ::braid_rt *) { return nullptr; }
} // namespace braid::rt

extern "C" int64_t braid_dtype_size(braid_dtype dt) {
  return dt == BRAID_F32 || dt == BRAID_I32 ? 4 : dt == BRAID_I64 ? 8 : 2;
}

namespace {
void check(cudaError_t error, const char *what) {
  if (error != cudaSuccess) {
    std::fprintf(stderr, "device_shim: %s: %s\n", what, cudaGetErrorString(error));
    std::abort();
  }
}
} // namespace

extern "C" {

void *braid_test_device_alloc(int64_t bytes) {
  void *p = nullptr;
  check(cudaMalloc(&p, size_t(bytes > 0 ? bytes : 1)), "cudaMalloc");
  return p;
}

void braid_test_device_free(void *p) { check(cudaFree(p), "cudaFree"); }

void braid_test_upload(void *device, const void *host, int64_t bytes) {
  check(cudaMemcpy(device, host, size_t(bytes), cudaMemcpyHostToDevice), "upload");
}

void braid_test_download(void *host, const void *device, int64_t bytes) {
  check(cudaDeviceSynchronize(), "synchronize");
  check(cudaMemcpy(host, device, size_t(bytes), cudaMemcpyDeviceToHost), "download");
  braid::cuda::checkDeviceError();
}

} // extern "C"
