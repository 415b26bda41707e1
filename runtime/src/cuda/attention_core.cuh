//===- attention_core.cuh - the attention core of the CUDA kernels -*- CUDA -*-===//
//
// Every CUDA attention kernel (attention.cu, attention_block.cu,
// grad_attention.cu, grad_attention_block.cu) is built from this core and a
// mask policy (attention_mask.cuh), so that the score / softmax / dP / dS
// loops exist once (the shapes, checks and launch helpers: attention_launch.cuh):
//  - RoPE, rotate-half, applied while q and k tiles are loaded into shared
//    memory and undone on their gradients; the angle p theta^(-2i/D) and its
//    sin / cos are computed in double (angles reach thousands of radians);
//    theta <= 0: no rotation;
//  - the forward: an online softmax over key tiles (attendQueryTile) inside
//    one kernel, attentionForwardKernel, whose epilogue is the entry point's
//    (the output; or the output and lse; or the backward's statistics);
//  - the pieces of the backward (attention_grad_core.cuh and
//    grad_attention.cu): dot products of a warp's rows with a lane's row
//    (rowDots), the recomputed probabilities and dS (softmaxGrad), sums of
//    rows weighted by other lanes' values (accumulateShuffled) and gradients
//    rotated back (writeRotatedBack).
// In a 32 x 32 tile a lane owns one row of one operand (a key; a query in the
// key-gradient kernel) and a warp four rows of the other. Every sum runs over
// its index in increasing order with fmaf, so results depend only on the
// shapes (bitwise reproducible), except for the key-block gradient's atomics.
//
// Everything is inline (templates, __forceinline__ device functions), so each
// including .cu compiles its own copy.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_ATTENTION_CORE_CUH
#define BRAID_RUNTIME_CUDA_ATTENTION_CORE_CUH

#include "cuda/attention_mask.cuh"

#include <type_traits>
#include <utility>

