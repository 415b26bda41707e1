//===- attention.cu - flash-style attention: causal, GQA, RoPE ------------===//
//
// braid_k_attention: the forward kernel of attention_core.cuh
// (attendQueryTile: the online softmax over key tiles, RoPE applied while
// loading q and k tiles, q scaled on load) with the sequence mask, whose
// query row s sits at position qOff + s (the call's q_offset, context
// parallelism; 0 for the whole sequence) for its RoPE and causal mask, and
// the core's StoreOutput epilogue, which normalizes and stores the output.
// One block per (query tile of 32 rows, query head, batch), 8 warps of 4
// rows.
//
// Limits: value head dim Dv <= 256 (DPL in {1, 2, 4, 8}); D <= 1024 is a
// runtime loop. Shared memory: 4 * (32 D + 32 (D + 1) + 32 Dv) bytes
// (~97 KiB at D = Dv = 256).
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_core.cuh"

extern "C" void braid_k_attention(braid_rt *rt, braid_dtype dt, const void *q, const void *k,
                                  const void *v, void *out, const braid_attention_params *p) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  if (p->batch <= 0 || p->seq <= 0 || p->heads <= 0)
    return;
  checkHeads("attention", p->heads, p->kv_heads);
  checkQueryOffset("attention", p->q_offset, p->seq, p->seq_kv, p->causal);
  checkRope("attention", p->rope_theta, p->head_dim);
  if (p->v_head_dim > 256 || p->head_dim > 1024)
    BRAID_CUDA_FATAL("attention: head dims %lld / %lld exceed the kernel's limits (D <= 1024, "
                     "Dv <= 256)",
                     static_cast<long long>(p->head_dim), static_cast<long long>(p->v_head_dim));
  if (p->seq > 65535LL * kBlockQ || p->heads > 65535 || p->batch > 65535)
    BRAID_CUDA_FATAL("attention: grid too large (S %lld, H %lld, B %lld)",
                     static_cast<long long>(p->seq), static_cast<long long>(p->heads),
                     static_cast<long long>(p->batch));
  const AttentionShape sh = narrowShape(*p);
  const SequenceMask mask{p->causal, static_cast<int>(p->q_offset)};
  cudaStream_t stream = streamOf(rt);
  dispatchAttention(dt, p->v_head_dim, q, k, v, nullptr, [&](const auto &in, auto dpl) {
    launchForward<decltype(dpl)::value>(stream, sh, in, mask, StoreOutput{out});
  });
}
