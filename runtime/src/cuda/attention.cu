//===- attention.cu - flash-style attention: causal, GQA, RoPE ------------===//
//
// One block per (query tile of 32 rows, query head, batch); 8 warps, each
// owning 4 query rows. Key/value tiles of 32 rows stream through shared
// memory; an online softmax (running max m, running sum l, rescaled output
// accumulator) means no S x Skv buffer exists. Within a key tile, lane j scores
// key j against the warp's 4 queries; then every lane accumulates its output
// dimensions (lane + 32 e, e < DPL) over the tile's 32 keys.
//
// RoPE (rotate-half, positions 0..S-1 / 0..Skv-1) is applied while loading q
// and k tiles into shared memory; the angle p * theta^(-2i/D) and its sin/cos
// are computed in double (angles reach thousands of radians). q is scaled by
// `scale` on load. Causal tiles beyond the last query of a block are skipped.
//
// Limits: value head dim Dv <= 256 (DPL in {1, 2, 4, 8}); D is a runtime loop.
// Shared memory: 4 * (32 D + 32 (D + 1) + 32 Dv) bytes (~97 KiB at D = Dv = 256).
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

namespace braid::cuda {
namespace {

constexpr int kBlockQ = 32, kBlockK = 32, kWarps = 8, kQueriesPerWarp = kBlockQ / kWarps;

template <typename T>
__device__ __forceinline__ float ropeLoad(const T *row, int d, int D, int pos, double theta) {
  float x = toF(row[d]);
  if (theta <= 0.0)
    return x;
  int half = D / 2;
  int i = d < half ? d : d - half;
  double angle = static_cast<double>(pos) * pow(theta, -2.0 * i / D);
  double sn, cs;
  sincos(angle, &sn, &cs);
  if (d < half)
    return static_cast<float>(x * cs - static_cast<double>(toF(row[d + half])) * sn);
  return static_cast<float>(x * cs + static_cast<double>(toF(row[d - half])) * sn);
}

template <typename T, int DPL>
__global__ void __launch_bounds__(kWarps * 32)
    attentionKernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                    T *__restrict__ out, int S, int Skv, int Hq, int Hkv, int D, int Dv,
                    int causal, float scale, double theta) {
  extern __shared__ float smem[];
  float *sQ = smem;                       // [kBlockQ][D]
  float *sK = sQ + kBlockQ * D;           // [kBlockK][D + 1] (padded: lanes read rows)
  float *sV = sK + kBlockK * (D + 1);     // [kBlockK][Dv]
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBlockQ;
  const int hk = h / (Hq / Hkv);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int nthreads = blockDim.x;

  for (int idx = tid; idx < kBlockQ * D; idx += nthreads) {
    int r = idx / D, d = idx - r * D, s = q0 + r;
    float val = 0.0f;
    if (s < S)
      val = ropeLoad(q + ((static_cast<int64_t>(b) * S + s) * Hq + h) * D, d, D, s, theta) * scale;
    sQ[idx] = val;
  }

  float m[kQueriesPerWarp], l[kQueriesPerWarp], acc[kQueriesPerWarp][DPL];
#pragma unroll
  for (int qi = 0; qi < kQueriesPerWarp; ++qi) {
    m[qi] = -INFINITY;
    l[qi] = 0.0f;
#pragma unroll
    for (int e = 0; e < DPL; ++e)
      acc[qi][e] = 0.0f;
  }

  const int qLast = min(q0 + kBlockQ, S) - 1;
  const int kEnd = causal ? min(Skv, qLast + 1) : Skv;
  const int rowBase = warp * kQueriesPerWarp;

  for (int k0 = 0; k0 < kEnd; k0 += kBlockK) {
    __syncthreads(); // previous tile fully consumed (and sQ written, first time)
    for (int idx = tid; idx < kBlockK * D; idx += nthreads) {
      int r = idx / D, d = idx - r * D, t = k0 + r;
      float val = 0.0f;
      if (t < Skv)
        val = ropeLoad(k + ((static_cast<int64_t>(b) * Skv + t) * Hkv + hk) * D, d, D, t, theta);
      sK[r * (D + 1) + d] = val;
    }
    for (int idx = tid; idx < kBlockK * Dv; idx += nthreads) {
      int r = idx / Dv, d = idx - r * Dv, t = k0 + r;
      sV[idx] = t < Skv ? toF(v[((static_cast<int64_t>(b) * Skv + t) * Hkv + hk) * Dv + d]) : 0.0f;
    }
    __syncthreads();

    const int t = k0 + lane;
    float score[kQueriesPerWarp];
#pragma unroll
    for (int qi = 0; qi < kQueriesPerWarp; ++qi)
      score[qi] = 0.0f;
    const float *kRow = sK + lane * (D + 1);
    for (int d = 0; d < D; ++d) {
      float kv = kRow[d];
#pragma unroll
      for (int qi = 0; qi < kQueriesPerWarp; ++qi)
        score[qi] = fmaf(sQ[(rowBase + qi) * D + d], kv, score[qi]);
    }

    float p[kQueriesPerWarp];
#pragma unroll
    for (int qi = 0; qi < kQueriesPerWarp; ++qi) {
      int s = q0 + rowBase + qi;
      bool valid = t < Skv && s < S && (!causal || t <= s);
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
      float pj[kQueriesPerWarp];
#pragma unroll
      for (int qi = 0; qi < kQueriesPerWarp; ++qi)
        pj[qi] = __shfl_sync(0xffffffffu, p[qi], j);
#pragma unroll
      for (int e = 0; e < DPL; ++e) {
        int d = lane + 32 * e;
        float vv = d < Dv ? sV[j * Dv + d] : 0.0f;
#pragma unroll
        for (int qi = 0; qi < kQueriesPerWarp; ++qi)
          acc[qi][e] = fmaf(pj[qi], vv, acc[qi][e]);
      }
    }
  }

#pragma unroll
  for (int qi = 0; qi < kQueriesPerWarp; ++qi) {
    int s = q0 + rowBase + qi;
    if (s >= S)
      continue;
    float inv = l[qi] > 0.0f ? 1.0f / l[qi] : 0.0f;
    T *row = out + ((static_cast<int64_t>(b) * S + s) * Hq + h) * Dv;
#pragma unroll
    for (int e = 0; e < DPL; ++e) {
      int d = lane + 32 * e;
      if (d < Dv)
        row[d] = fromF<T>(acc[qi][e] * inv);
    }
  }
}

template <typename T, int DPL>
void launchAttention(cudaStream_t stream, const void *q, const void *k, const void *v, void *out,
                     int64_t batch, int64_t seq, int64_t seqKv, int64_t heads, int64_t kvHeads,
                     int64_t D, int64_t Dv, int causal, float scale, double theta) {
  size_t smemBytes = sizeof(float) * static_cast<size_t>(kBlockQ * D + kBlockK * (D + 1) +
                                                         kBlockK * Dv);
  auto kernel = attentionKernel<T, DPL>;
  if (smemBytes > 48 * 1024)
    BRAID_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smemBytes)));
  dim3 grid(static_cast<unsigned>((seq + kBlockQ - 1) / kBlockQ), static_cast<unsigned>(heads),
            static_cast<unsigned>(batch));
  kernel<<<grid, kWarps * 32, smemBytes, stream>>>(
      static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
      static_cast<T *>(out), static_cast<int>(seq), static_cast<int>(seqKv),
      static_cast<int>(heads), static_cast<int>(kvHeads), static_cast<int>(D),
      static_cast<int>(Dv), causal, scale, theta);
  BRAID_CUDA_CHECK_LAUNCH();
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_attention(braid_rt *rt, braid_dtype dt, const void *q, const void *k,
                                  const void *v, void *out, int64_t batch, int64_t seq,
                                  int64_t seq_kv, int64_t heads, int64_t kv_heads,
                                  int64_t head_dim, int64_t v_head_dim, int32_t causal,
                                  double scale, double rope_theta) {
  using namespace braid::cuda;
  if (batch <= 0 || seq <= 0 || heads <= 0)
    return;
  if (kv_heads <= 0 || heads % kv_heads != 0)
    BRAID_CUDA_FATAL("attention: %lld query heads not a multiple of %lld kv heads",
                     static_cast<long long>(heads), static_cast<long long>(kv_heads));
  if (causal && seq != seq_kv)
    BRAID_CUDA_FATAL("attention: causal needs S == Skv, got %lld and %lld",
                     static_cast<long long>(seq), static_cast<long long>(seq_kv));
  if (rope_theta > 0 && head_dim % 2 != 0)
    BRAID_CUDA_FATAL("attention: rope needs an even head dim, got %lld",
                     static_cast<long long>(head_dim));
  if (v_head_dim > 256 || head_dim > 1024)
    BRAID_CUDA_FATAL("attention: head dims %lld / %lld exceed the kernel's limits (D <= 1024, "
                     "Dv <= 256)",
                     static_cast<long long>(head_dim), static_cast<long long>(v_head_dim));
  if (seq > 65535LL * kBlockQ || heads > 65535 || batch > 65535)
    BRAID_CUDA_FATAL("attention: grid too large (S %lld, H %lld, B %lld)",
                     static_cast<long long>(seq), static_cast<long long>(heads),
                     static_cast<long long>(batch));
  cudaStream_t stream = streamOf(rt);
  float s = static_cast<float>(scale);
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (v_head_dim <= 32)
      launchAttention<T, 1>(stream, q, k, v, out, batch, seq, seq_kv, heads, kv_heads, head_dim,
                            v_head_dim, causal, s, rope_theta);
    else if (v_head_dim <= 64)
      launchAttention<T, 2>(stream, q, k, v, out, batch, seq, seq_kv, heads, kv_heads, head_dim,
                            v_head_dim, causal, s, rope_theta);
    else if (v_head_dim <= 128)
      launchAttention<T, 4>(stream, q, k, v, out, batch, seq, seq_kv, heads, kv_heads, head_dim,
                            v_head_dim, causal, s, rope_theta);
    else
      launchAttention<T, 8>(stream, q, k, v, out, batch, seq, seq_kv, heads, kv_heads, head_dim,
                            v_head_dim, causal, s, rope_theta);
  });
}