namespace braid::cuda::attn {

static_assert(kBlockQ == kBlockK, "tile loads and accumulations assume square tiles");

//===--- RoPE --------------------------------------------------------------===//

__device__ __forceinline__ void ropeAngle(int d, int D, long long pos, double theta, double &sn,
                                          double &cs) {
  int half = D / 2;
  int i = d < half ? d : d - half;
  double angle = static_cast<double>(pos) * pow(theta, -2.0 * i / D);
  sincos(angle, &sn, &cs);
}

/// Element d of `row` (D values) rotated to position `pos`.
template <typename T>
__device__ __forceinline__ float ropeLoad(const T *row, int d, int D, long long pos,
                                          double theta) {
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

/// Element d of the gradient of the unrotated vector, from g, the gradient of
/// the vector rotated to `pos` (the inverse rotation).
__device__ __forceinline__ float ropeBack(const float *g, int d, int D, long long pos,
                                          double theta) {
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

/// dst[r * pitch + d] = row (b, s0 + r, h) of src [B, S, H, D] rotated to
/// position pos(s0 + r), times `scale`, for r < 32 and d < D; 0 for rows
/// s0 + r >= S. All threads of the block take part (no synchronization).
template <typename T, typename PosFn>
__device__ __forceinline__ void loadRotatedTile(float *dst, int pitch, const T *src, int b,
                                                int s0, int S, int H, int h, int D,
                                                double theta, float scale, PosFn pos) {
  for (int idx = threadIdx.x; idx < kBlockQ * D; idx += blockDim.x) {
    int r = idx / D, d = idx - r * D, s = s0 + r;
    float val = 0.0f;
    if (s < S)
      val = ropeLoad(src + rowOffset(b, s, S, H, h, D), d, D, pos(s), theta) * scale;
    dst[r * pitch + d] = val;
  }
}

/// As loadRotatedTile, without rotation or scale (v and dout tiles).
template <typename T>
__device__ __forceinline__ void loadTile(float *dst, int pitch, const T *src, int b, int s0,
                                         int S, int H, int h, int dim) {
  for (int idx = threadIdx.x; idx < kBlockQ * dim; idx += blockDim.x) {
    int r = idx / dim, d = idx - r * dim, s = s0 + r;
    dst[r * pitch + d] = s < S ? toF(src[rowOffset(b, s, S, H, h, dim) + d]) : 0.0f;
  }
}

/// Whether a mask policy addresses its key rows itself (keyRow: a paged KV
/// cache's page table).
template <typename Mask, typename = void> struct HasKeyRow : std::false_type {};
template <typename Mask>
struct HasKeyRow<Mask, std::void_t<decltype(std::declval<const Mask &>().keyRow(0, 0, false))>>
    : std::true_type {};

/// The key tile k0.. into sK (rotated to mask.keyPos unless kKeysRotated, as
/// loadRotatedTile) and the value tile into sV (as loadTile), rows addressed
/// by the mask's keyRow where it has one; keys from kEnd on are seen by no
/// row (a paged cache's page there may be unallocated).
template <typename T, typename Mask>
__device__ __forceinline__ void loadKeyValueTiles(float *sK, float *sV, const AttentionShape &sh,
                                                  const AttentionInputs<T> &in, const Mask &mask,
                                                  int b, int hk, int k0, int kEnd,
                                                  double keyTheta) {
  const int D = sh.D, Dv = sh.Dv;
  if constexpr (!HasKeyRow<Mask>::value) {
    loadRotatedTile(sK, D + 1, in.k, b, k0, sh.Skv, sh.Hkv, hk, D, keyTheta, 1.0f,
                    [&](int t) { return mask.keyPos(t); });
    loadTile(sV, Dv, in.v, b, k0, sh.Skv, sh.Hkv, hk, Dv);
  } else {
    for (int idx = threadIdx.x; idx < kBlockK * D; idx += blockDim.x) {
      const int r = idx / D, d = idx - r * D, t = k0 + r;
      const long long row = t < sh.Skv ? mask.keyRow(b, t, d == 0 && t < kEnd) : -1;
      sK[r * (D + 1) + d] =
          row < 0 ? 0.0f
                  : ropeLoad(in.k + (row * sh.Hkv + hk) * D, d, D, mask.keyPos(t), keyTheta);
    }
    for (int idx = threadIdx.x; idx < kBlockK * Dv; idx += blockDim.x) {
      const int r = idx / Dv, d = idx - r * Dv, t = k0 + r;
      const long long row = t < sh.Skv ? mask.keyRow(b, t, false) : -1;
      sV[r * Dv + d] = row < 0 ? 0.0f : toF(in.v[(row * sh.Hkv + hk) * Dv + d]);
    }
  }
}

//===--- Tile arithmetic ---------------------------------------------------===//

/// acc[i] += rows[i * pitch + d] * x[d] over d < n in increasing order: the
/// dot products of R rows of a tile (the warp's) with one row x (the lane's).
template <int R>
__device__ __forceinline__ void rowDots(const float *rows, int pitch, const float *x, int n,
                                        float (&acc)[R]) {
  for (int d = 0; d < n; ++d) {
    float xv = x[d];
#pragma unroll
    for (int i = 0; i < R; ++i)
      acc[i] = fmaf(rows[i * pitch + d], xv, acc[i]);
  }
}

/// acc[i][e] += w_j[i] * tile[j * pitch + lane + 32 e] over the tile's rows
/// j < count in increasing order, where w_j is lane j's w (lane j owns tile
/// row j: its weights for the warp's rows arrive by shuffle); dimensions past
/// `dim` add 0.
template <int R, int DPL>
__device__ __forceinline__ void accumulateShuffled(const float (&w)[R], const float *tile,
                                                   int pitch, int dim, int count,
                                                   float (&acc)[R][DPL]) {
  const int lane = threadIdx.x & 31;
  for (int j = 0; j < count; ++j) {
    float wj[R];
#pragma unroll
    for (int i = 0; i < R; ++i)
      wj[i] = __shfl_sync(0xffffffffu, w[i], j);
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      float x = d < dim ? tile[j * pitch + d] : 0.0f;
#pragma unroll
      for (int i = 0; i < R; ++i)
        acc[i][e] = fmaf(wj[i], x, acc[i][e]);
    }
  }
}

/// The backward's recomputed probabilities p = exp(score - lse) of the
/// visible pairs (0 elsewhere) and ds = p (dp - delta), for R pairs. A masked
/// pair's ds is a zero of either sign, which adds nothing to the sums it
/// enters (they start at +0).
template <int R>
__device__ __forceinline__ void softmaxGrad(const float (&score)[R], const float (&dp)[R],
                                            const bool (&valid)[R], const float (&lse)[R],
                                            const float (&delta)[R], float (&p)[R],
                                            float (&ds)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) {
    p[i] = valid[i] ? expf(score[i] - lse[i]) : 0.0f;
    ds[i] = p[i] * (dp[i] - delta[i]);
  }
}

/// How a gradient is put into its output: stored in the output's type, added
/// by the one thread that owns the element, or added atomically.
enum class Put { Store, Add, AtomicAdd };

template <Put kPut, typename Out> __device__ __forceinline__ void put(Out *p, float x) {
  if constexpr (kPut == Put::Store)
    *p = fromF<Out>(x);
  else if constexpr (kPut == Put::Add)
    *p += x;
  else
    atomicAdd(p, x);
}

/// The warp's accumulator rows acc[i] (dimensions lane + 32 e < dim) put
/// into the rows rowOf(i) points to; a null row is skipped.
template <Put kPut, int DPL, typename RowOf>
__device__ __forceinline__ void writeRows(const float (&acc)[kRowsPerWarp][DPL], int dim,
                                          RowOf rowOf) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    auto *row = rowOf(i);
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      if (d < dim && row)
        put<kPut>(row + d, acc[i][e]);
    }
  }
}

