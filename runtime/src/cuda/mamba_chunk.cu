//===- mamba_chunk.cu - conv1d / selective_scan over sequence chunks ------===//
//
// The Mamba ops over a chunk of the sequence (context parallelism; the whole
// sequence is the one-chunk case, mamba.cu and grad_mamba.cu). Semantics in
// runtime.h and src/cpu/mamba.cpp, grad_mamba.cpp. f32 arithmetic:
//
// conv1d_halo: one thread per output element over xe = concat(halo, x).
// conv1d_halo_grad: one thread per element of the extended input for dx /
//   dhalo; one thread per channel walking every (b, t) row in order for dw /
//   db (deterministic, no scratch). conv1d_halo_accumulate: one thread per
//   element of the halo.
// selective_scan_chunk: one thread per (b, d) walking the chunk from h0 with
//   the N-element state in registers (N <= 64) or local memory.
// scan_carry / scan_carry_grad: one thread per state element, a loop over
//   the chunks.
// selective_scan_chunk_grad: one thread per (b, d) channel (checkpoints
//   every kChunk steps in the runtime scratch, per-chunk state
//   recomputation, deterministic warp / block sums for dB, dC and per-b
//   partials for dA, dD) started from h0, with the reverse recurrence
//   started from dh_end, dh0 = the final carry and the decay term
//     ddt_t += sum_n ddecay decay A,  dA += ddecay decay sum_t dt_t.
//   With `accumulate` every result is added to its output.
// Limits: N <= 256, B <= 65535 (grid y).
//
//===----------------------------------------------------------------------===//

#include "cuda/grad_common.cuh"

namespace braid::cuda {
namespace {

using grad::kThreads;
constexpr int kScanThreads = 128;
constexpr int kScanWarps = kScanThreads / 32;
constexpr int kChunk = 64;

__device__ __forceinline__ float softplusF(float x) {
  return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}

template <typename T>
__device__ __forceinline__ float extLoad(const T *__restrict__ x, const T *__restrict__ halo,
                                         int64_t b, int64_t u, int64_t c, int64_t seq,
                                         int64_t channels, int64_t kernel) {
  if (u < kernel - 1)
    return halo ? toF(halo[(b * (kernel - 1) + u) * channels + c]) : 0.0f;
  return toF(x[(b * seq + u - (kernel - 1)) * channels + c]);
}

template <typename T>
__device__ __forceinline__ void putF(T *p, int64_t i, float v, bool accumulate) {
  p[i] = fromF<T>(accumulate ? toF(p[i]) + v : v);
}

template <typename T>
__global__ void conv1dHaloKernel(const T *__restrict__ x, const T *__restrict__ halo,
                                 const T *__restrict__ w, const T *__restrict__ bias,
                                 T *__restrict__ y, int64_t seq, int64_t channels, int64_t kernel,
                                 int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = i % channels, bt = i / channels;
    const int64_t t = bt % seq, b = bt / seq;
    float acc = bias ? toF(bias[c]) : 0.0f;
    for (int64_t j = 0; j < kernel; ++j)
      acc = fmaf(toF(w[c * kernel + j]), extLoad(x, halo, b, t + j, c, seq, channels, kernel),
                 acc);
    y[i] = fromF<T>(acc);
  }
}

// Over the extended rows u < seq + kernel - 1: dxe[u] = sum_j w[j] dy[u - j].
template <typename T>
__global__ void conv1dHaloGradXKernel(const T *__restrict__ w, const T *__restrict__ dy,
                                      T *__restrict__ dx, T *__restrict__ dhalo, int64_t seq,
                                      int64_t channels, int64_t kernel, int64_t total) {
  const int64_t ext = seq + kernel - 1;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = i % channels, bu = i / channels;
    const int64_t u = bu % ext, b = bu / ext;
    float acc = 0.0f;
    for (int64_t j = 0; j < kernel; ++j) {
      const int64_t t = u - j;
      if (t >= 0 && t < seq)
        acc = fmaf(toF(w[c * kernel + j]), toF(dy[(b * seq + t) * channels + c]), acc);
    }
    if (u < kernel - 1) {
      if (dhalo)
        dhalo[(b * (kernel - 1) + u) * channels + c] = fromF<T>(acc);
    } else if (dx) {
      dx[(b * seq + u - (kernel - 1)) * channels + c] = fromF<T>(acc);
    }
  }
}

