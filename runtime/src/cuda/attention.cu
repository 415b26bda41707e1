//===- attention.cu - flash-style attention: causal, GQA, RoPE ------------===//
//
// braid_k_attention(_offset): the forward kernel of attention_core.cuh
// (attendQueryTile: the online softmax over key tiles, RoPE applied while
// loading q and k tiles, q scaled on load) with the sequence mask, whose
// query row s sits at position qOff + s (q_offset of
// braid_k_attention_offset, context parallelism; 0 for braid_k_attention) for
// its RoPE and causal mask; this file's epilogue normalizes and stores the
// output. One block per (query tile of 32 rows, query head, batch), 8 warps
// of 4 rows.
//
// Limits: value head dim Dv <= 256 (DPL in {1, 2, 4, 8}); D <= 1024 is a
// runtime loop. Shared memory: 4 * (32 D + 32 (D + 1) + 32 Dv) bytes
// (~97 KiB at D = Dv = 256).
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_core.cuh"

namespace braid::cuda {
namespace {

using namespace attn;

/// The forward epilogue of braid_k_attention: the normalized output in the
/// storage type T of the operands.
struct StoreOutput {
  void *out;

  template <typename T, int DPL>
  __device__ void operator()(const AttentionShape &sh, const AttentionInputs<T> &, int b, int h,
                             int s, float, float l, const float (&acc)[DPL]) const {
    storeNormalized(static_cast<T *>(out) + rowOffset(b, s, sh.S, sh.Hq, h, sh.Dv), acc,
                    l > 0.0f ? 1.0f / l : 0.0f, sh.Dv);
  }
};

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
  checkHeads("attention", heads, kv_heads);
  checkQueryOffset("attention", q_offset, seq, seq_kv, causal);
  checkRope("attention", rope_theta, head_dim);
  if (v_head_dim > 256 || head_dim > 1024)
    BRAID_CUDA_FATAL("attention: head dims %lld / %lld exceed the kernel's limits (D <= 1024, "
                     "Dv <= 256)",
                     static_cast<long long>(head_dim), static_cast<long long>(v_head_dim));
  if (seq > 65535LL * kBlockQ || heads > 65535 || batch > 65535)
    BRAID_CUDA_FATAL("attention: grid too large (S %lld, H %lld, B %lld)",
                     static_cast<long long>(seq), static_cast<long long>(heads),
                     static_cast<long long>(batch));
  const AttentionShape sh = narrowShape(batch, seq, seq_kv, heads, kv_heads, head_dim,
                                        v_head_dim, scale, rope_theta);
  const SequenceMask mask{causal, static_cast<int>(q_offset)};
  cudaStream_t stream = streamOf(rt);
  dispatchAttention(dt, v_head_dim, q, k, v, nullptr, [&](const auto &in, auto dpl) {
    launchForward<decltype(dpl)::value>(stream, sh, in, mask, StoreOutput{out});
  });
}

extern "C" void braid_k_attention(braid_rt *rt, braid_dtype dt, const void *q, const void *k,
                                  const void *v, void *out, int64_t batch, int64_t seq,
                                  int64_t seq_kv, int64_t heads, int64_t kv_heads,
                                  int64_t head_dim, int64_t v_head_dim, int32_t causal,
                                  double scale, double rope_theta) {
  if (batch > 0 && seq > 0 && heads > 0)
    braid::cuda::attn::checkCausalSquare("attention", seq, seq_kv, causal);
  braid_k_attention_offset(rt, dt, q, k, v, out, batch, seq, seq_kv, heads, kv_heads, head_dim,
                           v_head_dim, causal, scale, rope_theta, 0);
}
