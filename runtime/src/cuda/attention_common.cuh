//===- attention_common.cuh - shared code of the attention kernels -*- CUDA -*-===//
//
// Device code shared by attention.cu (forward) and grad_attention.cu
// (backward): the tile geometry, RoPE, the loading of q/k/v/dout tiles into
// shared memory, and the forward's online softmax over the key tiles (which
// the backward's statistics kernel recomputes).
//
// RoPE is rotate-half with positions qOff..qOff+S-1 / 0..Skv-1, applied while
// loading q and k tiles; the angle p * theta^(-2i/D) and its sin/cos are
// computed in double (angles reach thousands of radians). theta <= 0: no
// rotation. qOff is the global position of query row 0 (q_offset of the
// *_offset entry points, context parallelism; 0 otherwise): the causal mask
// lets query s see the keys t <= qOff + s.
//
// Everything is inline (templates, __forceinline__ device functions), so each
// including .cu compiles its own copy.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_ATTENTION_COMMON_CUH
#define BRAID_RUNTIME_CUDA_ATTENTION_COMMON_CUH

#include "cuda/common.cuh"

namespace braid::cuda::attn {

/// Tiles of 32 queries x 32 keys, 8 warps per block, each owning 4 rows of
/// the block's tile.
constexpr int kBlockQ = 32, kBlockK = 32, kWarps = 8, kRowsPerWarp = kBlockQ / kWarps;
constexpr int kBlockThreads = kWarps * 32;

//===--- RoPE --------------------------------------------------------------===//

__device__ __forceinline__ void ropeAngle(int d, int D, int pos, double theta, double &sn,
                                          double &cs) {
  int half = D / 2;
  int i = d < half ? d : d - half;
  double angle = static_cast<double>(pos) * pow(theta, -2.0 * i / D);
  sincos(angle, &sn, &cs);
}

/// Element d of `row` (D values) rotated to position `pos`.
template <typename T>
__device__ __forceinline__ float ropeLoad(const T *row, int d, int D, int pos, double theta) {
  float x = toF(row[d]);
  if (theta <= 0.0)
    return x;
  int half = D / 2;
  double sn, cs;
  ropeAngle(d, D, pos, theta, sn, cs);
  if (d < half)
    return static_cast<float>(x * cs - static_cast<double>(toF(row[d + half])) * sn);
  return static_cast<float>(x * cs + static_cast<double>(toF(row[d - half])) * sn);
}

/// Gradient of the unrotated vector from g, the gradient of the rotated one.
__device__ __forceinline__ float ropeBack(const float *g, int d, int D, int pos, double theta) {
  if (theta <= 0.0)
    return g[d];
  int half = D / 2;
  double sn, cs;
  ropeAngle(d, D, pos, theta, sn, cs);
  if (d < half)
    return static_cast<float>(g[d] * cs + static_cast<double>(g[d + half]) * sn);
  return static_cast<float>(g[d] * cs - static_cast<double>(g[d - half]) * sn);
}

//===--- Tiles -------------------------------------------------------------===//

/// Offset of row (b, s, h) of a [B, S, H, dim] tensor.
__device__ __forceinline__ int64_t rowOffset(int b, int s, int S, int H, int h, int dim) {
  return ((static_cast<int64_t>(b) * S + s) * H + h) * dim;
}

/// dst[r * pitch + d] = row (b, s0 + r, h) of src [B, S, H, D], rotated to
/// position posOff + s0 + r and (kScaled) times `scale`, for r < tileRows,
/// d < D; 0 for rows s0 + r >= S. All threads of the block take part (no
/// synchronization).
template <bool kScaled, typename T>
__device__ __forceinline__ void loadRopeTile(float *dst, int pitch, int tileRows,
                                             const T *src, int b, int s0, int S,
                                             int H, int h, int D, double theta, float scale,
                                             int posOff) {
  for (int idx = threadIdx.x; idx < tileRows * D; idx += blockDim.x) {
    int r = idx / D, d = idx - r * D, s = s0 + r;
    float val = 0.0f;
    if (s < S) {
      const T *row = src + rowOffset(b, s, S, H, h, D);
      val = kScaled ? ropeLoad(row, d, D, posOff + s, theta) * scale
                    : ropeLoad(row, d, D, posOff + s, theta);
    }
    dst[r * pitch + d] = val;
  }
}

/// As loadRopeTile, without rotation or scale (v and dout tiles).
template <typename T>
__device__ __forceinline__ void loadTile(float *dst, int pitch, int tileRows,
                                         const T *src, int b, int s0, int S, int H,
                                         int h, int dim) {
  for (int idx = threadIdx.x; idx < tileRows * dim; idx += blockDim.x) {
    int r = idx / dim, d = idx - r * dim, s = s0 + r;
    dst[r * pitch + d] = s < S ? toF(src[rowOffset(b, s, S, H, h, dim) + d]) : 0.0f;
  }
}

//===--- Forward online softmax --------------------------------------------===//

/// The forward pass of one query tile (queries q0.., head h, batch b) up to
/// the normalization: q is loaded rotated and scaled into sQ; key/value tiles
/// of 32 rows stream through sK / sV; an online softmax (running max m,
/// running sum l, rescaled output accumulator acc) means no S x Skv buffer
/// exists. Within a key tile, lane j scores key j against the warp's rows;
/// then every lane accumulates its output dimensions (lane + 32 e, e < DPL)
/// over the tile's keys. Causal tiles beyond the last query's global position
/// qOff + s are skipped.
/// Row qi of the warp is query q0 + warp * kRowsPerWarp + qi; output
/// dimension d = lane + 32 e is acc[qi][e] / l[qi] (l = 0: no visible key).
/// Shared memory: sQ [kBlockQ][D], sK [kBlockK][D + 1], sV [kBlockK][Dv].
template <typename T, int DPL>
__device__ __forceinline__ void attendQueryTile(
    const T *q, const T *k, const T *v, float *sQ,
    float *sK, float *sV, int b, int h, int hk, int q0, int S, int Skv, int Hq, int Hkv, int D,
    int Dv, int causal, float scale, double theta, int qOff, float (&m)[kRowsPerWarp],
    float (&l)[kRowsPerWarp], float (&acc)[kRowsPerWarp][DPL]) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  loadRopeTile<true>(sQ, D, kBlockQ, q, b, q0, S, Hq, h, D, theta, scale, qOff);

#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    m[qi] = -INFINITY;
    l[qi] = 0.0f;
#pragma unroll
    for (int e = 0; e < DPL; ++e)
      acc[qi][e] = 0.0f;
  }

  const int qLast = min(q0 + kBlockQ, S) - 1;
  const int kEnd = causal ? min(Skv, qOff + qLast + 1) : Skv;
  const int rowBase = warp * kRowsPerWarp;

  for (int k0 = 0; k0 < kEnd; k0 += kBlockK) {
    __syncthreads(); // previous tile fully consumed (and sQ written, first time)
    // sK padded to D + 1: lanes read rows.
    loadRopeTile<false>(sK, D + 1, kBlockK, k, b, k0, Skv, Hkv, hk, D, theta, 1.0f, 0);
    loadTile(sV, Dv, kBlockK, v, b, k0, Skv, Hkv, hk, Dv);
    __syncthreads();

    const int t = k0 + lane;
    float score[kRowsPerWarp];
#pragma unroll
    for (int qi = 0; qi < kRowsPerWarp; ++qi)
      score[qi] = 0.0f;
    const float *kRow = sK + lane * (D + 1);
    for (int d = 0; d < D; ++d) {
      float kv = kRow[d];
#pragma unroll
      for (int qi = 0; qi < kRowsPerWarp; ++qi)
        score[qi] = fmaf(sQ[(rowBase + qi) * D + d], kv, score[qi]);
    }

    float p[kRowsPerWarp];
#pragma unroll
    for (int qi = 0; qi < kRowsPerWarp; ++qi) {
      int s = q0 + rowBase + qi;
      bool valid = t < Skv && s < S && (!causal || t <= qOff + s);
      float sc = valid ? score[qi] : -INFINITY;
      float mNew = fmaxf(m[qi], warpMax(sc));
      if (mNew == -INFINITY) { // nothing visible yet for this row (warp-uniform)
        p[qi] = 0.0f;
        continue;
      }
      p[qi] = valid ? expf(sc - mNew) : 0.0f;
      float corr = m[qi] == -INFINITY ? 0.0f : expf(m[qi] - mNew);
      l[qi] = l[qi] * corr + warpSum(p[qi]);
      m[qi] = mNew;
#pragma unroll
      for (int e = 0; e < DPL; ++e)
        acc[qi][e] *= corr;
    }

    const int tileKeys = min(kBlockK, Skv - k0);
    for (int j = 0; j < tileKeys; ++j) {
      float pj[kRowsPerWarp];
#pragma unroll
      for (int qi = 0; qi < kRowsPerWarp; ++qi)
        pj[qi] = __shfl_sync(0xffffffffu, p[qi], j);
#pragma unroll
      for (int e = 0; e < DPL; ++e) {
        int d = lane + 32 * e;
        float vv = d < Dv ? sV[j * Dv + d] : 0.0f;
#pragma unroll
        for (int qi = 0; qi < kRowsPerWarp; ++qi)
          acc[qi][e] = fmaf(pj[qi], vv, acc[qi][e]);
      }
    }
  }
}

/// Opts `kernel` into more than 48 KiB of dynamic shared memory when needed.
template <typename F>
void setSmem(F kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    BRAID_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(bytes)));
}

} // namespace braid::cuda::attn

#endif // BRAID_RUNTIME_CUDA_ATTENTION_COMMON_CUH
