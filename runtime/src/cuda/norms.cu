//===- norms.cu - rms_norm and layer_norm: one block per row --------------===//
//
// Each block reduces one row of H elements in f32 (fixed-order block
// reduction: deterministic), then writes the normalized row. layer_norm uses
// two passes (mean, then the biased variance of x - mean) for accuracy.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

namespace braid::cuda {
namespace {

template <typename T>
__global__ void __launch_bounds__(kThreads)
    rmsNormKernel(const T *__restrict__ x, const T *__restrict__ gamma, T *__restrict__ y,
                  int64_t hidden, float epsilon) {
  __shared__ float shared[32];
  const T *row = x + blockIdx.x * hidden;
  T *outRow = y + blockIdx.x * hidden;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
    float v = toF(row[i]);
    sum = fmaf(v, v, sum);
  }
  sum = blockSum(sum, shared);
  float denom = sqrtf(sum / static_cast<float>(hidden) + epsilon);
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
    outRow[i] = fromF<T>(toF(row[i]) / denom * toF(gamma[i]));
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    layerNormKernel(const T *__restrict__ x, const T *__restrict__ gamma,
                    const T *__restrict__ beta, T *__restrict__ y, int64_t hidden,
                    float epsilon) {
  __shared__ float shared[32];
  const T *row = x + blockIdx.x * hidden;
  T *outRow = y + blockIdx.x * hidden;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
    sum += toF(row[i]);
  float mean = blockSum(sum, shared) / static_cast<float>(hidden);
  float sq = 0.0f;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
    float d = toF(row[i]) - mean;
    sq = fmaf(d, d, sq);
  }
  float var = blockSum(sq, shared) / static_cast<float>(hidden);
  float denom = sqrtf(var + epsilon);
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
    outRow[i] = fromF<T>((toF(row[i]) - mean) / denom * toF(gamma[i]) + toF(beta[i]));
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_rms_norm(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma, void *y,
                      int64_t rows, int64_t hidden, double epsilon) {
  using namespace braid::cuda;
  if (rows <= 0 || hidden <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchRows("rms_norm", rows, streamOf(rt), rmsNormKernel<T>, x, gamma, y,
                                  hidden, epsilon));
}

void braid_k_layer_norm(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma,
                        const void *beta, void *y, int64_t rows, int64_t hidden, double epsilon) {
  using namespace braid::cuda;
  if (rows <= 0 || hidden <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchRows("layer_norm", rows, streamOf(rt), layerNormKernel<T>, x, gamma,
                                  beta, y, hidden, epsilon));
}

} // extern "C"
