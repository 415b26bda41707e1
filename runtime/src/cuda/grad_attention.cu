//===- grad_attention.cu - attention backward (flash-attention-2 style) ---===//
//
// No S x Skv buffer and no saved scores: the softmax is recomputed tile by
// tile. Three kernels, tiles of 32 queries x 32 keys, 8 warps per block:
//
//  1. stats, one block per (query tile, query head, batch), the forward
//     kernel's online softmax (attendQueryTile of attention_common.cuh): per
//     query row the log-sum-exp of the scaled scores, lse = m + log(l), and
//     delta = sum_e dout[e] o[e] with the output o recomputed in f32 (not
//     re-read from the forward result). Both go to the runtime scratch,
//     [B, Hq, S] f32 each. A row with no visible key gets lse = +inf (all its
//     probabilities are 0).
//  2. dq, one block per (query tile, query head, batch): for every visible key
//     tile, p = exp(score - lse), dp = dout . v, ds = p (dp - delta), and
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
// RoPE (rotate-half, attention_common.cuh as for attention.cu; angles and
// sin/cos in double) is applied to q and k when tiles are loaded
// (loadRopeTile); the gradients of the rotated vectors are rotated back by the
// inverse rotation (angle -p f_i, ropeBack) through the warp's own rows of
// shared memory before they are written.
//
// Query row s has global position qOff + s (q_offset of
// braid_k_attention_grad_offset, context parallelism; 0 for
// braid_k_attention_grad) for its RoPE, its rotation back and the causal mask
// t <= qOff + s; dk / dv are then the contribution of these query rows.
//
// Limits: head dims D, Dv <= 256 (accumulators of DPL = 1, 2, 4, 8 values per
// lane cover max(D, Dv)); causal needs qOff + S <= Skv. Shared memory: about
// 4 (64 D + 64 Dv + 128) bytes, 131 KiB at D = Dv = 256.
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_common.cuh"

namespace braid::cuda {
namespace {

using namespace attn;

//===--- 1. Row statistics --------------------------------------------------===//

template <typename T, int DPL>
__global__ void __launch_bounds__(kBlockThreads)
    attentionStatsKernel(const T *__restrict__ q, const T *__restrict__ k,
                         const T *__restrict__ v, const T *__restrict__ dout,
                         float *__restrict__ lseOut, float *__restrict__ deltaOut, int S, int Skv,
                         int Hq, int Hkv, int D, int Dv, int causal, float scale, double theta,
                         int qOff) {
  extern __shared__ float smem[];
  float *sQ = smem;                   // [kBlockQ][D]
  float *sK = sQ + kBlockQ * D;       // [kBlockK][D + 1]
  float *sV = sK + kBlockK * (D + 1); // [kBlockK][Dv]
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBlockQ;
  const int hk = h / (Hq / Hkv);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rowBase = warp * kRowsPerWarp;

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][DPL];
  attendQueryTile<T, DPL>(q, k, v, sQ, sK, sV, b, h, hk, q0, S, Skv, Hq, Hkv, D, Dv, causal,
                          scale, theta, qOff, m, l, acc);

#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    int s = q0 + rowBase + qi;
    if (s >= S) // warp-uniform
      continue;
    float inv = l[qi] > 0.0f ? 1.0f / l[qi] : 0.0f;
    const T *g = dout + rowOffset(b, s, S, Hq, h, Dv);
    float dot = 0.0f;
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      if (d < Dv)
        dot = fmaf(acc[qi][e] * inv, toF(g[d]), dot);
    }
    dot = warpSum(dot);
    if (lane == 0) {
      int64_t i = (static_cast<int64_t>(b) * Hq + h) * S + s;
      lseOut[i] = l[qi] > 0.0f ? m[qi] + logf(l[qi]) : INFINITY;
      deltaOut[i] = dot;
    }
  }
}

//===--- 2. dq --------------------------------------------------------------===//

