//===- grad_mamba.cu - conv1d and selective_scan backward -----------------===//
//
// conv1d_grad (f32 accumulation, deterministic):
//   dx[b,t,c] = sum_j w[c,j] dy[b, t+(K-1)-j, c]   (terms past S-1 are 0),
//     one thread per element;
//   dw[c,j] = sum_{b,t} dy[b,t,c] x[b, t-(K-1)+j, c], db[c] = sum dy[b,t,c]:
//     per-chunk partial sums over 64 (b,t) rows (one thread per channel) in the
//     runtime scratch, then the chunks in order (grad_common.cuh). K <= 32.
//
// selective_scan_grad: the one-chunk case of selective_scan_chunk_grad
// (mamba_chunk.cu: one thread per (b, d) channel, states recomputed from
// checkpoints every 64 steps, deterministic sums over channels).
//
//===----------------------------------------------------------------------===//

#include "cuda/grad_common.cuh"

namespace braid::cuda {
namespace {

constexpr int kMaxConvK = 32;

template <typename T>
__global__ void conv1dGradXKernel(const T *__restrict__ w, const T *__restrict__ dy,
                                  T *__restrict__ dx, int64_t seq, int64_t channels,
                                  int64_t kernel, int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = i % channels;
    int64_t bt = i / channels;
    int64_t t = bt % seq, b = bt / seq;
    float acc = 0.0f;
    for (int64_t j = 0; j < kernel; ++j) {
      int64_t dst = t + (kernel - 1) - j;
      if (dst < seq)
        acc = fmaf(toF(w[c * kernel + j]), toF(dy[(b * seq + dst) * channels + c]), acc);
    }
    dx[i] = fromF<T>(acc);
  }
}

// One thread per channel and chunk of rows r = b * seq + t.
template <typename T>
__global__ void conv1dGradParamKernel(const T *__restrict__ x, const T *__restrict__ dy,
                                      float *__restrict__ partW, float *__restrict__ partB,
                                      T *__restrict__ dw, T *__restrict__ db, int64_t rows,
                                      int64_t seq, int64_t channels, int kernel) {
  const auto [c, r0, r1] = grad::columnChunk(rows);
  if (c >= channels)
    return;
  float acc[kMaxConvK];
#pragma unroll
  for (int j = 0; j < kMaxConvK; ++j)
    acc[j] = 0.0f;
  float accB = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t t = r % seq;
    const float g = toF(dy[r * channels + c]);
    accB += g;
#pragma unroll
    for (int j = 0; j < kMaxConvK; ++j) {
      if (j < kernel) {
        int64_t src = t - (kernel - 1) + j;
        if (src >= 0)
          acc[j] = fmaf(g, toF(x[(r - t + src) * channels + c]), acc[j]);
      }
    }
  }
  const int64_t n = channels * kernel;
  if (gridDim.y == 1) {
#pragma unroll
    for (int j = 0; j < kMaxConvK; ++j)
      if (j < kernel && dw)
        dw[c * kernel + j] = fromF<T>(acc[j]);
    if (db)
      db[c] = fromF<T>(accB);
    return;
  }
#pragma unroll
  for (int j = 0; j < kMaxConvK; ++j)
    if (j < kernel)
      partW[blockIdx.y * n + c * kernel + j] = acc[j];
  partB[blockIdx.y * channels + c] = accB;
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_conv1d_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *w,
                         const void *dy, void *dx, void *dw, void *db, int64_t batch,
                         int64_t seq, int64_t channels, int64_t kernel) {
  using namespace braid::cuda;
  if (kernel <= 0 || kernel > kMaxConvK)
    BRAID_CUDA_FATAL("conv1d_grad: kernel size %lld outside [1, %d]",
                     static_cast<long long>(kernel), kMaxConvK);
  if (channels <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  const int64_t rows = batch * seq;
  if (rows <= 0) {
    if (dw)
      BRAID_CUDA_CHECK(cudaMemsetAsync(dw, 0, channels * kernel * braid_dtype_size(dt), stream));
    if (db)
      BRAID_CUDA_CHECK(cudaMemsetAsync(db, 0, channels * braid_dtype_size(dt), stream));
    return;
  }
  const int64_t chunks = grad::checkedChunks("conv1d_grad", rows);
  float *partW = nullptr, *partB = nullptr;
  const bool wantParams = dw || db;
  if (wantParams && chunks > 1) {
    int64_t wBytes = grad::alignUp(chunks * channels * kernel * static_cast<int64_t>(sizeof(float)));
    char *base = static_cast<char *>(
        scratch(stream, wBytes + chunks * channels * static_cast<int64_t>(sizeof(float))));
    partW = reinterpret_cast<float *>(base);
    partB = reinterpret_cast<float *>(base + wBytes);
  }
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (dx)
      launchElements("conv1d_grad", rows * channels, stream, conv1dGradXKernel<T>, w, dy, dx, seq,
                     channels, kernel, rows * channels);
    if (wantParams) {
      launch("conv1d_grad", grad::chunkGrid(channels, chunks), kThreads, stream,
             conv1dGradParamKernel<T>, x, dy, partW, partB, dw, db, rows, seq, channels, kernel);
      if (chunks > 1) {
        if (dw)
          grad::launchReduceChunks<T>(stream, partW, dw, chunks, channels * kernel);
        if (db)
          grad::launchReduceChunks<T>(stream, partB, db, chunks, channels);
      }
    }
  });
}

void braid_k_selective_scan_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *delta,
                                 const void *A, const void *Bm, const void *Cm, const void *D,
                                 const void *dy, void *dx, void *ddelta, void *dA, void *dBm,
                                 void *dCm, void *dD, const braid_scan_params *p) {
  // The whole sequence is one chunk: from a zero state, no cotangents of the
  // final state or decay (mamba_chunk.cu).
  braid_k_selective_scan_chunk_grad(rt, dt, x, delta, A, Bm, Cm, D, nullptr, dy, nullptr,
                                    nullptr, dx, ddelta, dA, dBm, dCm, dD, nullptr, p,
                                    /*accumulate=*/0);
}

} // extern "C"
