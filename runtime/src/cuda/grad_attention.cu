//===- grad_attention.cu - attention backward (flash-attention-2 style) ---===//
//
// No S x Skv buffer and no saved scores: the softmax is recomputed tile by
// tile. Three kernels, tiles of 32 queries x 32 keys, 8 warps per block:
//
//  1. stats: the forward kernel of attention_core.cuh (its online softmax,
//     attendQueryTile) with an epilogue that writes, per query row, the
//     log-sum-exp of the scaled scores, lse = m + log(l), and
//     delta = sum_e dout[e] o[e] with the output o recomputed in f32 (not
//     re-read from the forward result). Both go to the runtime scratch,
//     [B, Hq, S] f32 each. A row with no visible key gets lse = +inf (all its
//     probabilities are 0).
//  2. dq: the backward by query tiles of attention_grad_core.cuh, one block
//     per (query tile, query head, batch): for every visible key tile,
//     p = exp(score - lse), dp = dout . v, ds = p (dp - delta), and
//     dq' += scale * ds k' (k' the rotated key).
//  3. dk / dv, one block per (key tile, kv head, batch): loops over the Hq/Hkv
//     query heads of the group and over the query tiles that can see the key
//     tile (causal: from the tile's first key on), recomputing p and ds as in
//     2; dv += p dout, dk' += ds (scale q'). GQA sums over the group inside the
//     block, in a fixed order.
// Nothing is accumulated with atomics: every output element is written once by
// one thread, after a fixed-order loop, so results are bitwise reproducible.
// (The price is recomputing the scores twice, in 2 and in 3.)
//
// RoPE (attention_core.cuh) is applied to q and k when tiles are loaded; the
// gradients of the rotated vectors are rotated back by the inverse rotation
// (ropeBack) through the warp's own rows of shared memory before they are
// written.
//
// All three take the sequence mask: query row s has global position qOff + s
// (the call's q_offset, context parallelism; 0 for the whole sequence) for
// its RoPE, its rotation back and the causal mask
// t <= qOff + s; dk / dv are then the contribution of these query rows.
//
// Limits: head dims D, Dv <= 256 (accumulators of DPL = 1, 2, 4, 8 values per
// lane cover max(D, Dv)); causal needs qOff + S <= Skv. Shared memory: about
// 4 (64 D + 64 Dv + 128) bytes, 131 KiB at D = Dv = 256.
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_grad_core.cuh"

namespace braid::cuda {
namespace {

using namespace attn;

//===--- 1. Row statistics --------------------------------------------------===//

/// The forward epilogue of the statistics kernel: lse = m + log l (+inf for a
/// row that sees no key: all its probabilities are 0) and delta = dout . o,
/// with o the recomputed f32 output, both [B, Hq, S].
struct StoreLseDelta {
  float *lse, *delta;

  template <typename T, int DPL>
  __device__ void operator()(const AttentionShape &sh, const AttentionInputs<T> &in, int b,
                             int h, int s, float m, float l, const float (&acc)[DPL]) const {
    const int lane = threadIdx.x & 31;
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
    const T *g = in.dout + rowOffset(b, s, sh.S, sh.Hq, h, sh.Dv);
    float dot = 0.0f;
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      if (d < sh.Dv)
        dot = fmaf(acc[e] * inv, toF(g[d]), dot);
    }
    dot = warpSum(dot);
    if (lane == 0) {
      int64_t i = statIndex(sh, b, h, s);
      lse[i] = l > 0.0f ? m + logf(l) : INFINITY;
      delta[i] = dot;
    }
  }