// One thread per (channel, tap j), j == kernel for db.
template <typename T>
__global__ void conv1dHaloGradParamKernel(const T *__restrict__ x, const T *__restrict__ halo,
                                          const T *__restrict__ dy, T *__restrict__ dw,
                                          T *__restrict__ db, int64_t batch, int64_t seq,
                                          int64_t channels, int64_t kernel) {
  const int64_t total = channels * (kernel + 1);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = i % channels, j = i / channels;
    float acc = 0.0f;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < seq; ++t) {
        const float g = toF(dy[(b * seq + t) * channels + c]);
        acc = j == kernel ? acc + g
                          : fmaf(g, extLoad(x, halo, b, t + j, c, seq, channels, kernel), acc);
      }
    if (j == kernel) {
      if (db)
        db[c] = fromF<T>(acc);
    } else if (dw) {
      dw[c * kernel + j] = fromF<T>(acc);
    }
  }
}

template <typename T>
__global__ void conv1dHaloAccumulateKernel(T *__restrict__ dx, const T *__restrict__ dnext,
                                           int64_t seq, int64_t channels, int64_t kernel,
                                           int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = i % channels, bi = i / channels;
    const int64_t r = bi % (kernel - 1), b = bi / (kernel - 1);
    const int64_t o = (b * seq + seq - (kernel - 1) + r) * channels + c;
    dx[o] = fromF<T>(toF(dx[o]) + toF(dnext[i]));
  }
}

template <typename T, int MAXN>
__global__ void __launch_bounds__(kScanThreads)
    scanChunkKernel(const T *__restrict__ x, const T *__restrict__ delta,
                    const T *__restrict__ A, const T *__restrict__ Bm, const T *__restrict__ Cm,
                    const T *__restrict__ D, const float *__restrict__ h0, T *__restrict__ y,
                    float *__restrict__ hEnd, float *__restrict__ decay, int64_t seq,
                    int64_t channels, int state, int softplus) {
  const int64_t d = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t b = blockIdx.y;
  if (d >= channels)
    return;
  const int64_t so = (b * channels + d) * state;
  float a[MAXN], h[MAXN];
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n) {
    a[n] = n < state ? toF(A[d * state + n]) : 0.0f;
    h[n] = n < state && h0 ? h0[so + n] : 0.0f;
  }
  const float skip = toF(D[d]);
  float sdt = 0.0f;
  for (int64_t t = 0; t < seq; ++t) {
    const int64_t xi = (b * seq + t) * channels + d;
    const float xv = toF(x[xi]);
    float dt = toF(delta[xi]);
    if (softplus)
      dt = softplusF(dt);
    sdt += dt;
    const T *bRow = Bm + (b * seq + t) * state;
    const T *cRow = Cm + (b * seq + t) * state;
    const float dtx = dt * xv;
    float out = 0.0f;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
    for (int n = 0; n < MAXN; ++n) {
      if (n < state) {
        h[n] = expf(dt * a[n]) * h[n] + dtx * toF(bRow[n]);
        out = fmaf(toF(cRow[n]), h[n], out);
      }
    }
    if (y)
      y[xi] = fromF<T>(out + skip * xv);
  }
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n)
    if (n < state) {
      if (hEnd)
        hEnd[so + n] = h[n];
      if (decay)
        decay[so + n] = expf(a[n] * sdt);
    }
}

__global__ void scanCarryKernel(const float *__restrict__ decayAll,
                                const float *__restrict__ hendAll, float *__restrict__ h0,
                                int64_t chunk, int64_t count) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    float H = 0.0f;
    for (int64_t j = 0; j < chunk; ++j)
      H = fmaf(decayAll[j * count + i], H, hendAll[j * count + i]);
    h0[i] = H;
  }
}

