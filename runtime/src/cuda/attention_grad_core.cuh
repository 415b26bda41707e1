//===- attention_grad_core.cuh - the attention backward by query tiles -*- CUDA -*-===//
//
// The backward kernel with one block per (query tile, query head, batch),
// shared by braid_k_attention_grad (grad_attention.cu: dq here; dk and dv by
// a kernel per key tile, without atomics) and braid_k_attention_block_grad
// (grad_attention_block.cu: dq here, dk and dv added per key tile with
// atomicAdd). No S x Skv buffer and no saved scores: for every key tile the
// mask lets the query tile see, the probabilities are recomputed from the
// forward's statistics (lse, and delta = dout . out):
//   p = exp(score - lse), dp = dout . v, ds = p (dp - delta),
//   dq' = scale sum_t ds k'_t   (k' the rotated key; dq' rotated back).
// dq' accumulates in registers over the key tiles, and each element is
// written by one thread at the end.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_ATTENTION_GRAD_CORE_CUH
#define BRAID_RUNTIME_CUDA_ATTENTION_GRAD_CORE_CUH

#include "cuda/attention_core.cuh"

namespace braid::cuda::attn {

/// Row pitch of sP / sDS, the key-block gradient's p and ds of a tile.
constexpr int kPad = kBlockK + 1;

/// The key-block gradient's share of one key tile in dk and dv: each warp sums
/// its keys k0 + rowBase.. of the tile over the query tile's first `rows`
/// rows, from p and ds in sP / sDS, and adds the sums with atomicAdd (dk
/// rotated back to the key's position first, through the warp's own rows of
/// sK, which the tile no longer reads).
template <int DPL, typename Mask>
__device__ __forceinline__ void addKeyTileGrads(const AttentionShape &sh, const Mask &mask,
                                                const typename Mask::Shared &ms,
                                                const float *sQ, const float *sDO,
                                                const float *sP, const float *sDS, float *sK,
                                                int b, int hk, int k0, int rows, float *dk,
                                                float *dv) {
  const int D = sh.D, Dv = sh.Dv;
  const int lane = threadIdx.x & 31, rowBase = (threadIdx.x >> 5) * kRowsPerWarp;
  float accK[kRowsPerWarp][DPL] = {}, accV[kRowsPerWarp][DPL] = {};
  for (int r = 0; r < rows; ++r) {
    float pr[kRowsPerWarp], dsr[kRowsPerWarp];
#pragma unroll
    for (int ki = 0; ki < kRowsPerWarp; ++ki) {
      pr[ki] = sP[r * kPad + rowBase + ki];
      dsr[ki] = sDS[r * kPad + rowBase + ki];
    }
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      float qv = d < D ? sQ[r * D + d] : 0.0f;
      float gv = d < Dv ? sDO[r * Dv + d] : 0.0f;
#pragma unroll
      for (int ki = 0; ki < kRowsPerWarp; ++ki) {
        accK[ki][e] = fmaf(dsr[ki], qv, accK[ki][e]);
        accV[ki][e] = fmaf(pr[ki], gv, accV[ki][e]);
      }
    }
  }
  writeRows<Put::AtomicAdd>(accV, Dv, [&](int ki) {
    int t = k0 + rowBase + ki;
    return t < sh.Skv ? dv + rowOffset(b, t, sh.Skv, sh.Hkv, hk, Dv) : nullptr;
  });
  writeRotatedBack<Put::AtomicAdd>(
      sK + rowBase * (D + 1), D + 1, accK, 1.0f, D, sh.theta, [&](int ki) {
        int t = k0 + rowBase + ki;
        return RotatedRow<float, typename Mask::Pos>{
            t < sh.Skv ? dk + rowOffset(b, t, sh.Skv, sh.Hkv, hk, D) : nullptr,
            mask.tileKeyPos(ms, rowBase + ki, t)};
      });
}

/// Dynamic shared memory of attentionGradQueryKernel: sQ [kBlockQ][D] (rotated,
/// scaled), sDO [kBlockQ][Dv], sK [kBlockK][D + 1] (rotated), sV [kBlockK]
/// [Dv + 1] (padded: lanes read rows), and for key gradients sP, sDS
/// [kBlockQ][kPad].
inline size_t gradQuerySmemBytes(const AttentionShape &sh, bool keyGrads) {
  return sizeof(float) * static_cast<size_t>(kBlockQ * sh.D + kBlockQ * sh.Dv +
                                             kBlockK * (sh.D + 1) + kBlockK * (sh.Dv + 1) +
                                             (keyGrads ? 2 * kBlockQ * kPad : 0));
}