  __device__ static int64_t statIndex(const AttentionShape &sh, int b, int h, int s) {
    return (static_cast<int64_t>(b) * sh.Hq + h) * sh.S + s;
  }
};

//===--- 2. dq --------------------------------------------------------------===//

/// The policy of attentionGradQueryKernel for this entry point: statistics of
/// the stats kernel, dq stored in the storage type, dk / dv left to the key
/// kernel.
template <typename T> struct StoreQueryGrad {
  static constexpr bool kKeyGrads = false;
  static constexpr Put kPutDq = Put::Store;
  const float *lse, *delta;
  T *dq;
  float *dk, *dv; // unused: no key gradients here

  __device__ static int64_t statIndex(const AttentionShape &sh, int b, int h, int s) {
    return StoreLseDelta::statIndex(sh, b, h, s);
  }
};

//===--- 3. dk, dv ----------------------------------------------------------===//

/// One block per (key tile, kv head, batch): loops over the Hq/Hkv query
/// heads of the group and over the query tiles that can see the key tile,
/// recomputing p and ds as the dq kernel does, with the roles turned: lane j
/// owns query j of the tile, the warp four keys. dv += p dout, dk' += ds
/// (scale q'); GQA sums over the group inside the block, in a fixed order.
template <typename T, int DPL, typename Mask>
__global__ void __launch_bounds__(kBlockThreads)
    attentionGradKeyKernel(AttentionShape sh, AttentionInputs<T> in, Mask mask,
                           const float *__restrict__ lse, const float *__restrict__ delta,
                           T *__restrict__ dk, T *__restrict__ dv) {
  extern __shared__ float smem[];
  const int D = sh.D, Dv = sh.Dv;
  float *sK = smem;                       // [kBlockK][D] (rotated)
  float *sV = sK + kBlockK * D;           // [kBlockK][Dv]
  float *sQ = sV + kBlockK * Dv;          // [kBlockQ][D + 1] (rotated, scaled)
  float *sDO = sQ + kBlockQ * (D + 1);    // [kBlockQ][Dv + 1]
  float *sLse = sDO + kBlockQ * (Dv + 1); // [kBlockQ]
  float *sDelta = sLse + kBlockQ;         // [kBlockQ]
  const int b = blockIdx.z, hk = blockIdx.y, k0 = blockIdx.x * kBlockK;
  const int group = sh.Hq / sh.Hkv;
  const int tid = threadIdx.x, lane = tid & 31, rowBase = (tid >> 5) * kRowsPerWarp;

  loadRotatedTile(sK, D, in.k, b, k0, sh.Skv, sh.Hkv, hk, D, sh.theta, 1.0f,
                  [&](int t) { return mask.keyPos(t); });
  loadTile(sV, Dv, in.v, b, k0, sh.Skv, sh.Hkv, hk, Dv);
  float accK[kRowsPerWarp][DPL] = {}, accV[kRowsPerWarp][DPL] = {};
  typename Mask::Pos keyPos[kRowsPerWarp];
#pragma unroll
  for (int ki = 0; ki < kRowsPerWarp; ++ki) {
    int t = k0 + rowBase + ki;
    keyPos[ki] = t < sh.Skv ? mask.keyPos(t) : 0;
  }

  for (int hh = 0; hh < group; ++hh) {
    const int h = hk * group + hh;
    for (int q0 = mask.firstQuery(k0); q0 < sh.S; q0 += kBlockQ) {
      __syncthreads(); // the previous tile consumed (and sK / sV written, first time)
      loadRotatedTile(sQ, D + 1, in.q, b, q0, sh.S, sh.Hq, h, D, sh.theta, sh.scale,
                      [&](int s) { return mask.queryPos(s); });
      loadTile(sDO, Dv + 1, in.dout, b, q0, sh.S, sh.Hq, h, Dv);
      if (tid < kBlockQ) {
        int s = q0 + tid;
        int64_t i = StoreLseDelta::statIndex(sh, b, h, s);
        sLse[tid] = s < sh.S ? lse[i] : INFINITY;
        sDelta[tid] = s < sh.S ? delta[i] : 0.0f;
      }
      __syncthreads();

      // Lane j: query q0 + j against the warp's keys.
      const int s = q0 + lane;
      const typename Mask::Pos qp = s < sh.S ? mask.queryPos(s) : 0;
      float score[kRowsPerWarp] = {}, dp[kRowsPerWarp] = {};
      rowDots(sK + rowBase * D, D, sQ + lane * (D + 1), D, score);
      rowDots(sV + rowBase * Dv, Dv, sDO + lane * (Dv + 1), Dv, dp);
      bool valid[kRowsPerWarp];
      float rowLse[kRowsPerWarp], rowDelta[kRowsPerWarp];
#pragma unroll
      for (int ki = 0; ki < kRowsPerWarp; ++ki) {
        valid[ki] = k0 + rowBase + ki < sh.Skv && s < sh.S && mask.sees(keyPos[ki], qp);
        rowLse[ki] = sLse[lane];
        rowDelta[ki] = sDelta[lane];
      }
      float p[kRowsPerWarp], ds[kRowsPerWarp];
      softmaxGrad(score, dp, valid, rowLse, rowDelta, p, ds);
      const int tileQueries = min(kBlockQ, sh.S - q0);
      accumulateShuffled(p, sDO, Dv + 1, Dv, tileQueries, accV);
      accumulateShuffled(ds, sQ, D + 1, D, tileQueries, accK);
    }
  }

  // dv directly; dk rotated back through the warp's own sK rows (read by no
  // other warp).
  writeRows<Put::Store>(accV, Dv, [&](int ki) {
    int t = k0 + rowBase + ki;
    return t < sh.Skv ? dv + rowOffset(b, t, sh.Skv, sh.Hkv, hk, Dv) : nullptr;
  });
  __syncwarp();
  writeRotatedBack<Put::Store>(sK + rowBase * D, D, accK, 1.0f, D, sh.theta, [&](int ki) {
    int t = k0 + rowBase + ki;
    return RotatedRow<T, typename Mask::Pos>{
        t < sh.Skv ? dk + rowOffset(b, t, sh.Skv, sh.Hkv, hk, D) : nullptr, keyPos[ki]};
  });
}

//===--- Launch -------------------------------------------------------------===//

/// The three kernels in stream order; lse and delta: scratch [B, Hq, S] each;
/// dq, dk, dv in the operands' storage type T.
template <int DPL, typename T>
void launchAttentionGrad(cudaStream_t stream, const AttentionShape &sh,
                         const AttentionInputs<T> &in, const SequenceMask &mask, float *lse,
                         float *delta, void *dq, void *dk, void *dv) {
  launchForward<DPL>(stream, sh, in, mask, StoreLseDelta{lse, delta});
  launchGradQuery<DPL>(stream, sh, in, mask,
                       StoreQueryGrad<T>{lse, delta, static_cast<T *>(dq), nullptr, nullptr});
  const size_t keySmem =
      sizeof(float) * static_cast<size_t>(kBlockK * sh.D + kBlockK * sh.Dv +
                                          kBlockQ * (sh.D + 1) + kBlockQ * (sh.Dv + 1) +
                                          2 * kBlockQ);
  launchTiles("attention_grad (keys)", attentionGradKeyKernel<T, DPL, SequenceMask>,
              tileGrid(sh.Skv, sh.Hkv, sh.batch), keySmem, stream, sh, in, mask, lse, delta, dk,
              dv);
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_attention_grad(braid_rt *rt, braid_dtype dt, const void *q,
                                       const void *k, const void *v, const void *dout, void *dq,
                                       void *dk, void *dv, const braid_attention_params *p) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  const int64_t batch = p->batch, seq = p->seq, seq_kv = p->seq_kv, heads = p->heads,
                kv_heads = p->kv_heads, head_dim = p->head_dim, v_head_dim = p->v_head_dim;
  if (batch <= 0 || heads <= 0)
    return;
  checkHeads("attention_grad", heads, kv_heads);
  checkQueryOffset("attention_grad", p->q_offset, seq, seq_kv, p->causal);
  checkRope("attention_grad", p->rope_theta, head_dim);
  checkHeadDims("attention_grad", head_dim, v_head_dim);
  if (seq > 65535LL * kBlockQ || seq_kv > 65535LL * kBlockK || heads > 65535 || batch > 65535)
    BRAID_CUDA_FATAL("attention_grad: grid too large (S %lld, Skv %lld, H %lld, B %lld)",
                     static_cast<long long>(seq), static_cast<long long>(seq_kv),
                     static_cast<long long>(heads), static_cast<long long>(batch));
  cudaStream_t stream = streamOf(rt);
  const int64_t es = braid_dtype_size(dt);
  if (seq <= 0) { // no queries: k and v get no gradient
    if (seq_kv > 0) {
      BRAID_CUDA_CHECK(
          cudaMemsetAsync(dk, 0, batch * seq_kv * kv_heads * head_dim * es, stream));
      BRAID_CUDA_CHECK(
          cudaMemsetAsync(dv, 0, batch * seq_kv * kv_heads * v_head_dim * es, stream));
    }
    return;
  }
  if (seq_kv <= 0) { // empty softmax: the forward result is 0
    BRAID_CUDA_CHECK(cudaMemsetAsync(dq, 0, batch * seq * heads * head_dim * es, stream));
    return;
  }
  const int64_t rowsStats = batch * heads * seq;
  float *lse = static_cast<float *>(
      scratch(stream, 2 * rowsStats * static_cast<int64_t>(sizeof(float))));
  float *delta = lse + rowsStats;
  const AttentionShape sh = narrowShape(*p);
  const SequenceMask mask{p->causal, static_cast<int>(p->q_offset)};
  dispatchAttention(dt, head_dim > v_head_dim ? head_dim : v_head_dim, q, k, v, dout,
                    [&](const auto &in, auto dpl) {
                      launchAttentionGrad<decltype(dpl)::value>(stream, sh, in, mask, lse,
                                                                delta, dq, dk, dv);
                    });
}