__global__ void scanCarryGradKernel(const float *__restrict__ decayAll,
                                    const float *__restrict__ hendAll,
                                    const float *__restrict__ dh0All, float *__restrict__ ddecay,
                                    float *__restrict__ dhend, int64_t chunks, int64_t chunk,
                                    int64_t count) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x) {
    float H = 0.0f;
    for (int64_t j = 0; j < chunk; ++j)
      H = fmaf(decayAll[j * count + i], H, hendAll[j * count + i]);
    float dH = 0.0f;
    for (int64_t j = chunks - 2; j >= chunk; --j)
      dH = fmaf(decayAll[(j + 1) * count + i], dH, dh0All[(j + 1) * count + i]);
    if (dhend)
      dhend[i] = dH;
    if (ddecay)
      ddecay[i] = H * dH;
  }
}

struct ChunkGradScratch {
  float *ckpt;   // [chunks][N][B][D]
  float *buf;    // [kChunk][N][B][D]
  float *part;   // [gridX][B][S][2N]
  float *dApart; // [B][D][N]
  float *dDpart; // [B][D]
};

struct ChunkGradState {
  const float *h0, *dhEnd, *ddecay;
  float *dh0;
};

// What scanChunkGradKernel's steps read and write per (b, t, d).
template <typename T>
struct ChunkGradTensors {
  const T *__restrict__ x, *__restrict__ delta, *__restrict__ Bm, *__restrict__ Cm;
  const T *__restrict__ dy;
  T *__restrict__ dx, *__restrict__ ddelta;
  int softplus, accumulate;
};

// One thread's (b, d) channel and where its state lies. Inactive threads
// (d >= channels) load channel 0 and write nothing.
struct ChunkGradChannel {
  int64_t b, dc, seq, channels;
  int N;
  bool active;
  int64_t BD;       // batch * channels: the stride of n in a [.., N, B, D] plane
  int64_t stateOff; // offset of (b, d) in a [.., B, D] plane
  int64_t so;       // offset of (b, d) in a [B, D, N] state

  // (b, t, d) in a [B, L, D] tensor; row (b, t) of a [B, L, N] one.
  __device__ __forceinline__ int64_t at(int64_t t) const { return (b * seq + t) * channels + dc; }
  __device__ __forceinline__ int64_t row(int64_t t) const { return (b * seq + t) * N; }
};

__device__ __forceinline__ float stepSize(float raw, int softplus) {
  return softplus ? softplusF(raw) : raw;
}

// One step of the recurrence at t: h <- exp(dt A) h + dt x_t B_t; the new
// state also goes to `keep` (a [N, B, D] plane at the channel) unless null.
template <typename T, int MAXN>
__device__ __forceinline__ void advanceState(const ChunkGradTensors<T> &io,
                                             const ChunkGradChannel &ch, int64_t t, float dt,
                                             const float (&a)[MAXN], float (&h)[MAXN],
                                             float *keep) {
  const T *bRow = io.Bm + ch.row(t);
  const float dtx = dt * toF(io.x[ch.at(t)]);
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n)
    if (n < ch.N) {
      h[n] = expf(dt * a[n]) * h[n] + dtx * toF(bRow[n]);
      if (keep)
        keep[n * ch.BD] = h[n];
    }
}

// The forward pass from h = h0: the state entering each chunk goes to the
// checkpoints. Returns the sum of dt.
template <typename T, int MAXN>
__device__ __forceinline__ float scanForward(const ChunkGradTensors<T> &io,
                                             const ChunkGradChannel &ch, const float (&a)[MAXN],
                                             float (&h)[MAXN], float *ckpt) {
  float sdt = 0.0f;
  for (int64_t t = 0; t < ch.seq; ++t) {
    if (t % kChunk == 0 && ch.active) {
      float *ck = ckpt + (t / kChunk) * ch.N * ch.BD + ch.stateOff;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
      for (int n = 0; n < MAXN; ++n)
        if (n < ch.N)
          ck[n * ch.BD] = h[n];
    }
    const float dt = stepSize(toF(io.delta[ch.at(t)]), io.softplus);
    sdt += dt;
    advanceState(io, ch, t, dt, a, h, nullptr);
  }
  return sdt;
}

