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
                                             float *dk, float *dv,
                                             const braid_attention_params *p) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  if (!checkBlockShape("attention_block_grad", *p))
    return;
  if (p->seq_kv == 0) // no keys: nothing to add
    return;
  const AttentionShape sh = narrowShape(*p);
  const PositionMask mask{q_pos, k_pos, p->causal};
  const AddBlockGrad grad{lse, delta, dq, dk, dv};
  cudaStream_t stream = streamOf(rt);
  dispatchAttention(dt, p->head_dim > p->v_head_dim ? p->head_dim : p->v_head_dim, q, k, v, dout,
                    [&](const auto &in, auto dpl) {
                      launchGradQuery<decltype(dpl)::value>(stream, sh, in, mask, grad);
                    });
}
