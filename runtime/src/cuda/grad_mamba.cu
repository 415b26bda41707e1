//===- grad_mamba.cu - conv1d and selective_scan backward -----------------===//
//
// conv1d_grad (f32 accumulation, deterministic):
//   dx[b,t,c] = sum_j w[c,j] dy[b, t+(K-1)-j, c]   (terms past S-1 are 0),
//     one thread per element;
//   dw[c,j] = sum_{b,t} dy[b,t,c] x[b, t-(K-1)+j, c], db[c] = sum dy[b,t,c]:
//     per-chunk partial sums over 64 (b,t) rows (one thread per channel) in the
//     runtime scratch, then the chunks in order (grad_common.cuh). K <= 32.
//
// selective_scan_grad: one thread per (b, d) channel, as the forward kernel,
// with the N-element state in a per-thread array. With a_t = exp(dt_t A),
// the backward recurrence runs t = S-1 .. 0 with the state cotangent
//   g_t = C_t dy_t + a_{t+1} g_{t+1}
// and needs h_{t-1}, h_t at every step. The states are recomputed in chunks of
// kChunk = 64 steps: a forward pass stores the state entering every chunk
// (checkpoints, ceil(S/64) x N floats per channel), then for each chunk from
// the last, the chunk's states are recomputed from its checkpoint into a
// per-channel buffer of 64 x N floats, and the chunk is walked backward. Both
// live in the runtime scratch (layout [.., n, b, d]: coalesced over d), since
// a per-thread local array of S x N is unbounded and a 64 x N local array
// would reserve local memory for every resident thread of the device.
//   Scratch (f32): B D N (ceil(S/64) + 64) + 2 ceil(D/128) B S N + B D (N + 1).
// Per step, with u = dt B_t x_t:
//   dx     = dy D + sum_n g dt B_t[n]
//   d dt   = sum_n g (h_{t-1} a_t A + B_t x_t)  (times sigmoid(delta) with softplus)
//   dA    += g h_{t-1} a_t dt,  dD += dy x       (per thread, then summed over b)
//   dB_t  += g dt x,  dC_t += dy h_t            (summed over d)
// Sums over channels are deterministic, without atomics: per step, each warp
// sums over its 32 channels (shuffles), the block's 4 warps are summed in
// order into partial[blockX][b][t][2N]; a second kernel sums the blockX
// partials in order. dA / dD: per-b partials, summed over b in order.
// Limits: N <= 256 (instantiations 16, 64, 256 as the forward kernel),
// B <= 65535. All arithmetic in f32.
//
//===----------------------------------------------------------------------===//

#include "cuda/grad_common.cuh"

namespace braid::cuda {
namespace {

using grad::kThreads;
constexpr int kScanThreads = 128;
constexpr int kScanWarps = kScanThreads / 32;
constexpr int kChunk = 64;
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
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c >= channels)
    return;
  const int64_t r0 = blockIdx.y * grad::kRowsPerChunk;
  const int64_t r1 = min(rows, r0 + grad::kRowsPerChunk);
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

__device__ __forceinline__ float softplusF(float x) {
  return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}

struct ScanGradScratch {
  float *ckpt;   // [chunks][N][B][D]
  float *buf;    // [kChunk][N][B][D]
  float *part;   // [gridX][B][S][2N]
  float *dApart; // [B][D][N]
  float *dDpart; // [B][D]
};

template <typename T, int MAXN>
__global__ void __launch_bounds__(kScanThreads)
    selectiveScanGradKernel(const T *__restrict__ x, const T *__restrict__ delta,
                            const T *__restrict__ A, const T *__restrict__ Bm,
                            const T *__restrict__ Cm, const T *__restrict__ D,
                            const T *__restrict__ dy, T *__restrict__ dx,
                            T *__restrict__ ddelta, ScanGradScratch sc, int64_t batch,
                            int64_t seq, int64_t channels, int state, int softplus) {
  __shared__ float sRed[kScanWarps][2 * MAXN];
  const int64_t d = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t b = blockIdx.y;
  const bool active = d < channels;
  const int64_t dc = active ? d : 0; // inactive threads load channel 0, write nothing
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t BD = batch * channels;
  const int64_t stateOff = b * channels + dc; // offset of (b, d) in a [.., B, D] plane
  const int N = state;

  float a[MAXN], h[MAXN];
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n) {
    a[n] = n < N ? toF(A[dc * N + n]) : 0.0f;
    h[n] = 0.0f;
  }

