//===- grad_attention_block.cu - gradient of attention by key blocks ------===//
//
// braid_k_attention_block_grad on the GPU (the design is described with the
// other key-block kernels in attention_block.cu; the CPU reference is
// runtime/src/cpu/attention_block.cpp).
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_block_common.cuh"

namespace braid::cuda {
namespace {

//===--- Backward ------------------------------------------------------------===//

constexpr int kPad = kBlockK + 1; // sP / sDS row pitch

template <typename T, int DPL>
__global__ void __launch_bounds__(kBlockThreads)
    attentionBlockGradKernel(const T *__restrict__ q, const T *__restrict__ k,
                             const T *__restrict__ v, const T *__restrict__ dout,
                             const int64_t *__restrict__ qPos, const int64_t *__restrict__ kPos,
                             const float *__restrict__ lse, const float *__restrict__ delta,
                             float *__restrict__ dq, float *__restrict__ dk,
                             float *__restrict__ dv, int S, int Skv, int Hq, int Hkv, int D,
                             int Dv, int causal, float scale, double theta) {
  extern __shared__ float smem[];
  float *sQ = smem;                     // [kBlockQ][D] (rotated, scaled)
  float *sDO = sQ + kBlockQ * D;        // [kBlockQ][Dv]
  float *sK = sDO + kBlockQ * Dv;       // [kBlockK][D + 1] (rotated)
  float *sV = sK + kBlockK * (D + 1);   // [kBlockK][Dv + 1]
  float *sP = sV + kBlockK * (Dv + 1);  // [kBlockQ][kPad]
  float *sDS = sP + kBlockQ * kPad;     // [kBlockQ][kPad]
  float *sG = sDS + kBlockQ * kPad;     // [32][D]: rows owned by warps (rotation back)
  __shared__ long long sQPos[kBlockQ], sKPos[kBlockK];
  __shared__ float sLse[kBlockQ], sDelta[kBlockQ];
  __shared__ int sAny;
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBlockQ;
  const int hk = h / (Hq / Hkv);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int rowBase = warp * kRowsPerWarp;

  if (tid < kBlockQ) {
    int s = q0 + tid;
    float ls = -INFINITY, dl = 0.0f;
    long long p = LLONG_MIN;
    if (s < S) {
      int64_t i = (static_cast<int64_t>(b) * S + s) * Hq + h;
      ls = lse[i];
      dl = delta[i];
      p = qPos[s];
    }
    sLse[tid] = ls;
    sDelta[tid] = dl;
    sQPos[tid] = ls == -INFINITY ? LLONG_MIN : p; // a row seeing no key: no horizon
  }
  __syncthreads();
  long long qMax = LLONG_MIN;
  bool anyLive = false;
  for (int r = 0; r < kBlockQ; ++r) {
    anyLive = anyLive || sLse[r] != -INFINITY;
    qMax = max(qMax, sQPos[r]);
  }
  if (!anyLive) // block-uniform: nothing to add
    return;
  loadPosTile(sQ, D, kBlockQ, q, qPos, b, q0, S, Hq, h, D, theta, scale);
  loadTile(sDO, Dv, kBlockQ, dout, b, q0, S, Hq, h, Dv);

  long long rowPos[kRowsPerWarp];
  float rowLse[kRowsPerWarp], rowDelta[kRowsPerWarp], accQ[kRowsPerWarp][DPL];
  bool live[kRowsPerWarp];
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    int r = rowBase + qi;
    rowPos[qi] = sQPos[r];
    rowLse[qi] = sLse[r];
    rowDelta[qi] = sDelta[r];
    live[qi] = q0 + r < S && rowLse[qi] != -INFINITY;
#pragma unroll
    for (int e = 0; e < DPL; ++e)
      accQ[qi][e] = 0.0f;
  }

  for (int k0 = 0; k0 < Skv; k0 += kBlockK) {
    __syncthreads(); // previous tile consumed (and sQ / sDO written, first time)
    keyTileVisible(kPos, k0, Skv, causal, qMax, sKPos, &sAny);
    __syncthreads();
    if (!sAny) // block-uniform
      continue;
    loadPosTile(sK, D + 1, kBlockK, k, kPos, b, k0, Skv, Hkv, hk, D, theta, 1.0f);
    loadTile(sV, Dv + 1, kBlockK, v, b, k0, Skv, Hkv, hk, Dv);
    __syncthreads();

    // Lane j: key k0 + j against the warp's rows.
    const int t = k0 + lane;
    const long long kp = sKPos[lane];
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
      bool valid = t < Skv && live[qi] && (!causal || kp <= rowPos[qi]);
      float p = valid ? expf(score[qi] - rowLse[qi]) : 0.0f;
      ds[qi] = p * (dp[qi] - rowDelta[qi]);
      sP[(rowBase + qi) * kPad + lane] = p;
      sDS[(rowBase + qi) * kPad + lane] = ds[qi];
    }

    // dq' of the warp's rows: sum over the tile's keys of ds k'.
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
          accQ[qi][e] = fmaf(dsj[qi], kv, accQ[qi][e]);
      }
    }
    __syncthreads(); // every row's p / ds of the tile in sP / sDS

    // dk', dv of the warp's keys rowBase.. of the tile over the tile's rows.
    float accK[kRowsPerWarp][DPL], accV[kRowsPerWarp][DPL];