/// Where writeRotatedBack puts one row: out[0, D) rotated back from `pos`;
/// a null out skips the row.
template <typename Out, typename Pos> struct RotatedRow {
  Out *out;
  Pos pos;
};

/// The gradients of the warp's rows of rotated vectors (acc, times `scale`)
/// rotated back and put where rowOf(i) (a RotatedRow) says. They pass through
/// the warp's own rows of shared memory `stage` (pitch floats apart), which
/// no other warp may read meanwhile. rowOf is called after the stage is
/// written, so that its pointers need no registers across it.
template <Put kPut, int DPL, typename RowOf>
__device__ __forceinline__ void writeRotatedBack(float *stage, int pitch,
                                                 const float (&acc)[kRowsPerWarp][DPL],
                                                 float scale, int D, double theta, RowOf rowOf) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      if (d < D)
        stage[i * pitch + d] = acc[i][e] * scale;
    }
  }
  __syncwarp();
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const auto row = rowOf(i);
    if (!row.out)
      continue;
    const float *g = stage + i * pitch;
    for (int d = lane; d < D; d += 32)
      put<kPut>(row.out + d, ropeBack(g, d, D, row.pos, theta));
  }
}

//===--- Forward -----------------------------------------------------------===//

/// The forward's running state of the warp's rows: max m, sum l and output
/// accumulator acc (dimension lane + 32 e); the output is acc / l (l = 0: the
/// row sees no key).
template <int DPL> struct SoftmaxRows {
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][DPL];
};

/// One key tile of the online softmax: the lane's scores of its key against
/// the warp's rows (-inf where masked) update m and l and rescale acc; p gets
/// the lane's probabilities relative to the new maximum.
template <int DPL>
__device__ __forceinline__ void onlineSoftmaxStep(const float (&score)[kRowsPerWarp],
                                                  SoftmaxRows<DPL> &st,
                                                  float (&p)[kRowsPerWarp]) {
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    float sc = score[qi];
    float mNew = fmaxf(st.m[qi], warpMax(sc));
    if (mNew == -INFINITY) { // nothing visible yet for this row (warp-uniform)
      p[qi] = 0.0f;
      continue;
    }
    // A masked score gives 0, as would exp(-inf - mNew) for a visible -inf.
    p[qi] = sc != -INFINITY ? expf(sc - mNew) : 0.0f;
    float corr = st.m[qi] == -INFINITY ? 0.0f : expf(st.m[qi] - mNew);
    st.l[qi] = st.l[qi] * corr + warpSum(p[qi]);
    st.m[qi] = mNew;
#pragma unroll
    for (int e = 0; e < DPL; ++e)
      st.acc[qi][e] *= corr;
  }
}