template <typename T, int DPL>
__global__ void __launch_bounds__(kBlockThreads)
    attentionGradQKernel(const T *__restrict__ q, const T *__restrict__ k,
                         const T *__restrict__ v, const T *__restrict__ dout,
                         const float *__restrict__ lse, const float *__restrict__ delta,
                         T *__restrict__ dq, int S, int Skv, int Hq, int Hkv, int D, int Dv,
                         int causal, float scale, double theta, int qOff) {
  extern __shared__ float smem[];
  float *sQ = smem;                      // [kBlockQ][D] (rotated, scaled)
  float *sDO = sQ + kBlockQ * D;         // [kBlockQ][Dv]
  float *sK = sDO + kBlockQ * Dv;        // [kBlockK][D + 1] (rotated)
  float *sV = sK + kBlockK * (D + 1);    // [kBlockK][Dv + 1]
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBlockQ;
  const int hk = h / (Hq / Hkv);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int rowBase = warp * kRowsPerWarp;

  loadRopeTile<true>(sQ, D, kBlockQ, q, b, q0, S, Hq, h, D, theta, scale, qOff);
  loadTile(sDO, Dv, kBlockQ, dout, b, q0, S, Hq, h, Dv);
  float rowLse[kRowsPerWarp], rowDelta[kRowsPerWarp], acc[kRowsPerWarp][DPL];
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    int s = q0 + rowBase + qi;
    int64_t i = (static_cast<int64_t>(b) * Hq + h) * S + s;
    rowLse[qi] = s < S ? lse[i] : INFINITY;
    rowDelta[qi] = s < S ? delta[i] : 0.0f;
#pragma unroll
    for (int e = 0; e < DPL; ++e)
      acc[qi][e] = 0.0f;
  }
  const int qLast = min(q0 + kBlockQ, S) - 1;
  const int kEnd = causal ? min(Skv, qOff + qLast + 1) : Skv;

  for (int k0 = 0; k0 < kEnd; k0 += kBlockK) {
    __syncthreads();
    loadRopeTile<false>(sK, D + 1, kBlockK, k, b, k0, Skv, Hkv, hk, D, theta, 1.0f, 0);
    loadTile(sV, Dv + 1, kBlockK, v, b, k0, Skv, Hkv, hk, Dv);
    __syncthreads();

    const int t = k0 + lane;
    float score[kRowsPerWarp], dp[kRowsPerWarp];
#pragma unroll
    for (int qi = 0; qi < kRowsPerWarp; ++qi)
      score[qi] = dp[qi] = 0.0f;
    const float *kRow = sK + lane * (D + 1);
    for (int d = 0; d < D; ++d) {
      float kv = kRow[d];
#pragma unroll
      for (int qi = 0; qi < kRowsPerWarp; ++qi)
        score[qi] = fmaf(sQ[(rowBase + qi) * D + d], kv, score[qi]);
    }
    const float *vRow = sV + lane * (Dv + 1);
    for (int d = 0; d < Dv; ++d) {
      float vv = vRow[d];
#pragma unroll
      for (int qi = 0; qi < kRowsPerWarp; ++qi)
        dp[qi] = fmaf(sDO[(rowBase + qi) * Dv + d], vv, dp[qi]);
    }
    float ds[kRowsPerWarp];
#pragma unroll
    for (int qi = 0; qi < kRowsPerWarp; ++qi) {
      int s = q0 + rowBase + qi;
      bool valid = t < Skv && s < S && (!causal || t <= qOff + s);
      ds[qi] = valid ? expf(score[qi] - rowLse[qi]) * (dp[qi] - rowDelta[qi]) : 0.0f;
    }
    const int tileKeys = min(kBlockK, Skv - k0);
    for (int j = 0; j < tileKeys; ++j) {
      float dsj[kRowsPerWarp];
#pragma unroll
      for (int qi = 0; qi < kRowsPerWarp; ++qi)
        dsj[qi] = __shfl_sync(0xffffffffu, ds[qi], j);
#pragma unroll
      for (int e = 0; e < DPL; ++e) {
        int d = lane + 32 * e;
        float kv = d < D ? sK[j * (D + 1) + d] : 0.0f;
#pragma unroll
        for (int qi = 0; qi < kRowsPerWarp; ++qi)
          acc[qi][e] = fmaf(dsj[qi], kv, acc[qi][e]);
      }
    }
  }

  // The warp's own sQ rows are read by no other warp: reuse them for the
  // gradient of the rotated q, then rotate back.
  __syncwarp();
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    float *g = sQ + (rowBase + qi) * D;
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      if (d < D)
        g[d] = acc[qi][e] * scale;
    }
  }
  __syncwarp();
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    int s = q0 + rowBase + qi;
    if (s >= S)
      continue;
    const float *g = sQ + (rowBase + qi) * D;
    T *row = dq + rowOffset(b, s, S, Hq, h, D);
    for (int d = lane; d < D; d += 32)
      row[d] = fromF<T>(ropeBack(g, d, D, qOff + s, theta));
  }
}

//===--- 3. dk, dv ----------------------------------------------------------===//