/// One block per (query tile, query head, batch). `grad`, the entry point's
/// policy, says where the statistics are and the gradients go:
///   kKeyGrads            also add dk, dv per key tile (addKeyTileGrads)
///   kPutDq               how dq rows are written (Put)
///   statIndex(sh, b, h, s), lse, delta: the forward's statistics of row
///                        (b, s, h); lse = -inf: the row sees no key and adds
///                        nothing
///   dq (dk, dv)          the gradients
template <typename T, int DPL, typename Mask, typename Grad>
__global__ void __launch_bounds__(kBlockThreads)
    attentionGradQueryKernel(AttentionShape sh, AttentionInputs<T> in, Mask mask, Grad grad) {
  extern __shared__ float smem[];
  const int D = sh.D, Dv = sh.Dv;
  float *sQ = smem, *sDO = sQ + kBlockQ * D, *sK = sDO + kBlockQ * Dv;
  float *sV = sK + kBlockK * (D + 1), *sP = sV + kBlockK * (Dv + 1), *sDS = sP + kBlockQ * kPad;
  __shared__ typename Mask::Shared ms;
  __shared__ float sLse[kBlockQ], sDelta[kBlockQ];
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBlockQ;
  const int hk = h / (sh.Hq / sh.Hkv);
  const int tid = threadIdx.x, lane = tid & 31, rowBase = (tid >> 5) * kRowsPerWarp;

  if (tid < kBlockQ) {
    int s = q0 + tid;
    float ls = -INFINITY, dl = 0.0f;
    if (s < sh.S) {
      int64_t i = grad.statIndex(sh, b, h, s);
      ls = grad.lse[i];
      dl = grad.delta[i];
    }
    sLse[tid] = ls;
    sDelta[tid] = dl;
    mask.stageQueryRow(ms, tid, s, ls != -INFINITY);
  }
  __syncthreads();
  bool anyLive = false;
  for (int r = 0; r < kBlockQ; ++r)
    anyLive = anyLive || sLse[r] != -INFINITY;
  if (!anyLive) // block-uniform: nothing to add
    return;
  const typename Mask::Pos horizon = mask.horizon(ms, q0, sh.S);
  loadRotatedTile(sQ, D, in.q, b, q0, sh.S, sh.Hq, h, D, sh.theta, sh.scale,
                  [&](int s) { return mask.queryPos(s); });
  loadTile(sDO, Dv, in.dout, b, q0, sh.S, sh.Hq, h, Dv);

  float rowLse[kRowsPerWarp], rowDelta[kRowsPerWarp], accQ[kRowsPerWarp][DPL] = {};
  bool live[kRowsPerWarp];
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    int r = rowBase + qi;
    rowLse[qi] = sLse[r];
    rowDelta[qi] = sDelta[r];
    live[qi] = q0 + r < sh.S && rowLse[qi] != -INFINITY;
  }

  const int kEnd = mask.keyEnd(horizon, sh.Skv);
  for (int k0 = 0; k0 < kEnd; k0 += kBlockK) {
    __syncthreads(); // the previous tile consumed (and sQ / sDO written, first time)
    if (!mask.keyTileSeen(ms, k0, sh.Skv, horizon))
      continue;
    loadRotatedTile(sK, D + 1, in.k, b, k0, sh.Skv, sh.Hkv, hk, D, sh.theta, 1.0f,
                    [&](int t) { return mask.keyPos(t); });
    loadTile(sV, Dv + 1, in.v, b, k0, sh.Skv, sh.Hkv, hk, Dv);
    __syncthreads();

    // Lane j: key k0 + j against the warp's rows.
    const int t = k0 + lane;
    const typename Mask::Pos kp = mask.tileKeyPos(ms, lane, t);
    float score[kRowsPerWarp] = {}, dp[kRowsPerWarp] = {};
    rowDots(sQ + rowBase * D, D, sK + lane * (D + 1), D, score);
    rowDots(sDO + rowBase * Dv, Dv, sV + lane * (Dv + 1), Dv, dp);
    bool valid[kRowsPerWarp];
#pragma unroll
    for (int qi = 0; qi < kRowsPerWarp; ++qi) {
      int r = rowBase + qi;
      valid[qi] = t < sh.Skv && live[qi] && mask.sees(kp, mask.tileQueryPos(ms, r, q0 + r));
    }
    float p[kRowsPerWarp], ds[kRowsPerWarp];
    softmaxGrad(score, dp, valid, rowLse, rowDelta, p, ds);
    accumulateShuffled(ds, sK, D + 1, D, min(kBlockK, sh.Skv - k0), accQ);
    if constexpr (Grad::kKeyGrads) {
#pragma unroll
      for (int qi = 0; qi < kRowsPerWarp; ++qi) {
        sP[(rowBase + qi) * kPad + lane] = p[qi];
        sDS[(rowBase + qi) * kPad + lane] = ds[qi];
      }
      __syncthreads(); // every row's p / ds of the tile in sP / sDS
      addKeyTileGrads<DPL>(sh, mask, ms, sQ, sDO, sP, sDS, sK, b, hk, k0,
                           min(kBlockQ, sh.S - q0), grad.dk, grad.dv);
    }
  }

  // dq' rotated back through the warp's own sQ rows, once no warp reads sQ.
  __syncthreads();
  writeRotatedBack<Grad::kPutDq>(sQ + rowBase * D, D, accQ, sh.scale, D, sh.theta, [&](int qi) {
    int s = q0 + rowBase + qi;
    return RotatedRow<std::remove_pointer_t<decltype(grad.dq)>, typename Mask::Pos>{
        live[qi] ? grad.dq + rowOffset(b, s, sh.S, sh.Hq, h, D) : nullptr,
        live[qi] ? mask.queryPos(s) : 0};
  });
}

template <int DPL, typename T, typename Mask, typename Grad>
void launchGradQuery(cudaStream_t stream, const AttentionShape &sh, const AttentionInputs<T> &in,
                     const Mask &mask, const Grad &grad) {
  launchTiles("attention_grad (queries)", attentionGradQueryKernel<T, DPL, Mask, Grad>,
              tileGrid(sh.S, sh.Hq, sh.batch), gradQuerySmemBytes(sh, Grad::kKeyGrads), stream, sh,
              in, mask, grad);
}

} // namespace braid::cuda::attn

#endif // BRAID_RUNTIME_CUDA_ATTENTION_GRAD_CORE_CUH