// The cotangent of the final state (dh_end) starts the carry; the decay
// term gives dA its ddecay decay sum_t dt and returns sum_n ddecay decay A,
// which every step's ddt starts from.
template <int MAXN>
__device__ __forceinline__ float startCarry(const ChunkGradState &st, const ChunkGradChannel &ch,
                                            float sdt, const float (&a)[MAXN],
                                            float (&carry)[MAXN], float (&dA)[MAXN]) {
  float ddtDecay = 0.0f;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n) {
    carry[n] = n < ch.N && ch.active && st.dhEnd ? st.dhEnd[ch.so + n] : 0.0f;
    dA[n] = 0.0f;
    if (n < ch.N && ch.active && st.ddecay) {
      const float gd = st.ddecay[ch.so + n] * expf(a[n] * sdt);
      ddtDecay = fmaf(gd, a[n], ddtDecay);
      dA[n] = gd * sdt;
    }
  }
  return ddtDecay;
}

// Recomputes the states h_t0 .. h_{t1-1} of a chunk from its checkpoint
// `ck`: all but the last go to `buf` ([kChunk][N][B][D]), the last stays in h.
template <typename T, int MAXN>
__device__ __forceinline__ void recomputeChunk(const ChunkGradTensors<T> &io,
                                               const ChunkGradChannel &ch, int64_t t0,
                                               int64_t t1, const float *ck, float *buf,
                                               const float (&a)[MAXN], float (&h)[MAXN]) {
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n)
    h[n] = n < ch.N && ch.active ? ck[n * ch.BD] : 0.0f;
  for (int64_t t = t0; t < t1; ++t) {
    const float dt = stepSize(toF(io.delta[ch.at(t)]), io.softplus);
    float *keep = ch.active && t + 1 < t1 ? buf + (t - t0) * ch.N * ch.BD + ch.stateOff : nullptr;
    advanceState(io, ch, t, dt, a, h, keep);
  }
}

// Step t of the reverse recurrence; h holds h_t on entry and h_{t-1} (from
// `prev`) on exit. Writes dx and ddelta at t, updates dA, dD and the carry,
// and leaves the warp sums of dB and dC at t in sRed.
template <typename T, int MAXN>
__device__ __forceinline__ void reverseStep(const ChunkGradTensors<T> &io,
                                            const ChunkGradChannel &ch, int64_t t,
                                            const float *prev, float skip, float ddtDecay,
                                            const float (&a)[MAXN], float (&h)[MAXN],
                                            float (&carry)[MAXN], float (&dA)[MAXN], float &dD,
                                            float (*sRed)[2 * MAXN]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t xi = ch.at(t);
  const float xv = toF(io.x[xi]);
  const float raw = toF(io.delta[xi]);
  const float dt = stepSize(raw, io.softplus);
  const float g = ch.active && io.dy ? toF(io.dy[xi]) : 0.0f;
  const T *bRow = io.Bm + ch.row(t);
  const T *cRow = io.Cm + ch.row(t);
  float dxv = g * skip, ddt = ddtDecay;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n) {
    if (n < ch.N) {
      const float hp = ch.active ? prev[n * ch.BD] : 0.0f;
      const float bn = toF(bRow[n]);
      const float an = expf(dt * a[n]);
      const float gh = ch.active ? carry[n] + toF(cRow[n]) * g : 0.0f;
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
  if (ch.active) {
    if (io.dx)
      putF(io.dx, xi, dxv, io.accumulate);
    if (io.ddelta)
      putF(io.ddelta, xi, io.softplus ? ddt * sigmoidF(raw) : ddt, io.accumulate);
  }
}

// The block's sums of dB and dC at t over its warps, in order, to the
// block's partials (summed over the blocks by chunkGradBCKernel).
template <int MAXN>
__device__ __forceinline__ void storeBlockSums(const float (*sRed)[2 * MAXN], float *part,
                                               const ChunkGradChannel &ch, int64_t batch,
                                               int64_t t) {
  for (int k = threadIdx.x; k < 2 * ch.N; k += blockDim.x) {
    const int i = k < ch.N ? k : MAXN + k - ch.N;
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < kScanWarps; ++w)
      s += sRed[w][i];
    part[((blockIdx.x * batch + ch.b) * ch.seq + t) * 2 * ch.N + k] = s;
  }
}

