//===- softmax.cu - softmax and its gradient: one block per row -----------===//
//
// Each block reduces one row of the last dimension in f32 (fixed-order block
// reductions: deterministic): the max, then the sum of exp(x - max), then
// writes exp(x - max) / sum. The gradient reduces sum(dy * y) the same way.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

namespace braid::cuda {
namespace {

template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmaxKernel(const T *__restrict__ x, T *__restrict__ y, int64_t n) {
  __shared__ float shared[32];
  const T *row = x + blockIdx.x * n;
  T *outRow = y + blockIdx.x * n;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    m = fmaxf(m, toF(row[i]));
  m = blockMax(m, shared);
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sum += expf(toF(row[i]) - m);
  float inv = 1.0f / blockSum(sum, shared);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    outRow[i] = fromF<T>(expf(toF(row[i]) - m) * inv);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmaxGradKernel(const T *__restrict__ y, const T *__restrict__ dy, T *__restrict__ dx,
                      int64_t n) {
  __shared__ float shared[32];
  const int64_t base = blockIdx.x * n;
  float dot = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    dot = fmaf(toF(dy[base + i]), toF(y[base + i]), dot);
  dot = blockSum(dot, shared);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    dx[base + i] = fromF<T>(toF(y[base + i]) * (toF(dy[base + i]) - dot));
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_softmax(braid_rt *rt, braid_dtype dt, const void *x, void *y, int64_t rows,
                     int64_t n) {
  using namespace braid::cuda;
  if (rows <= 0 || n <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T, launchRows("softmax", rows, streamOf(rt), softmaxKernel<T>, x, y, n));
}

void braid_k_softmax_grad(braid_rt *rt, braid_dtype dt, const void *y, const void *dy, void *dx,
                          int64_t rows, int64_t n) {
  using namespace braid::cuda;
  if (rows <= 0 || n <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchRows("softmax_grad", rows, streamOf(rt), softmaxGradKernel<T>, y, dy,
                                  dx, n));
}

} // extern "C"
