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
  const auto [c, r0, r1] = grad::columnChunk(rows);
  if (c >= hidden)
    return;
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

  const char *name = kLayer ? "layer_norm_grad" : "rms_norm_grad";
  launchRows(name, rows, stream, normGradRowKernel<T, kLayer>, x, gamma, dy, dx, stats, hidden,
             epsilon);
  if (!wantParams)
    return;
  launch(name, grad::chunkGrid(hidden, chunks), kThreads, stream, normGradParamKernel<T>, x, dy,
         stats, partial, dbeta ? partialBeta : nullptr, dgamma, dbeta, rows, hidden);
  if (chunks > 1) {
    if (dgamma)
      grad::launchReduceChunks<T>(stream, partial, dgamma, chunks, hidden);
    if (dbeta)
      grad::launchReduceChunks<T>(stream, partialBeta, dbeta, chunks, hidden);
  }
}

/// The start of a norm's gradient: false when there is nothing to compute
/// (the parameter gradients of zero rows are zeros); stops when the rows
/// exceed the grids.
bool startNormGrad(const char *kernel, cudaStream_t stream, braid_dtype dt, void *dgamma,
                   void *dbeta, int64_t rows, int64_t hidden) {
  if (hidden <= 0)
    return false;
  if (rows <= 0) {
    for (void *param : {dgamma, dbeta})
      if (param)
        BRAID_CUDA_CHECK(cudaMemsetAsync(param, 0, hidden * braid_dtype_size(dt), stream));
    return false;
  }
  checkRows(kernel, rows);
  grad::checkedChunks(kernel, rows);
  return true;
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_rms_norm_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma,
                           const void *dy, void *dx, void *dgamma, int64_t rows, int64_t hidden,
                           double epsilon) {
  using namespace braid::cuda;
  cudaStream_t stream = streamOf(rt);
  if (startNormGrad("rms_norm_grad", stream, dt, dgamma, nullptr, rows, hidden))
    BRAID_DISPATCH_FLOAT(dt, T,
                         normGrad<T, false>(stream, x, gamma, dy, dx, dgamma, nullptr, rows,
                                            hidden, epsilon));
}

void braid_k_layer_norm_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma,
                             const void *dy, void *dx, void *dgamma, void *dbeta, int64_t rows,
                             int64_t hidden, double epsilon) {
  using namespace braid::cuda;
  cudaStream_t stream = streamOf(rt);
  if (startNormGrad("layer_norm_grad", stream, dt, dgamma, dbeta, rows, hidden))
    BRAID_DISPATCH_FLOAT(dt, T,
                         normGrad<T, true>(stream, x, gamma, dy, dx, dgamma, dbeta, rows, hidden,
                                           epsilon));
}

} // extern "C"