template <typename T, int MAXN>
__global__ void __launch_bounds__(kScanThreads)
    scanChunkGradKernel(const T *__restrict__ x, const T *__restrict__ delta,
                        const T *__restrict__ A, const T *__restrict__ Bm,
                        const T *__restrict__ Cm, const T *__restrict__ D,
                        const T *__restrict__ dy, ChunkGradState st, T *__restrict__ dx,
                        T *__restrict__ ddelta, ChunkGradScratch sc, int64_t batch, int64_t seq,
                        int64_t channels, int state, int softplus, int accumulate) {
  __shared__ float sRed[kScanWarps][2 * MAXN];
  const int64_t d = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t b = blockIdx.y;
  const bool active = d < channels;
  const int64_t dc = active ? d : 0; // inactive threads load channel 0, write nothing
  const int64_t stateOff = b * channels + dc;
  const ChunkGradChannel ch{
      b, dc, seq, channels, state, active, batch * channels, stateOff, stateOff * state};
  const ChunkGradTensors<T> io{x, delta, Bm, Cm, dy, dx, ddelta, softplus, accumulate};
  const int N = state;

  float a[MAXN], h[MAXN];
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n) {
    a[n] = n < N ? toF(A[dc * N + n]) : 0.0f;
    h[n] = n < N && st.h0 ? st.h0[ch.so + n] : 0.0f;
  }
  // Forward pass: checkpoints (state entering each chunk), the sum of dt.
  const float sdt = scanForward(io, ch, a, h, sc.ckpt);
  float carry[MAXN], dA[MAXN];
  const float ddtDecay = startCarry(st, ch, sdt, a, carry, dA);
  float dD = 0.0f;
  const float skip = toF(D[dc]);
  const int64_t chunks = (seq + kChunk - 1) / kChunk;
  for (int64_t c = chunks - 1; c >= 0; --c) {
    const int64_t t0 = c * kChunk, t1 = min(seq, t0 + kChunk);
    const float *ck = sc.ckpt + c * N * ch.BD + stateOff;
    recomputeChunk(io, ch, t0, t1, ck, sc.buf, a, h);
    // Walk the chunk backward; h[] holds h_t on entry to step t.
    for (int64_t t = t1 - 1; t >= t0; --t) {
      const float *prev = t == t0 ? ck : sc.buf + (t - 1 - t0) * N * ch.BD + stateOff;
      reverseStep(io, ch, t, prev, skip, ddtDecay, a, h, carry, dA, dD, sRed);
      __syncthreads();
      storeBlockSums<MAXN>(sRed, sc.part, ch, batch, t);
      __syncthreads();
    }
  }
  if (active) {
    float *da = sc.dApart + (b * channels + d) * N;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
    for (int n = 0; n < MAXN; ++n)
      if (n < N) {
        da[n] = dA[n];
        if (st.dh0)
          st.dh0[ch.so + n] = accumulate ? st.dh0[ch.so + n] + carry[n] : carry[n];
      }
    sc.dDpart[b * channels + d] = dD;
  }
}

// dB[b,t,n], dC[b,t,n] = sums over the blockX partials, in order.
template <typename T>
__global__ void chunkGradBCKernel(const float *__restrict__ part, T *__restrict__ dBm,
                                  T *__restrict__ dCm, int64_t gridX, int64_t batch, int64_t seq,
                                  int64_t state, int accumulate) {
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
      putF(dBm, i, sB, accumulate);
    if (dCm)
      putF(dCm, i, sC, accumulate);
  }
}

// dA[d,n] = sum_b dApart[b,d,n]; dD[d] = sum_b dDpart[b,d] (in order of b).
template <typename T>
__global__ void chunkGradADKernel(const float *__restrict__ dApart,
                                  const float *__restrict__ dDpart, T *__restrict__ dA,
                                  T *__restrict__ dD, int64_t batch, int64_t channels,
                                  int64_t state, int accumulate) {
  const int64_t total = channels * state;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int64_t b = 0; b < batch; ++b)
      s += dApart[b * total + i];
    if (dA)
      putF(dA, i, s, accumulate);
    if (i < channels && dD) {
      float sd = 0.0f;
      for (int64_t b = 0; b < batch; ++b)
        sd += dDpart[b * channels + i];
      putF(dD, i, sd, accumulate);
    }
  }
}