template <typename T, int DPL>
__global__ void __launch_bounds__(kBlockThreads)
    attentionGradKVKernel(const T *__restrict__ q, const T *__restrict__ k,
                          const T *__restrict__ v, const T *__restrict__ dout,
                          const float *__restrict__ lse, const float *__restrict__ delta,
                          T *__restrict__ dk, T *__restrict__ dv, int S, int Skv, int Hq,
                          int Hkv, int D, int Dv, int causal, float scale, double theta,
                          int qOff) {
  extern __shared__ float smem[];
  float *sK = smem;                       // [kBlockK][D] (rotated)
  float *sV = sK + kBlockK * D;           // [kBlockK][Dv]
  float *sQ = sV + kBlockK * Dv;          // [kBlockQ][D + 1] (rotated, scaled)
  float *sDO = sQ + kBlockQ * (D + 1);    // [kBlockQ][Dv + 1]
  float *sLse = sDO + kBlockQ * (Dv + 1); // [kBlockQ]
  float *sDelta = sLse + kBlockQ;         // [kBlockQ]
  const int b = blockIdx.z, hk = blockIdx.y, k0 = blockIdx.x * kBlockK;
  const int group = Hq / Hkv;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int rowBase = warp * kRowsPerWarp;

  loadRopeTile<false>(sK, D, kBlockK, k, b, k0, Skv, Hkv, hk, D, theta, 1.0f, 0);
  loadTile(sV, Dv, kBlockK, v, b, k0, Skv, Hkv, hk, Dv);
  float accK[kRowsPerWarp][DPL], accV[kRowsPerWarp][DPL];
#pragma unroll
  for (int ki = 0; ki < kRowsPerWarp; ++ki)
#pragma unroll
    for (int e = 0; e < DPL; ++e)
      accK[ki][e] = accV[ki][e] = 0.0f;

  // Causal: query rows before global position k0 see none of the tile.
  const int qStart = causal ? max(0, k0 - qOff) : 0;
  for (int hh = 0; hh < group; ++hh) {
    const int h = hk * group + hh;
    for (int q0 = qStart; q0 < S; q0 += kBlockQ) {
      __syncthreads(); // previous tile consumed (and sK / sV written, first time)
      loadRopeTile<true>(sQ, D + 1, kBlockQ, q, b, q0, S, Hq, h, D, theta, scale, qOff);
      loadTile(sDO, Dv + 1, kBlockQ, dout, b, q0, S, Hq, h, Dv);
      if (tid < kBlockQ) {
        int s = q0 + tid;
        int64_t i = (static_cast<int64_t>(b) * Hq + h) * S + s;
        sLse[tid] = s < S ? lse[i] : INFINITY;
        sDelta[tid] = s < S ? delta[i] : 0.0f;
      }
      __syncthreads();

      const int s = q0 + lane;
      float score[kRowsPerWarp], dp[kRowsPerWarp];
#pragma unroll
      for (int ki = 0; ki < kRowsPerWarp; ++ki)
        score[ki] = dp[ki] = 0.0f;
      const float *qRow = sQ + lane * (D + 1);
      for (int d = 0; d < D; ++d) {
        float qv = qRow[d];
#pragma unroll
        for (int ki = 0; ki < kRowsPerWarp; ++ki)
          score[ki] = fmaf(sK[(rowBase + ki) * D + d], qv, score[ki]);
      }
      const float *doRow = sDO + lane * (Dv + 1);
      for (int d = 0; d < Dv; ++d) {
        float gv = doRow[d];
#pragma unroll
        for (int ki = 0; ki < kRowsPerWarp; ++ki)
          dp[ki] = fmaf(sV[(rowBase + ki) * Dv + d], gv, dp[ki]);
      }
      const float myLse = sLse[lane], myDelta = sDelta[lane];
      float p[kRowsPerWarp], ds[kRowsPerWarp];
#pragma unroll
      for (int ki = 0; ki < kRowsPerWarp; ++ki) {
        int t = k0 + rowBase + ki;
        bool valid = t < Skv && s < S && (!causal || t <= qOff + s);
        p[ki] = valid ? expf(score[ki] - myLse) : 0.0f;
        ds[ki] = p[ki] * (dp[ki] - myDelta);
      }
      const int tileQueries = min(kBlockQ, S - q0);
      for (int j = 0; j < tileQueries; ++j) {
        float pj[kRowsPerWarp], dsj[kRowsPerWarp];
#pragma unroll
        for (int ki = 0; ki < kRowsPerWarp; ++ki) {
          pj[ki] = __shfl_sync(0xffffffffu, p[ki], j);
          dsj[ki] = __shfl_sync(0xffffffffu, ds[ki], j);
        }
#pragma unroll
        for (int e = 0; e < DPL; ++e) {
          int d = lane + 32 * e;
          float gv = d < Dv ? sDO[j * (Dv + 1) + d] : 0.0f;
          float qv = d < D ? sQ[j * (D + 1) + d] : 0.0f;
#pragma unroll
          for (int ki = 0; ki < kRowsPerWarp; ++ki) {
            accV[ki][e] = fmaf(pj[ki], gv, accV[ki][e]);
            accK[ki][e] = fmaf(dsj[ki], qv, accK[ki][e]);
          }
        }
      }
    }
  }

  // dv directly; dk through the warp's own sK rows (read by no other warp),
  // rotated back.
  __syncwarp();
#pragma unroll
  for (int ki = 0; ki < kRowsPerWarp; ++ki) {
    int t = k0 + rowBase + ki;
    float *g = sK + (rowBase + ki) * D;
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      if (d < D)
        g[d] = accK[ki][e];
      if (d < Dv && t < Skv)
        dv[rowOffset(b, t, Skv, Hkv, hk, Dv) + d] = fromF<T>(accV[ki][e]);
    }
  }
  __syncwarp();