  // Forward pass: checkpoints (state entering each chunk).
  for (int64_t t = 0; t < seq; ++t) {
    if (t % kChunk == 0 && active) {
      float *ck = sc.ckpt + (t / kChunk) * N * BD + stateOff;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
      for (int n = 0; n < MAXN; ++n)
        if (n < N)
          ck[n * BD] = h[n];
    }
    const int64_t xi = (b * seq + t) * channels + dc;
    const float xv = toF(x[xi]);
    float dt = toF(delta[xi]);
    if (softplus)
      dt = softplusF(dt);
    const T *bRow = Bm + (b * seq + t) * N;
    const float dtx = dt * xv;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
    for (int n = 0; n < MAXN; ++n)
      if (n < N)
        h[n] = expf(dt * a[n]) * h[n] + dtx * toF(bRow[n]);
  }

  float carry[MAXN], dA[MAXN];
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n) {
    carry[n] = 0.0f;
    dA[n] = 0.0f;
  }
  float dD = 0.0f;
  const float skip = toF(D[dc]);
  const int64_t chunks = (seq + kChunk - 1) / kChunk;

  for (int64_t c = chunks - 1; c >= 0; --c) {
    const int64_t t0 = c * kChunk, t1 = min(seq, t0 + kChunk);
    const float *ck = sc.ckpt + c * N * BD + stateOff;
    // Recompute the chunk's states h_t0 .. h_{t1-1}; the last stays in h[].
#pragma unroll(MAXN <= 64 ? MAXN : 1)
    for (int n = 0; n < MAXN; ++n)
      h[n] = n < N && active ? ck[n * BD] : 0.0f;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t xi = (b * seq + t) * channels + dc;
      const float xv = toF(x[xi]);
      float dt = toF(delta[xi]);
      if (softplus)
        dt = softplusF(dt);
      const T *bRow = Bm + (b * seq + t) * N;
      const float dtx = dt * xv;
      float *bf = sc.buf + (t - t0) * N * BD + stateOff;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
      for (int n = 0; n < MAXN; ++n)
        if (n < N) {
          h[n] = expf(dt * a[n]) * h[n] + dtx * toF(bRow[n]);
          if (active && t + 1 < t1)
            bf[n * BD] = h[n];
        }
    }
    // Walk the chunk backward; h[] holds h_t on entry to step t.
    for (int64_t t = t1 - 1; t >= t0; --t) {
      const int64_t xi = (b * seq + t) * channels + dc;
      const float xv = toF(x[xi]);
      const float raw = toF(delta[xi]);
      const float dt = softplus ? softplusF(raw) : raw;
      const float g = active ? toF(dy[xi]) : 0.0f;
      const T *bRow = Bm + (b * seq + t) * N;
      const T *cRow = Cm + (b * seq + t) * N;
      const float *prev = t == t0 ? ck : sc.buf + (t - 1 - t0) * N * BD + stateOff;
      float dxv = g * skip, ddt = 0.0f;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
      for (int n = 0; n < MAXN; ++n) {
        if (n < N) {
          const float hp = active ? prev[n * BD] : 0.0f;
          const float bn = toF(bRow[n]);
          const float an = expf(dt * a[n]);
          const float gh = active ? carry[n] + toF(cRow[n]) * g : 0.0f;
          dxv = fmaf(gh * dt, bn, dxv);
          ddt = fmaf(gh, hp * an * a[n] + bn * xv, ddt);
          dA[n] = fmaf(gh * hp * an, dt, dA[n]);
          carry[n] = an * gh;
          const float sB = warpSum(gh * dt * xv);
          const float sC = warpSum(g * h[n]);
          if (lane == 0) {
            sRed[warp][n] = sB;
            sRed[warp][MAXN + n] = sC;
          }
          h[n] = hp;
        }
      }
      dD = fmaf(g, xv, dD);
      if (active) {
        if (dx)
          dx[xi] = fromF<T>(dxv);
        if (ddelta)
          ddelta[xi] = fromF<T>(softplus ? ddt * sigmoidF(raw) : ddt);
      }
      __syncthreads();
      for (int k = threadIdx.x; k < 2 * N; k += blockDim.x) {
        const int i = k < N ? k : MAXN + k - N;
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < kScanWarps; ++w)
          s += sRed[w][i];
        sc.part[((blockIdx.x * batch + b) * seq + t) * 2 * N + k] = s;
      }
      __syncthreads();
    }
  }
  if (active) {
    float *da = sc.dApart + (b * channels + d) * N;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
    for (int n = 0; n < MAXN; ++n)
      if (n < N)
        da[n] = dA[n];
    sc.dDpart[b * channels + d] = dD;
  }
}