template <typename T, int MAXN>
void launchScanChunk(cudaStream_t stream, const void *x, const void *delta, const void *A,
                     const void *Bm, const void *Cm, const void *D, const float *h0, void *y,
                     float *hEnd, float *decay, int64_t batch, int64_t seq, int64_t channels,
                     int64_t state, int softplus) {
  dim3 grid(static_cast<unsigned>((channels + kScanThreads - 1) / kScanThreads),
            static_cast<unsigned>(batch));
  scanChunkKernel<T, MAXN><<<grid, kScanThreads, 0, stream>>>(
      static_cast<const T *>(x), static_cast<const T *>(delta), static_cast<const T *>(A),
      static_cast<const T *>(Bm), static_cast<const T *>(Cm), static_cast<const T *>(D), h0,
      static_cast<T *>(y), hEnd, decay, seq, channels, static_cast<int>(state), softplus);
  BRAID_CUDA_CHECK_LAUNCH();
}

template <typename T, int MAXN>
void launchScanChunkGrad(cudaStream_t stream, const void *x, const void *delta, const void *A,
                         const void *Bm, const void *Cm, const void *D, const void *dy,
                         const ChunkGradState &st, void *dx, void *ddelta, void *dA, void *dBm,
                         void *dCm, void *dD, const ChunkGradScratch &sc, int64_t batch,
                         int64_t seq, int64_t channels, int64_t state, int softplus,
                         int accumulate, int64_t gridX) {
  dim3 grid(static_cast<unsigned>(gridX), static_cast<unsigned>(batch));
  scanChunkGradKernel<T, MAXN><<<grid, kScanThreads, 0, stream>>>(
      static_cast<const T *>(x), static_cast<const T *>(delta), static_cast<const T *>(A),
      static_cast<const T *>(Bm), static_cast<const T *>(Cm), static_cast<const T *>(D),
      static_cast<const T *>(dy), st, static_cast<T *>(dx), static_cast<T *>(ddelta), sc, batch,
      seq, channels, static_cast<int>(state), softplus, accumulate);
  BRAID_CUDA_CHECK_LAUNCH();
  chunkGradBCKernel<T><<<gridFor(batch * seq * state, kThreads), kThreads, 0, stream>>>(
      sc.part, static_cast<T *>(dBm), static_cast<T *>(dCm), gridX, batch, seq, state,
      accumulate);
  BRAID_CUDA_CHECK_LAUNCH();
  chunkGradADKernel<T><<<gridFor(channels * state, kThreads), kThreads, 0, stream>>>(
      sc.dApart, sc.dDpart, static_cast<T *>(dA), static_cast<T *>(dD), batch, channels, state,
      accumulate);
  BRAID_CUDA_CHECK_LAUNCH();
}

