//===- grad_norms.cu - rms_norm and layer_norm backward -------------------===//
//
// Pass 1, one block per row (fixed-order block reductions, f32): recomputes
// the row statistics, writes dx and saves (mean, rstd) of the row in the
// runtime scratch.
//   rms:   r = 1/sqrt(mean(x^2) + eps), gd = gamma * dy
//          dx = r gd - x r^3 mean(gd x)
//   layer: xh = (x - mean) r, gd = gamma * dy
//          dx = r (gd - mean(gd) - xh mean(gd xh))
// Pass 2 (parameter grads, deterministic, no atomics): each thread owns a
// column and a chunk of 64 rows and sums dy * xh (and dy for dbeta) into a
// partial[chunk][H] buffer; pass 3 sums the chunks in order
// (grad_common.cuh). Bitwise reproducible.
//
//===----------------------------------------------------------------------===//

#include "cuda/grad_common.cuh"

namespace braid::cuda {
namespace {

using grad::kThreads;

template <typename T, bool kLayer>
__global__ void __launch_bounds__(kThreads)
    normGradRowKernel(const T *__restrict__ x, const T *__restrict__ gamma,
                      const T *__restrict__ dy, T *__restrict__ dx, float2 *__restrict__ stats,
                      int64_t hidden, float epsilon) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const T *xr = x + r * hidden;
  const T *dyr = dy + r * hidden;
  T *dxr = dx + r * hidden;
  const float invH = 1.0f / static_cast<float>(hidden);
  float mean = 0.0f;
  if (kLayer) {
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
      s += toF(xr[i]);
    mean = blockSum(s, shared) * invH;
  }
  float sq = 0.0f;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
    float d = toF(xr[i]) - mean;
    sq = fmaf(d, d, sq);
  }
  const float rstd = 1.0f / sqrtf(blockSum(sq, shared) * invH + epsilon);
  float sumGd = 0.0f, sumGdXh = 0.0f;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
    float gd = toF(gamma[i]) * toF(dyr[i]);
    float xh = (toF(xr[i]) - mean) * rstd;
    sumGd += gd;
    sumGdXh = fmaf(gd, xh, sumGdXh);
  }
  const float meanGdXh = blockSum(sumGdXh, shared) * invH;
  const float meanGd = kLayer ? blockSum(sumGd, shared) * invH : 0.0f;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
    float gd = toF(gamma[i]) * toF(dyr[i]);
    float xh = (toF(xr[i]) - mean) * rstd;
    dxr[i] = fromF<T>(rstd * (gd - meanGd - xh * meanGdXh));
  }
  if (threadIdx.x == 0)
    stats[r] = make_float2(mean, rstd);
}

// partial[chunk][c] = sum over the chunk's rows of dy * xh; partialBeta (when
// non-null) the same of dy. Single chunk: writes the results directly.
template <typename T>
__global__ void normGradParamKernel(const T *__restrict__ x, const T *__restrict__ dy,
                                    const float2 *__restrict__ stats, float *__restrict__ partial,
                                    float *__restrict__ partialBeta, T *__restrict__ dgamma,
                                    T *__restrict__ dbeta, int64_t rows, int64_t hidden) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c >= hidden)
    return;
  const int64_t r0 = blockIdx.y * grad::kRowsPerChunk;
  const int64_t r1 = min(rows, r0 + grad::kRowsPerChunk);
  float g = 0.0f, b = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    float2 st = stats[r];
    float d = toF(dy[r * hidden + c]);
    g = fmaf(d, (toF(x[r * hidden + c]) - st.x) * st.y, g);
    b += d;
  }
  if (gridDim.y == 1) {
    if (dgamma)
      dgamma[c] = fromF<T>(g);
    if (dbeta)
      dbeta[c] = fromF<T>(b);
    return;
  }
  partial[blockIdx.y * hidden + c] = g;
  if (partialBeta)
    partialBeta[blockIdx.y * hidden + c] = b;
}