// dB[b,t,n], dC[b,t,n] = sums over the blockX partials, in order.
template <typename T>
__global__ void scanGradBCKernel(const float *__restrict__ part, T *__restrict__ dBm,
                                 T *__restrict__ dCm, int64_t gridX, int64_t batch, int64_t seq,
                                 int64_t state) {
  const int64_t total = batch * seq * state;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t n = i % state, bt = i / state;
    float sB = 0.0f, sC = 0.0f;
    for (int64_t k = 0; k < gridX; ++k) {
      const float *p = part + (k * batch * seq + bt) * 2 * state;
      sB += p[n];
      sC += p[state + n];
    }
    if (dBm)
      dBm[i] = fromF<T>(sB);
    if (dCm)
      dCm[i] = fromF<T>(sC);
  }
}

// dA[d,n] = sum_b dApart[b,d,n]; dD[d] = sum_b dDpart[b,d] (in order of b).
template <typename T>
__global__ void scanGradADKernel(const float *__restrict__ dApart,
                                 const float *__restrict__ dDpart, T *__restrict__ dA,
                                 T *__restrict__ dD, int64_t batch, int64_t channels,
                                 int64_t state) {
  const int64_t total = channels * state;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int64_t b = 0; b < batch; ++b)
      s += dApart[b * total + i];
    if (dA)
      dA[i] = fromF<T>(s);
    if (i < channels && dD) {
      float sd = 0.0f;
      for (int64_t b = 0; b < batch; ++b)
        sd += dDpart[b * channels + i];
      dD[i] = fromF<T>(sd);
    }
  }
}