#pragma unroll
    for (int ki = 0; ki < kRowsPerWarp; ++ki)
#pragma unroll
      for (int e = 0; e < DPL; ++e)
        accK[ki][e] = accV[ki][e] = 0.0f;
    const int tileRows = min(kBlockQ, S - q0);
    for (int r = 0; r < tileRows; ++r) {
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
#pragma unroll
    for (int ki = 0; ki < kRowsPerWarp; ++ki) {
      int t2 = k0 + rowBase + ki;
      float *g = sG + (rowBase + ki) * D;
#pragma unroll
      for (int e = 0; e < DPL; ++e) {
        int d = lane + 32 * e;
        if (d < D)
          g[d] = accK[ki][e];
        if (d < Dv && t2 < Skv)
          atomicAdd(dv + rowOffset(b, t2, Skv, Hkv, hk, Dv) + d, accV[ki][e]);
      }
    }
    __syncwarp();
#pragma unroll
    for (int ki = 0; ki < kRowsPerWarp; ++ki) {
      int t2 = k0 + rowBase + ki;
      if (t2 >= Skv)
        continue;
      const float *g = sG + (rowBase + ki) * D;
      const long long kpos = sKPos[rowBase + ki];
      float *row = dk + rowOffset(b, t2, Skv, Hkv, hk, D);
      for (int d = lane; d < D; d += 32)
        atomicAdd(row + d, ropeBackAt(g, d, D, kpos, theta));
    }
    __syncwarp(); // sG rows read before the next tile rewrites them
  }

  // dq += scale dq' rotated back, through the warp's own sG rows.
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    float *g = sG + (rowBase + qi) * D;
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      if (d < D)
        g[d] = accQ[qi][e] * scale;
    }
  }
  __syncwarp();
#pragma unroll
  for (int qi = 0; qi < kRowsPerWarp; ++qi) {
    int s = q0 + rowBase + qi;
    if (!live[qi])
      continue;
    const float *g = sG + (rowBase + qi) * D;
    float *row = dq + rowOffset(b, s, S, Hq, h, D);
    const long long pos = qPos[s];
    for (int d = lane; d < D; d += 32)
      row[d] += ropeBackAt(g, d, D, pos, theta);
  }
}

template <typename T, int DPL>
void launchBlockGrad(cudaStream_t stream, const BlockShape &sh, const void *q, const void *k,
                     const void *v, const void *dout, const int64_t *qPos, const int64_t *kPos,
                     const float *lse, const float *delta, float *dq, float *dk, float *dv) {
  size_t smemBytes =
      sizeof(float) * static_cast<size_t>(kBlockQ * sh.D + kBlockQ * sh.Dv +
                                          kBlockK * (sh.D + 1) + kBlockK * (sh.Dv + 1) +
                                          2 * kBlockQ * kPad + kBlockQ * sh.D);
  auto kernel = attentionBlockGradKernel<T, DPL>;
  setSmem(kernel, smemBytes);
  dim3 grid(static_cast<unsigned>((sh.S + kBlockQ - 1) / kBlockQ), sh.heads, sh.batch);
  kernel<<<grid, kBlockThreads, smemBytes, stream>>>(
      static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
      static_cast<const T *>(dout), qPos, kPos, lse, delta, dq, dk, dv, sh.S, sh.Skv, sh.Hq,
      sh.Hkv, sh.D, sh.Dv, sh.causal, sh.scale, sh.theta);
  BRAID_CUDA_CHECK_LAUNCH();
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_attention_block_grad(braid_rt *rt, braid_dtype dt, const void *q,
                                             const void *k, const void *v, const void *dout,
                                             const int64_t *q_pos, const int64_t *k_pos,
                                             const float *lse, const float *delta, float *dq,
                                             float *dk, float *dv, int64_t batch, int64_t seq,
                                             int64_t seq_kv, int64_t heads, int64_t kv_heads,
                                             int64_t head_dim, int64_t v_head_dim,
                                             int32_t causal, double scale, double rope_theta) {
  using namespace braid::cuda;
  if (!checkBlockShape("attention_block_grad", batch, seq, seq_kv, heads, kv_heads, head_dim,
                       v_head_dim, rope_theta))
    return;
  if (seq_kv == 0) // no keys: nothing to add
    return;
  cudaStream_t stream = streamOf(rt);
  const BlockShape sh = blockShape(batch, seq, seq_kv, heads, kv_heads, head_dim, v_head_dim,
                                   causal, scale, rope_theta);
  const int64_t widest = head_dim > v_head_dim ? head_dim : v_head_dim;
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (widest <= 32)
      launchBlockGrad<T, 1>(stream, sh, q, k, v, dout, q_pos, k_pos, lse, delta, dq, dk, dv);
    else if (widest <= 64)
      launchBlockGrad<T, 2>(stream, sh, q, k, v, dout, q_pos, k_pos, lse, delta, dq, dk, dv);
    else if (widest <= 128)
      launchBlockGrad<T, 4>(stream, sh, q, k, v, dout, q_pos, k_pos, lse, delta, dq, dk, dv);
    else
      launchBlockGrad<T, 8>(stream, sh, q, k, v, dout, q_pos, k_pos, lse, delta, dq, dk, dv);
  });
}