/// row[lane + 32 e] = acc[e] * inv for the dimensions < Dv, in the output's
/// type: a forward epilogue's normalized output row.
template <typename Out, int DPL>
__device__ __forceinline__ void storeNormalized(Out *row, const float (&acc)[DPL], float inv,
                                                int Dv) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int e = 0; e < DPL; ++e) {
    int d = lane + 32 * e;
    if (d < Dv)
      row[d] = fromF<Out>(acc[e] * inv);
  }
}

/// The forward epilogue of braid_k_attention and braid_k_cache_attention:
/// the normalized output, out [B, S, Hq, Dv], in the storage type T of the
/// operands.
struct StoreOutput {
  void *out;

  template <typename T, int DPL>
  __device__ void operator()(const AttentionShape &sh, const AttentionInputs<T> &, int b, int h,
                             int s, float, float l, const float (&acc)[DPL]) const {
    storeNormalized(static_cast<T *>(out) + rowOffset(b, s, sh.S, sh.Hq, h, sh.Dv), acc,
                    l > 0.0f ? 1.0f / l : 0.0f, sh.Dv);
  }
};

/// The forward epilogue of braid_k_attention_block and
/// braid_k_cache_attention_chunk: the normalized f32 output and lse [B, S, Hq]
/// (-inf for a row that sees no key).
struct StoreOutputLse {
  float *out, *lse;

  template <typename T, int DPL>
  __device__ void operator()(const AttentionShape &sh, const AttentionInputs<T> &, int b, int h,
                             int s, float m, float l, const float (&acc)[DPL]) const {
    bool any = l > 0.0f;
    storeNormalized(out + rowOffset(b, s, sh.S, sh.Hq, h, sh.Dv), acc, any ? 1.0f / l : 0.0f,
                    sh.Dv);
    if ((threadIdx.x & 31) == 0)
      lse[(static_cast<int64_t>(b) * sh.S + s) * sh.Hq + h] = any ? m + logf(l) : -INFINITY;
  }
};

/// Dynamic shared memory of the forward: sQ [kBlockQ][D], sK [kBlockK][D + 1]
/// (padded: lanes read rows), sV [kBlockK][Dv].
inline size_t forwardSmemBytes(const AttentionShape &sh) {
  return sizeof(float) *
         static_cast<size_t>(kBlockQ * sh.D + kBlockK * (sh.D + 1) + kBlockK * sh.Dv);
}