template <typename T, int MAXN>
void launchScanGrad(cudaStream_t stream, const void *x, const void *delta, const void *A,
                    const void *Bm, const void *Cm, const void *D, const void *dy, void *dx,
                    void *ddelta, void *dA, void *dBm, void *dCm, void *dD,
                    const ScanGradScratch &sc, int64_t batch, int64_t seq, int64_t channels,
                    int64_t state, int softplus, int64_t gridX) {
  dim3 grid(static_cast<unsigned>(gridX), static_cast<unsigned>(batch));
  selectiveScanGradKernel<T, MAXN><<<grid, kScanThreads, 0, stream>>>(
      static_cast<const T *>(x), static_cast<const T *>(delta), static_cast<const T *>(A),
      static_cast<const T *>(Bm), static_cast<const T *>(Cm), static_cast<const T *>(D),
      static_cast<const T *>(dy), static_cast<T *>(dx), static_cast<T *>(ddelta), sc, batch, seq,
      channels, static_cast<int>(state), softplus);
  BRAID_CUDA_CHECK_LAUNCH();
  scanGradBCKernel<T><<<gridFor(batch * seq * state, kThreads), kThreads, 0, stream>>>(
      sc.part, static_cast<T *>(dBm), static_cast<T *>(dCm), gridX, batch, seq, state);
  BRAID_CUDA_CHECK_LAUNCH();
  scanGradADKernel<T><<<gridFor(channels * state, kThreads), kThreads, 0, stream>>>(
      sc.dApart, sc.dDpart, static_cast<T *>(dA), static_cast<T *>(dD), batch, channels, state);
  BRAID_CUDA_CHECK_LAUNCH();
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
  const int64_t chunks = grad::chunksFor(rows);
  if (chunks > 65535)
    BRAID_CUDA_FATAL("conv1d_grad: %lld rows exceed the grid", static_cast<long long>(rows));
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
    if (dx) {
      conv1dGradXKernel<T><<<gridFor(rows * channels, kThreads), kThreads, 0, stream>>>(
          static_cast<const T *>(w), static_cast<const T *>(dy), static_cast<T *>(dx), seq,
          channels, kernel, rows * channels);
      BRAID_CUDA_CHECK_LAUNCH();
    }
    if (wantParams) {
      dim3 grid(static_cast<unsigned>((channels + kThreads - 1) / kThreads),
                static_cast<unsigned>(chunks));
      conv1dGradParamKernel<T><<<grid, kThreads, 0, stream>>>(
          static_cast<const T *>(x), static_cast<const T *>(dy), partW, partB,
          static_cast<T *>(dw), static_cast<T *>(db), rows, seq, channels,
          static_cast<int>(kernel));
      BRAID_CUDA_CHECK_LAUNCH();
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
                                 void *dCm, void *dD, int64_t batch, int64_t seq,
                                 int64_t channels, int64_t state, int32_t delta_softplus) {
  using namespace braid::cuda;
  if (state <= 0 || state > 256)
    BRAID_CUDA_FATAL("selective_scan_grad: state size %lld outside [1, 256]",
                     static_cast<long long>(state));
  if (batch > 65535)
    BRAID_CUDA_FATAL("selective_scan_grad: batch %lld exceeds the grid",
                     static_cast<long long>(batch));
  if (channels <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  if (batch <= 0 || seq <= 0) {
    // No steps: every gradient is zero (dx / ddelta / dB / dC are empty).
    if (dA)
      BRAID_CUDA_CHECK(cudaMemsetAsync(dA, 0, channels * state * braid_dtype_size(dt), stream));
    if (dD)
      BRAID_CUDA_CHECK(cudaMemsetAsync(dD, 0, channels * braid_dtype_size(dt), stream));
    return;
  }
  const int64_t gridX = (channels + kScanThreads - 1) / kScanThreads;
  const int64_t chunks = (seq + kChunk - 1) / kChunk;
  const int64_t BD = batch * channels;
  const int64_t f = static_cast<int64_t>(sizeof(float));
  const int64_t ckptBytes = grad::alignUp(chunks * state * BD * f);
  const int64_t bufBytes = grad::alignUp(static_cast<int64_t>(kChunk) * state * BD * f);
  const int64_t partBytes = grad::alignUp(gridX * batch * seq * 2 * state * f);
  const int64_t dABytes = grad::alignUp(BD * state * f);
  const int64_t dDBytes = grad::alignUp(BD * f);
  char *base = static_cast<char *>(
      scratch(stream, ckptBytes + bufBytes + partBytes + dABytes + dDBytes));
  ScanGradScratch sc;
  sc.ckpt = reinterpret_cast<float *>(base);
  sc.buf = reinterpret_cast<float *>(base + ckptBytes);
  sc.part = reinterpret_cast<float *>(base + ckptBytes + bufBytes);
  sc.dApart = reinterpret_cast<float *>(base + ckptBytes + bufBytes + partBytes);
  sc.dDpart = reinterpret_cast<float *>(base + ckptBytes + bufBytes + partBytes + dABytes);
  const int sp = delta_softplus ? 1 : 0;
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (state <= 16)
      launchScanGrad<T, 16>(stream, x, delta, A, Bm, Cm, D, dy, dx, ddelta, dA, dBm, dCm, dD, sc,
                            batch, seq, channels, state, sp, gridX);
    else if (state <= 64)
      launchScanGrad<T, 64>(stream, x, delta, A, Bm, Cm, D, dy, dx, ddelta, dA, dBm, dCm, dD, sc,
                            batch, seq, channels, state, sp, gridX);
    else
      launchScanGrad<T, 256>(stream, x, delta, A, Bm, Cm, D, dy, dx, ddelta, dA, dBm, dCm, dD,
                             sc, batch, seq, channels, state, sp, gridX);
  });
}

} // extern "C"
