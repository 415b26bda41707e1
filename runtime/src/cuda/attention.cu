//===- attention.cu - flash-style attention: causal, GQA, RoPE ------------===//
//
// One block per (query tile of 32 rows, query head, batch); 8 warps, each
// owning 4 query rows. The online softmax over key tiles of 32 rows, with RoPE
// applied while loading q and k tiles and q scaled by `scale` on load, is
// attendQueryTile of attention_common.cuh (shared with the backward's
// statistics kernel); this kernel normalizes and stores the output. Query
// row s has global position qOff + s (q_offset of braid_k_attention_offset,
// context parallelism) for its RoPE and causal mask; braid_k_attention is
// qOff = 0.
//
// Limits: value head dim Dv <= 256 (DPL in {1, 2, 4, 8}); D is a runtime loop.
// Shared memory: 4 * (32 D + 32 (D + 1) + 32 Dv) bytes (~97 KiB at D = Dv = 256).
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_common.cuh"

namespace braid::cuda {
namespace {

using namespace attn;

template <typename T, int DPL>
__global__ void __launch_bounds__(kBlockThreads)
    attentionKernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                    T *__restrict__ out, int S, int Skv, int Hq, int Hkv, int D, int Dv,
                    int causal, float scale, double theta, int qOff) {
  extern __shared__ float smem[];
  float *sQ = smem;                       // [kBlockQ][D]
  float *sK = sQ + kBlockQ * D;           // [kBlockK][D + 1] (padded: lanes read rows)
  float *sV = sK + kBlockK * (D + 1);     // [kBlockK][Dv]
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
    if (s >= S)
      continue;
    float inv = l[qi] > 0.0f ? 1.0f / l[qi] : 0.0f;
    T *row = out + rowOffset(b, s, S, Hq, h, Dv);
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
                     int64_t D, int64_t Dv, int causal, float scale, double theta,
                     int64_t qOff) {
  size_t smemBytes = sizeof(float) * static_cast<size_t>(kBlockQ * D + kBlockK * (D + 1) +
                                                         kBlockK * Dv);
  auto kernel = attentionKernel<T, DPL>;
  setSmem(kernel, smemBytes);
  dim3 grid(static_cast<unsigned>((seq + kBlockQ - 1) / kBlockQ), static_cast<unsigned>(heads),
            static_cast<unsigned>(batch));
  kernel<<<grid, kBlockThreads, smemBytes, stream>>>(
      static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
      static_cast<T *>(out), static_cast<int>(seq), static_cast<int>(seqKv),
      static_cast<int>(heads), static_cast<int>(kvHeads), static_cast<int>(D),
      static_cast<int>(Dv), causal, scale, theta, static_cast<int>(qOff));
  BRAID_CUDA_CHECK_LAUNCH();
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_attention_offset(braid_rt *rt, braid_dtype dt, const void *q,
                                         const void *k, const void *v, void *out, int64_t batch,
                                         int64_t seq, int64_t seq_kv, int64_t heads,
                                         int64_t kv_heads, int64_t head_dim, int64_t v_head_dim,
                                         int32_t causal, double scale, double rope_theta,
                                         int64_t q_offset) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  if (batch <= 0 || seq <= 0 || heads <= 0)
    return;
  if (kv_heads <= 0 || heads % kv_heads != 0)
    BRAID_CUDA_FATAL("attention: %lld query heads not a multiple of %lld kv heads",
                     static_cast<long long>(heads), static_cast<long long>(kv_heads));
  if (q_offset < 0 || q_offset + seq > INT32_MAX)
    BRAID_CUDA_FATAL("attention: query offset %lld outside 0..2^31 - 1 - S (S %lld)",
                     static_cast<long long>(q_offset), static_cast<long long>(seq));
  if (causal && q_offset + seq > seq_kv)
    BRAID_CUDA_FATAL("attention: causal needs q_offset + S <= Skv, got %lld + %lld and %lld",
                     static_cast<long long>(q_offset), static_cast<long long>(seq),
                     static_cast<long long>(seq_kv));
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
                            v_head_dim, causal, s, rope_theta, q_offset);
    else if (v_head_dim <= 64)
      launchAttention<T, 2>(stream, q, k, v, out, batch, seq, seq_kv, heads, kv_heads, head_dim,
                            v_head_dim, causal, s, rope_theta, q_offset);
    else if (v_head_dim <= 128)
      launchAttention<T, 4>(stream, q, k, v, out, batch, seq, seq_kv, heads, kv_heads, head_dim,
                            v_head_dim, causal, s, rope_theta, q_offset);
    else
      launchAttention<T, 8>(stream, q, k, v, out, batch, seq, seq_kv, heads, kv_heads, head_dim,
                            v_head_dim, causal, s, rope_theta, q_offset);
  });
}

extern "C" void braid_k_attention(braid_rt *rt, braid_dtype dt, const void *q, const void *k,
                                  const void *v, void *out, int64_t batch, int64_t seq,
                                  int64_t seq_kv, int64_t heads, int64_t kv_heads,
                                  int64_t head_dim, int64_t v_head_dim, int32_t causal,
                                  double scale, double rope_theta) {
  if (batch > 0 && seq > 0 && heads > 0 && causal && seq != seq_kv)
    BRAID_CUDA_FATAL("attention: causal needs S == Skv, got %lld and %lld",
                     static_cast<long long>(seq), static_cast<long long>(seq_kv));
  braid_k_attention_offset(rt, dt, q, k, v, out, batch, seq, seq_kv, heads, kv_heads, head_dim,
                           v_head_dim, causal, scale, rope_theta, 0);
}