template <typename T, bool kLayer>
void normGrad(cudaStream_t stream, const void *x, const void *gamma, const void *dy, void *dx,
              void *dgamma, void *dbeta, int64_t rows, int64_t hidden, double epsilon) {
  const int64_t chunks = grad::chunksFor(rows);
  const bool wantParams = dgamma || dbeta;
  const int64_t statsBytes = grad::alignUp(rows * static_cast<int64_t>(sizeof(float2)));
  const int64_t partBytes = grad::alignUp(chunks * hidden * static_cast<int64_t>(sizeof(float)));
  int64_t total = statsBytes + (wantParams && chunks > 1 ? 2 * partBytes : 0);
  char *base = static_cast<char *>(scratch(stream, total));
  auto *stats = reinterpret_cast<float2 *>(base);
  float *partial = reinterpret_cast<float *>(base + statsBytes);
  float *partialBeta = reinterpret_cast<float *>(base + statsBytes + partBytes);

  normGradRowKernel<T, kLayer><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const T *>(x), static_cast<const T *>(gamma), static_cast<const T *>(dy),
      static_cast<T *>(dx), stats, hidden, static_cast<float>(epsilon));
  BRAID_CUDA_CHECK_LAUNCH();
  if (!wantParams)
    return;
  dim3 grid(static_cast<unsigned>((hidden + kThreads - 1) / kThreads),
            static_cast<unsigned>(chunks));
  normGradParamKernel<T><<<grid, kThreads, 0, stream>>>(
      static_cast<const T *>(x), static_cast<const T *>(dy), stats, partial,
      dbeta ? partialBeta : nullptr, static_cast<T *>(dgamma), static_cast<T *>(dbeta), rows,
      hidden);
  BRAID_CUDA_CHECK_LAUNCH();
  if (chunks > 1) {
    if (dgamma)
      grad::launchReduceChunks<T>(stream, partial, dgamma, chunks, hidden);
    if (dbeta)
      grad::launchReduceChunks<T>(stream, partialBeta, dbeta, chunks, hidden);
  }
}

void checkNorm(const char *op, int64_t rows) {
  if (rows > 0x7fffffffLL || rows > 65535LL * grad::kRowsPerChunk)
    BRAID_CUDA_FATAL("%s: %lld rows exceed the grid", op, static_cast<long long>(rows));
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_rms_norm_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma,
                           const void *dy, void *dx, void *dgamma, int64_t rows, int64_t hidden,
                           double epsilon) {
  using namespace braid::cuda;
  if (hidden <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  if (rows <= 0) {
    if (dgamma)
      BRAID_CUDA_CHECK(cudaMemsetAsync(dgamma, 0, hidden * braid_dtype_size(dt), stream));
    return;
  }
  checkNorm("rms_norm_grad", rows);
  BRAID_DISPATCH_FLOAT(dt, T, {
    normGrad<T, false>(stream, x, gamma, dy, dx, dgamma, nullptr, rows, hidden, epsilon);
  });
}

void braid_k_layer_norm_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma,
                             const void *dy, void *dx, void *dgamma, void *dbeta, int64_t rows,
                             int64_t hidden, double epsilon) {
  using namespace braid::cuda;
  if (hidden <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  if (rows <= 0) {
    if (dgamma)
      BRAID_CUDA_CHECK(cudaMemsetAsync(dgamma, 0, hidden * braid_dtype_size(dt), stream));
    if (dbeta)
      BRAID_CUDA_CHECK(cudaMemsetAsync(dbeta, 0, hidden * braid_dtype_size(dt), stream));
    return;
  }
  checkNorm("layer_norm_grad", rows);
  BRAID_DISPATCH_FLOAT(dt, T, {
    normGrad<T, true>(stream, x, gamma, dy, dx, dgamma, dbeta, rows, hidden, epsilon);
  });
}

} // extern "C"
