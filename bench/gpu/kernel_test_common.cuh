//===- kernel_test_common.cuh - helpers of the CUDA kernel self-tests -*- CUDA -*-===//
//
// Shared by kernel_test.cu (forward kernels) and kernel_grad_test.cu
// (backward and optimizer kernels): the null runtime context the kernels are
// called with, a deterministic uniform generator, device/host copies and the
// error report. Include it in exactly one translation unit per program (it
// defines braid::rt::backendOf and braid_dtype_size).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_BENCH_GPU_KERNEL_TEST_COMMON_CUH
#define BRAID_BENCH_GPU_KERNEL_TEST_COMMON_CUH

#include "cuda/common.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

namespace braid::rt {
Backend *backendOf(struct ::braid_rt *) { return nullptr; }
} // namespace braid::rt
extern "C" int64_t braid_dtype_size(braid_dtype dt) {
  return dt == BRAID_F32 || dt == BRAID_I32 ? 4 : dt == BRAID_I64 ? 8 : 2;
}

namespace {

using V = std::vector<float>;
bool allOk = true;
uint32_t rngState = 12345;

float urand() { // [-1, 1)
  rngState = rngState * 1664525u + 1013904223u;
  return static_cast<float>(rngState >> 8) / 8388608.0f - 1.0f;
}
V randv(size_t n, float scale = 1.0f) {
  V v(n);
  for (float &x : v)
    x = scale * urand();
  return v;
}

template <typename T> T *dev(const std::vector<T> &h) {
  T *p;
  BRAID_CUDA_CHECK(cudaMalloc(&p, sizeof(T) * std::max<size_t>(h.size(), 1)));
  BRAID_CUDA_CHECK(cudaMemcpy(p, h.data(), sizeof(T) * h.size(), cudaMemcpyHostToDevice));
  return p;
}
template <typename T> T *devz(size_t n) {
  T *p;
  BRAID_CUDA_CHECK(cudaMalloc(&p, sizeof(T) * std::max<size_t>(n, 1)));
  BRAID_CUDA_CHECK(cudaMemset(p, 0xff, sizeof(T) * std::max<size_t>(n, 1))); // poison
  return p;
}
template <typename T> std::vector<T> host(const T *p, size_t n) {
  std::vector<T> h(n);
  BRAID_CUDA_CHECK(cudaDeviceSynchronize());
  braid::cuda::checkDeviceError();
  BRAID_CUDA_CHECK(cudaMemcpy(h.data(), p, sizeof(T) * n, cudaMemcpyDeviceToHost));
  return h;
}

/// o = the D values at x rotated to position pos (rotate-half RoPE, angles
/// pos theta^(-2i/D)); theta <= 0: x unchanged.
template <typename T>
void ropeRef(const T *x, int64_t pos, int D, double theta, std::vector<double> &o) {
  o.assign(x, x + D);
  if (theta <= 0)
    return;
  for (int i = 0; i < D / 2; ++i) {
    double a = pos * std::pow(theta, -2.0 * i / D), c = std::cos(a), s = std::sin(a);
    o[i] = x[i] * c - x[i + D / 2] * s;
    o[i + D / 2] = x[i + D / 2] * c + x[i] * s;
  }
}

void report(const char *name, const V &got, const std::vector<double> &ref, double tol) {
  double maxRef = 0, maxErr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    maxRef = std::max(maxRef, std::fabs(ref[i]));
    double e = std::fabs(ref[i] - got[i]);
    maxErr = std::isnan(e) ? INFINITY : std::max(maxErr, e);
  }
  double rel = maxErr / (maxRef > 0 ? maxRef : 1);
  bool ok = rel <= tol;
  allOk &= ok;
  std::printf("  %-34s max rel err %.2e %s\n", name, rel, ok ? "ok" : "FAIL");
}

} // namespace

#endif // BRAID_BENCH_GPU_KERNEL_TEST_COMMON_CUH