void checkScanShape(const char *kernel, int64_t batch, int64_t state) {
  if (state <= 0 || state > 256)
    BRAID_CUDA_FATAL("%s: state size %lld outside [1, 256]", kernel,
                     static_cast<long long>(state));
  if (batch > 65535)
    BRAID_CUDA_FATAL("%s: batch %lld exceeds the grid", kernel, static_cast<long long>(batch));
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_conv1d_halo(braid_rt *rt, braid_dtype dt, const void *x, const void *halo,
                         const void *w, const void *b, void *y, int64_t batch, int64_t seq,
                         int64_t channels, int64_t kernel) {
  using namespace braid::cuda;
  if (kernel < 1)
    BRAID_CUDA_FATAL("conv1d_halo: kernel size %lld below 1", static_cast<long long>(kernel));
  const int64_t total = batch * seq * channels;
  if (total <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  BRAID_DISPATCH_FLOAT(dt, T, {
    conv1dHaloKernel<T><<<gridFor(total, kThreads), kThreads, 0, stream>>>(
        static_cast<const T *>(x), static_cast<const T *>(halo), static_cast<const T *>(w),
        static_cast<const T *>(b), static_cast<T *>(y), seq, channels, kernel, total);
    BRAID_CUDA_CHECK_LAUNCH();
  });
}

void braid_k_conv1d_halo_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *halo,
                              const void *w, const void *dy, void *dx, void *dw, void *db,
                              void *dhalo, int64_t batch, int64_t seq, int64_t channels,
                              int64_t kernel) {
  using namespace braid::cuda;
  if (kernel < 1)
    BRAID_CUDA_FATAL("conv1d_halo_grad: kernel size %lld below 1",
                     static_cast<long long>(kernel));
  if (channels <= 0 || batch < 0 || seq < 0)
    return;
  cudaStream_t stream = streamOf(rt);
  const int64_t totalX = batch * (seq + kernel - 1) * channels;
  const int64_t totalP = channels * (kernel + 1);
  BRAID_DISPATCH_FLOAT(dt, T, {
    if ((dx || dhalo) && totalX > 0) {
      conv1dHaloGradXKernel<T><<<gridFor(totalX, kThreads), kThreads, 0, stream>>>(
          static_cast<const T *>(w), static_cast<const T *>(dy), static_cast<T *>(dx),
          static_cast<T *>(dhalo), seq, channels, kernel, totalX);
      BRAID_CUDA_CHECK_LAUNCH();
    }
    if (dw || db) {
      conv1dHaloGradParamKernel<T><<<gridFor(totalP, kThreads), kThreads, 0, stream>>>(
          static_cast<const T *>(x), static_cast<const T *>(halo), static_cast<const T *>(dy),
          static_cast<T *>(dw), static_cast<T *>(db), batch, seq, channels, kernel);
      BRAID_CUDA_CHECK_LAUNCH();
    }
  });
}

void braid_k_conv1d_halo_accumulate(braid_rt *rt, braid_dtype dt, void *dx, const void *dnext,
                                    int64_t batch, int64_t seq, int64_t channels,
                                    int64_t kernel) {
  using namespace braid::cuda;
  if (kernel < 1 || seq < kernel - 1)
    BRAID_CUDA_FATAL("conv1d_halo_accumulate: seq %lld is shorter than the halo (kernel %lld - 1)",
                     static_cast<long long>(seq), static_cast<long long>(kernel));
  const int64_t total = batch * (kernel - 1) * channels;
  if (total <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  BRAID_DISPATCH_FLOAT(dt, T, {
    conv1dHaloAccumulateKernel<T><<<gridFor(total, kThreads), kThreads, 0, stream>>>(
        static_cast<T *>(dx), static_cast<const T *>(dnext), seq, channels, kernel, total);
    BRAID_CUDA_CHECK_LAUNCH();
  });
}

void braid_k_selective_scan_chunk(braid_rt *rt, braid_dtype dt, const void *x, const void *delta,
                                  const void *A, const void *Bm, const void *Cm, const void *D,
                                  const float *h0, void *y, float *h_end, float *decay,
                                  const braid_scan_params *p) {
  const int64_t batch = p->batch, seq = p->seq, channels = p->channels, state = p->state;
  const int32_t delta_softplus = p->delta_softplus;
  using namespace braid::cuda;
  checkScanShape("selective_scan_chunk", batch, state);
  if (batch <= 0 || channels <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  const int sp = delta_softplus ? 1 : 0;
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (state <= 16)
      launchScanChunk<T, 16>(stream, x, delta, A, Bm, Cm, D, h0, y, h_end, decay, batch, seq,
                             channels, state, sp);
    else if (state <= 64)
      launchScanChunk<T, 64>(stream, x, delta, A, Bm, Cm, D, h0, y, h_end, decay, batch, seq,
                             channels, state, sp);
    else
      launchScanChunk<T, 256>(stream, x, delta, A, Bm, Cm, D, h0, y, h_end, decay, batch, seq,
                              channels, state, sp);
  });
}

void braid_k_scan_carry(braid_rt *rt, const float *decay_all, const float *hend_all, float *h0,
                        int64_t chunks, int64_t chunk, int64_t count) {
  using namespace braid::cuda;
  if (chunk < 0 || chunk >= chunks)
    BRAID_CUDA_FATAL("scan_carry: chunk %lld outside [0, %lld)", static_cast<long long>(chunk),
                     static_cast<long long>(chunks));
  if (count <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  scanCarryKernel<<<gridFor(count, kThreads), kThreads, 0, stream>>>(decay_all, hend_all, h0,
                                                                     chunk, count);
  BRAID_CUDA_CHECK_LAUNCH();
}

void braid_k_selective_scan_chunk_grad(braid_rt *rt, braid_dtype dt, const void *x,
                                       const void *delta, const void *A, const void *Bm,
                                       const void *Cm, const void *D, const float *h0,
                                       const void *dy, const float *dh_end, const float *ddecay,
                                       void *dx, void *ddelta, void *dA, void *dBm, void *dCm,
                                       void *dD, float *dh0, const braid_scan_params *p,
                                       int32_t accumulate) {
  const int64_t batch = p->batch, seq = p->seq, channels = p->channels, state = p->state;
  const int32_t delta_softplus = p->delta_softplus;
  using namespace braid::cuda;
  checkScanShape("selective_scan_chunk_grad", batch, state);
  if (channels <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  if (batch <= 0 || seq <= 0) {
    // No steps (the decay is 1, dh0 = dh_end): only the zero-size outputs
    // would differ; written as zero unless accumulating.
    if (!accumulate) {
      if (dA)
        BRAID_CUDA_CHECK(cudaMemsetAsync(dA, 0, channels * state * braid_dtype_size(dt), stream));
      if (dD)
        BRAID_CUDA_CHECK(cudaMemsetAsync(dD, 0, channels * braid_dtype_size(dt), stream));
    }
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
  ChunkGradScratch sc;
  sc.ckpt = reinterpret_cast<float *>(base);
  sc.buf = reinterpret_cast<float *>(base + ckptBytes);
  sc.part = reinterpret_cast<float *>(base + ckptBytes + bufBytes);
  sc.dApart = reinterpret_cast<float *>(base + ckptBytes + bufBytes + partBytes);
  sc.dDpart = reinterpret_cast<float *>(base + ckptBytes + bufBytes + partBytes + dABytes);
  const ChunkGradState st{h0, dh_end, ddecay, dh0};
  const int sp = delta_softplus ? 1 : 0;
  const int acc = accumulate ? 1 : 0;
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (state <= 16)
      launchScanChunkGrad<T, 16>(stream, x, delta, A, Bm, Cm, D, dy, st, dx, ddelta, dA, dBm,
                                 dCm, dD, sc, batch, seq, channels, state, sp, acc, gridX);
    else if (state <= 64)
      launchScanChunkGrad<T, 64>(stream, x, delta, A, Bm, Cm, D, dy, st, dx, ddelta, dA, dBm,
                                 dCm, dD, sc, batch, seq, channels, state, sp, acc, gridX);
    else
      launchScanChunkGrad<T, 256>(stream, x, delta, A, Bm, Cm, D, dy, st, dx, ddelta, dA, dBm,
                                  dCm, dD, sc, batch, seq, channels, state, sp, acc, gridX);
  });
}

void braid_k_scan_carry_grad(braid_rt *rt, const float *decay_all, const float *hend_all,
                             const float *dh0_all, float *ddecay, float *dhend, int64_t chunks,
                             int64_t chunk, int64_t count) {
  using namespace braid::cuda;
  if (chunk < 0 || chunk >= chunks)
    BRAID_CUDA_FATAL("scan_carry_grad: chunk %lld outside [0, %lld)",
                     static_cast<long long>(chunk), static_cast<long long>(chunks));
  if (count <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  scanCarryGradKernel<<<gridFor(count, kThreads), kThreads, 0, stream>>>(
      decay_all, hend_all, dh0_all, ddecay, dhend, chunks, chunk, count);
  BRAID_CUDA_CHECK_LAUNCH();
}

} // extern "C"