/// The forward of one query tile (rows q0.., head h, batch b) up to the
/// normalization: q is loaded rotated and scaled into sQ; key / value tiles
/// stream through sK / sV, and an online softmax means no S x Skv buffer
/// exists. Within a key tile, lane j scores key j against the warp's rows;
/// then every lane accumulates its output dimensions over the tile's keys.
/// Key tiles the mask rules out for the whole query tile are skipped. Row qi
/// of the warp is query q0 + warp * kRowsPerWarp + qi.
template <typename T, int DPL, typename Mask>
__device__ __forceinline__ void attendQueryTile(const AttentionShape &sh,
                                                const AttentionInputs<T> &in, const Mask &mask,
                                                typename Mask::Shared &ms, float *smem, int b,
                                                int h, int q0, SoftmaxRows<DPL> &st) {
  const int D = sh.D, Dv = sh.Dv;
  float *sQ = smem, *sK = sQ + kBlockQ * D, *sV = sK + kBlockK * (D + 1);
  const int hk = h / (sh.Hq / sh.Hkv);
  const int lane = threadIdx.x & 31, rowBase = (threadIdx.x >> 5) * kRowsPerWarp;

  loadRotatedTile(sQ, D, in.q, b, q0, sh.S, sh.Hq, h, D, sh.theta, sh.scale,
                  [&](int s) { return mask.queryPos(s); });
  if (threadIdx.x < kBlockQ) {
    int s = q0 + static_cast<int>(threadIdx.x);
    mask.stageQueryRow(ms, threadIdx.x, s, s < sh.S);
  }
  __syncthreads();
  const typename Mask::Pos horizon = mask.horizon(ms, q0, sh.S);
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    st.m[qi] = -INFINITY;
    st.l[qi] = 0.0f;
#pragma unroll
    for (int e = 0; e < DPL; ++e)
      st.acc[qi][e] = 0.0f;
  }

  const int kEnd = mask.keyEnd(horizon, sh.Skv);
  const double keyTheta = Mask::kKeysRotated ? 0.0 : sh.theta; // a KV cache's: stored rotated
  for (int k0 = 0; k0 < kEnd; k0 += kBlockK) {
    __syncthreads(); // the previous tile consumed
    if (!mask.keyTileSeen(ms, k0, sh.Skv, horizon))
      continue;
    loadKeyValueTiles(sK, sV, sh, in, mask, b, hk, k0, kEnd, keyTheta);
    __syncthreads();

    const int t = k0 + lane;
    const typename Mask::Pos kp = mask.tileKeyPos(ms, lane, t);
    float score[kRowsPerWarp] = {};
    rowDots(sQ + rowBase * D, D, sK + lane * (D + 1), D, score);
#pragma unroll
    for (int qi = 0; qi < kRowsPerWarp; ++qi) {
      int r = rowBase + qi, s = q0 + r;
      if (!(t < sh.Skv && s < sh.S && mask.sees(kp, mask.tileQueryPos(ms, r, s))))
        score[qi] = -INFINITY;
    }
    float p[kRowsPerWarp];
    onlineSoftmaxStep(score, st, p);
    // Keys from kEnd on are seen by no row (p = 0): not added, so that what
    // lies there (a KV cache's rows past the positions) cannot enter as
    // 0 * inf or 0 * NaN.
    accumulateShuffled(p, sV, Dv, Dv, min(kBlockK, kEnd - k0), st.acc);
  }
}

/// One block per (query tile, query head, batch): attendQueryTile, then
/// epilogue(sh, in, b, h, s, m, l, acc) for each row s < S of the warp (all
/// lanes; acc holds the lane's dimensions).
template <typename T, int DPL, typename Mask, typename Epilogue>
__global__ void __launch_bounds__(kBlockThreads)
    attentionForwardKernel(AttentionShape sh, AttentionInputs<T> in, Mask mask,
                           Epilogue epilogue) {
  extern __shared__ float smem[];
  __shared__ typename Mask::Shared maskShared;
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBlockQ;
  const int rowBase = (threadIdx.x >> 5) * kRowsPerWarp;

  SoftmaxRows<DPL> st;
  attendQueryTile<T, DPL>(sh, in, mask, maskShared, smem, b, h, q0, st);
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    int s = q0 + rowBase + qi;
    if (s >= sh.S) // warp-uniform
      continue;
    epilogue(sh, in, b, h, s, st.m[qi], st.l[qi], st.acc[qi]);
  }
}

template <int DPL, typename T, typename Mask, typename Epilogue>
void launchForward(cudaStream_t stream, const AttentionShape &sh, const AttentionInputs<T> &in,
                   const Mask &mask, const Epilogue &epilogue) {
  launchTiles("attention", attentionForwardKernel<T, DPL, Mask, Epilogue>,
              tileGrid(sh.S, sh.Hq, sh.batch), forwardSmemBytes(sh), stream, sh, in, mask,
              epilogue);
}

} // namespace braid::cuda::attn

#endif // BRAID_RUNTIME_CUDA_ATTENTION_CORE_CUH
