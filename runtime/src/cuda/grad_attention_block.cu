//===- grad_attention_block.cu - gradient of attention by key blocks ------===//
//
// braid_k_attention_block_grad on the GPU: the backward by query tiles of
// attention_grad_core.cuh with the position mask and this file's policy, which
// also adds dk and dv per key tile (the design is described with the other
// key-block kernels in attention_block.cu; the CPU reference is
// runtime/src/cpu/attention_block.cpp).
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_grad_core.cuh"

namespace braid::cuda {
namespace {

using namespace attn;

/// The policy of attentionGradQueryKernel for key blocks: the caller's final
/// statistics [B, S, Hq] (lse = -inf: the row sees no key), and f32
/// accumulators dq (added: the block owns its rows), dk, dv (added per key
/// tile with atomicAdd) that the caller zeroes.
struct AddBlockGrad {
  static constexpr bool kKeyGrads = true;
  static constexpr Put kPutDq = Put::Add;
  const float *lse, *delta;
  float *dq, *dk, *dv;

  __device__ static int64_t statIndex(const AttentionShape &sh, int b, int h, int s) {
    return (static_cast<int64_t>(b) * sh.S + s) * sh.Hq + h;
  }
};

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
  using namespace braid::cuda::attn;
  if (!checkBlockShape("attention_block_grad", batch, seq, seq_kv, heads, kv_heads, head_dim,
                       v_head_dim, rope_theta))
    return;
  if (seq_kv == 0) // no keys: nothing to add
    return;
  const AttentionShape sh = narrowShape(batch, seq, seq_kv, heads, kv_heads, head_dim,
                                        v_head_dim, scale, rope_theta);
  const PositionMask mask{q_pos, k_pos, causal};
  const AddBlockGrad grad{lse, delta, dq, dk, dv};
  cudaStream_t stream = streamOf(rt);
  dispatchAttention(dt, head_dim > v_head_dim ? head_dim : v_head_dim, q, k, v, dout,
                    [&](const auto &in, auto dpl) {
                      launchGradQuery<decltype(dpl)::value>(stream, sh, in, mask, grad);
                    });
}