#pragma unroll
  for (int ki = 0; ki < kRowsPerWarp; ++ki) {
    int t = k0 + rowBase + ki;
    if (t >= Skv)
      continue;
    const float *g = sK + (rowBase + ki) * D;
    T *row = dk + rowOffset(b, t, Skv, Hkv, hk, D);
    for (int d = lane; d < D; d += 32)
      row[d] = fromF<T>(ropeBack(g, d, D, t, theta));
  }
}

template <typename T, int DPL>
void launchAttentionGrad(cudaStream_t stream, const void *q, const void *k, const void *v,
                         const void *dout, void *dq, void *dk, void *dv, float *lse,
                         float *delta, int64_t batch, int64_t seq, int64_t seqKv, int64_t heads,
                         int64_t kvHeads, int64_t D, int64_t Dv, int causal, float scale,
                         double theta, int64_t qOffset) {
  const int S = static_cast<int>(seq), Skv = static_cast<int>(seqKv);
  const int Hq = static_cast<int>(heads), Hkv = static_cast<int>(kvHeads);
  const int d = static_cast<int>(D), dvDim = static_cast<int>(Dv);
  const int qOff = static_cast<int>(qOffset);
  const T *qT = static_cast<const T *>(q), *kT = static_cast<const T *>(k),
          *vT = static_cast<const T *>(v), *gT = static_cast<const T *>(dout);
  const unsigned qTiles = static_cast<unsigned>((seq + kBlockQ - 1) / kBlockQ);
  const unsigned kTiles = static_cast<unsigned>((seqKv + kBlockK - 1) / kBlockK);

  size_t statsSmem = sizeof(float) * static_cast<size_t>(kBlockQ * D + kBlockK * (D + 1) +
                                                         kBlockK * Dv);
  auto stats = attentionStatsKernel<T, DPL>;
  setSmem(stats, statsSmem);
  stats<<<dim3(qTiles, Hq, batch), kBlockThreads, statsSmem, stream>>>(
      qT, kT, vT, gT, lse, delta, S, Skv, Hq, Hkv, d, dvDim, causal, scale, theta, qOff);
  BRAID_CUDA_CHECK_LAUNCH();

  size_t qSmem = sizeof(float) * static_cast<size_t>(kBlockQ * D + kBlockQ * Dv +
                                                     kBlockK * (D + 1) + kBlockK * (Dv + 1));
  auto gradQ = attentionGradQKernel<T, DPL>;
  setSmem(gradQ, qSmem);
  gradQ<<<dim3(qTiles, Hq, batch), kBlockThreads, qSmem, stream>>>(
      qT, kT, vT, gT, lse, delta, static_cast<T *>(dq), S, Skv, Hq, Hkv, d, dvDim, causal, scale,
      theta, qOff);
  BRAID_CUDA_CHECK_LAUNCH();

  size_t kvSmem = sizeof(float) * static_cast<size_t>(kBlockK * D + kBlockK * Dv +
                                                      kBlockQ * (D + 1) + kBlockQ * (Dv + 1) +
                                                      2 * kBlockQ);
  auto gradKV = attentionGradKVKernel<T, DPL>;
  setSmem(gradKV, kvSmem);
  gradKV<<<dim3(kTiles, Hkv, batch), kBlockThreads, kvSmem, stream>>>(
      qT, kT, vT, gT, lse, delta, static_cast<T *>(dk), static_cast<T *>(dv), S, Skv, Hq, Hkv, d,
      dvDim, causal, scale, theta, qOff);
  BRAID_CUDA_CHECK_LAUNCH();
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_attention_grad_offset(braid_rt *rt, braid_dtype dt, const void *q,
                                              const void *k, const void *v, const void *dout,
                                              void *dq, void *dk, void *dv, int64_t batch,
                                              int64_t seq, int64_t seq_kv, int64_t heads,
                                              int64_t kv_heads, int64_t head_dim,
                                              int64_t v_head_dim, int32_t causal, double scale,
                                              double rope_theta, int64_t q_offset) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  if (batch <= 0 || heads <= 0)
    return;
  if (kv_heads <= 0 || heads % kv_heads != 0)
    BRAID_CUDA_FATAL("attention_grad: %lld query heads not a multiple of %lld kv heads",
                     static_cast<long long>(heads), static_cast<long long>(kv_heads));
  if (q_offset < 0 || q_offset + seq > INT32_MAX)
    BRAID_CUDA_FATAL("attention_grad: query offset %lld outside 0..2^31 - 1 - S (S %lld)",
                     static_cast<long long>(q_offset), static_cast<long long>(seq));
  if (causal && q_offset + seq > seq_kv)
    BRAID_CUDA_FATAL("attention_grad: causal needs q_offset + S <= Skv, got %lld + %lld and "
                     "%lld",
                     static_cast<long long>(q_offset), static_cast<long long>(seq),
                     static_cast<long long>(seq_kv));
  if (rope_theta > 0 && head_dim % 2 != 0)
    BRAID_CUDA_FATAL("attention_grad: rope needs an even head dim, got %lld",
                     static_cast<long long>(head_dim));
  if (head_dim <= 0 || v_head_dim <= 0 || head_dim > 256 || v_head_dim > 256)
    BRAID_CUDA_FATAL("attention_grad: head dims %lld / %lld outside the kernel's limits "
                     "(1..256)",
                     static_cast<long long>(head_dim), static_cast<long long>(v_head_dim));
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
  const float s = static_cast<float>(scale);
  const int64_t widest = head_dim > v_head_dim ? head_dim : v_head_dim;
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (widest <= 32)
      launchAttentionGrad<T, 1>(stream, q, k, v, dout, dq, dk, dv, lse, delta, batch, seq,
                                seq_kv, heads, kv_heads, head_dim, v_head_dim, causal, s,
                                rope_theta, q_offset);
    else if (widest <= 64)
      launchAttentionGrad<T, 2>(stream, q, k, v, dout, dq, dk, dv, lse, delta, batch, seq,
                                seq_kv, heads, kv_heads, head_dim, v_head_dim, causal, s,
                                rope_theta, q_offset);
    else if (widest <= 128)
      launchAttentionGrad<T, 4>(stream, q, k, v, dout, dq, dk, dv, lse, delta, batch, seq,
                                seq_kv, heads, kv_heads, head_dim, v_head_dim, causal, s,
                                rope_theta, q_offset);
    else
      launchAttentionGrad<T, 8>(stream, q, k, v, dout, dq, dk, dv, lse, delta, batch, seq,
                                seq_kv, heads, kv_heads, head_dim, v_head_dim, causal, s,
                                rope_theta, q_offset);
  });
}

extern "C" void braid_k_attention_grad(braid_rt *rt, braid_dtype dt, const void *q,
                                       const void *k, const void *v, const void *dout, void *dq,
                                       void *dk, void *dv, int64_t batch, int64_t seq,
                                       int64_t seq_kv, int64_t heads, int64_t kv_heads,
                                       int64_t head_dim, int64_t v_head_dim, int32_t causal,
                                       double scale, double rope_theta) {
  if (batch > 0 && heads > 0 && causal && seq != seq_kv)
    BRAID_CUDA_FATAL("attention_grad: causal needs S == Skv, got %lld and %lld",
                     static_cast<long long>(seq), static_cast<long long>(seq_kv));
  braid_k_attention_grad_offset(rt, dt, q, k, v, dout, dq, dk, dv, batch, seq, seq_kv, heads,
                                kv_heads, head_dim, v_head_dim, causal, scale, rope_theta, 0);
}
