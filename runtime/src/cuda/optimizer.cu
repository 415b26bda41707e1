//===- optimizer.cu - gradient clipping, SGD, AdamW, counters, convert ----===//
//
// sum_squares: deterministic two-level reduction, no float atomics: a fixed
// grid (the block count depends only on n) writes one f32 partial per block
// (grid-stride loop, fixed-order block reduction) into the runtime scratch;
// one block then sums the partials in a fixed order and adds the total to
// *sumsq. Bitwise reproducible run to run.
//
// clip_coefficient / increment: one thread (device scalars, no host sync); a
// NaN norm gives a NaN coefficient (as the CPU kernel), not 1.
//
// sgd_update / adamw_update: grid-stride, in place, f32 arithmetic; p and grad
// in `dt`, m and v in f32. coef may be NULL (no clipping: 1). AdamW reads t
// from the device f32 counter; every block computes the bias corrections
// 1 - b1^t and 1 - b2^t once, with pow in double, and shares them through
// shared memory. Weight decay uses p before the update (decoupled, AdamW).
//
// convert: between f32 / bf16 / f16 (same type: a copy); zero: cudaMemsetAsync
// (all-zero bits are 0 in every dtype).
//
//===----------------------------------------------------------------------===//

#include "cuda/grad_common.cuh"

namespace braid::cuda {
namespace {

constexpr int kMaxSumBlocks = 1024;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    sumSquaresPartialKernel(const T *__restrict__ x, float *__restrict__ partial, int64_t n) {
  __shared__ float shared[32];
  float acc = 0.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float v = toF(x[i]);
    acc = fmaf(v, v, acc);
  }
  acc = blockSum(acc, shared);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = acc;
}

__global__ void __launch_bounds__(kThreads)
    sumSquaresFinalKernel(const float *__restrict__ partial, int blocks, float *__restrict__ sumsq) {
  __shared__ float shared[32];
  float acc = 0.0f;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x)
    acc += partial[i];
  acc = blockSum(acc, shared);
  if (threadIdx.x == 0)
    *sumsq += acc;
}

__global__ void clipCoefficientKernel(const float *__restrict__ sumsq, float *__restrict__ coef,
                                      double maxNorm) {
  if (maxNorm <= 0.0) {
    *coef = 1.0f;
    return;
  }
  double c = maxNorm / (sqrt(static_cast<double>(*sumsq)) + 1e-6);
  *coef = static_cast<float>(isnan(c) || c < 1.0 ? c : 1.0); // a NaN norm stays visible
}

__global__ void incrementKernel(float *step) { *step += 1.0f; }

template <typename T>
__global__ void sgdKernel(T *__restrict__ param, const T *__restrict__ grad,
                          const float *__restrict__ coef, int64_t n, float lr, float wd) {
  const float c = coef ? *coef : 1.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float p = toF(param[i]);
    float g = c * toF(grad[i]);
    param[i] = fromF<T>(p - lr * (g + wd * p));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    adamwKernel(T *__restrict__ param, const T *__restrict__ grad, float *__restrict__ m,
                float *__restrict__ v, const float *__restrict__ coef,
                const float *__restrict__ step, int64_t n, float lr, double beta1, double beta2,
                float eps, float wd) {
  __shared__ float corr[2];
  if (threadIdx.x == 0) {
    double t = static_cast<double>(*step);
    corr[0] = static_cast<float>(1.0 - pow(beta1, t));
    corr[1] = static_cast<float>(1.0 - pow(beta2, t));
  }
  __syncthreads();
  const float c = coef ? *coef : 1.0f;
  const float bc1 = corr[0], bc2 = corr[1];
  const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float p = toF(param[i]);
    float g = c * toF(grad[i]);
    float mi = b1 * m[i] + (1.0f - b1) * g;
    float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = fromF<T>(p - lr * (mi / bc1 / (sqrtf(vi / bc2) + eps) + wd * p));
  }
}

template <typename From, typename To>
__global__ void convertKernel(const From *__restrict__ x, To *__restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fromF<To>(toF(x[i]));
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_sum_squares(braid_rt *rt, braid_dtype dt, const void *x, float *sumsq, int64_t n) {
  using namespace braid::cuda;
  if (n <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  int blocks = static_cast<int>(gridFor(n, kThreads, kMaxSumBlocks));
  float *partial = static_cast<float *>(scratch(stream, blocks * static_cast<int64_t>(sizeof(float))));
  BRAID_DISPATCH_FLOAT(dt, T,
                       launch("sum_squares", blocks, kThreads, stream, sumSquaresPartialKernel<T>,
                              x, partial, n));
  launch("sum_squares", 1, kThreads, stream, sumSquaresFinalKernel, partial, blocks, sumsq);
}

void braid_k_clip_coefficient(braid_rt *rt, const float *sumsq, float *coef, double max_norm) {
  using namespace braid::cuda;
  launch("clip_coefficient", 1, 1, streamOf(rt), clipCoefficientKernel, sumsq, coef, max_norm);
}

void braid_k_sgd_update(braid_rt *rt, braid_dtype dt, void *param, const void *grad,
                        const float *coef, int64_t n, double lr, double weight_decay) {
  using namespace braid::cuda;
  if (n <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("sgd_update", n, streamOf(rt), sgdKernel<T>, param, grad,
                                      coef, n, lr, weight_decay));
}

void braid_k_adamw_update(braid_rt *rt, braid_dtype dt, void *param, const void *grad, float *m,
                          float *v, const float *coef, const float *step, int64_t n,
                          const braid_adamw_params *p) {
  using namespace braid::cuda;
  if (n <= 0)
    return;
  if (!step)
    BRAID_CUDA_FATAL("adamw_update: the step counter is NULL");
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("adamw_update", n, streamOf(rt), adamwKernel<T>, param, grad,
                                      m, v, coef, step, n, p->lr, p->beta1, p->beta2, p->eps,
                                      p->weight_decay));
}

void braid_k_increment(braid_rt *rt, float *step) {
  using namespace braid::cuda;
  launch("increment", 1, 1, streamOf(rt), incrementKernel, step);
}

void braid_k_convert(braid_rt *rt, braid_dtype from, braid_dtype to, const void *x, void *y,
                     int64_t n) {
  using namespace braid::cuda;
  if (n <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  if (from == to) {
    BRAID_CUDA_CHECK(cudaMemcpyAsync(y, x, static_cast<size_t>(n * braid_dtype_size(from)),
                                     cudaMemcpyDeviceToDevice, stream));
    return;
  }
  BRAID_DISPATCH_FLOAT(from, F, {
    BRAID_DISPATCH_FLOAT(to, U,
                         launchElements("convert", n, stream, convertKernel<F, U>, x, y, n));
  });
}

void braid_k_zero(braid_rt *rt, braid_dtype dt, void *y, int64_t n) {
  using namespace braid::cuda;
  if (n <= 0)
    return;
  int64_t size = braid_dtype_size(dt);
  if (size <= 0)
    BRAID_CUDA_FATAL("zero: unknown dtype %d", static_cast<int>(dt));
  BRAID_CUDA_CHECK(cudaMemsetAsync(y, 0, static_cast<size_t>(n * size), streamOf(rt)));
}

} // extern "C"
