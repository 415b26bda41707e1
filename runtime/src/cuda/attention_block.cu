//===- attention_block.cu - attention by key blocks (ring, zigzag) --------===//
//
// The CUDA side of the context-parallel attention kernels (the CPU reference
// is runtime/src/cpu/attention_block.cpp, which explains the math). Query and
// key rows carry global positions (int64 device arrays q_pos [S], k_pos
// [Skv]): the RoPE angle of a row is its position, and with `causal` key t is
// visible to query s iff k_pos[t] <= q_pos[s]. Statistics (lse, delta) are f32
// [B, S, Hq] row-major, like the rows of out [B, S, Hq, Dv].
//
//  - sequence_positions: one thread per row.
//  - attention_block: the forward kernel of attention_core.cuh (one block
//    per query tile of 32 rows, query head and batch; 8 warps of 4 rows; key
//    tiles of 32 rows; the online softmax of attendQueryTile) with the
//    position mask of attention_mask.cuh: a key tile none of whose keys the
//    tile's latest query can see is skipped (zigzag positions are monotone
//    only within chunks, so the test is per tile, not a loop bound). Its
//    epilogue writes the normalized f32 output and lse = m + log l (-inf and
//    zeros for a row that sees no key).
//  - attention_merge, attention_delta: one warp per row.
//  - attention_block_grad (grad_attention_block.cu): the backward by query
//    tiles of attention_grad_core.cuh with the position mask, one block per
//    (query tile, query head, batch).
//    Per visible key tile, lane j scores key j against the warp's rows:
//    p = exp(scale q'.k' - lse), ds = p (dout.v - delta), kept in shared
//    memory. dq' accumulates in registers over the tiles (rotated back and
//    added to dq at the end, plain adds: the block owns its dq rows); for
//    dk / dv each warp sums its 4 keys of the tile over the tile's 32 query
//    rows and adds the results with atomicAdd (dk rotated back first). dq, dk,
//    dv are f32 accumulators the caller zeroes; rows with lse = -inf add
//    nothing. (atomicAdd makes dk / dv not bitwise reproducible across runs.)
//
// RoPE is rotate-half, angles p theta^(-2i/D) and their sin / cos in double,
// theta <= 0: none. Limits: head dims 1..256 (DPL = 1, 2, 4, 8 values per
// lane); S, Skv < 2^31. Shared memory: forward 4 (64 D + 32 Dv + 32) bytes,
// backward about 4 (64 D + 64 Dv + 2370) bytes (~137 KiB at D = Dv = 256).
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_core.cuh"

namespace braid::cuda {
namespace {

using namespace attn;

//===--- Small kernels -------------------------------------------------------===//

__global__ void sequencePositionsKernel(int64_t *pos, int64_t count, int64_t start, int64_t n,
                                        int64_t c) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t row = start + i;
    if (n == 0) {
      pos[i] = row;
    } else {
      int64_t j = row / (2 * c), w = row - j * 2 * c;
      pos[i] = w < c ? j * c + w : (2 * n - 1 - j) * c + (w - c);
    }
  }
}

constexpr int kRowWarps = 8; // rows (warps) per block of the merge / delta kernels

__global__ void __launch_bounds__(kRowWarps * 32)
    attentionMergeKernel(float *__restrict__ out, float *__restrict__ lse,
                         const float *__restrict__ blockOut, const float *__restrict__ blockLse,
                         int64_t rows, int Dv) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(kRowWarps) + (threadIdx.x >> 5); r < rows;
       r += static_cast<int64_t>(gridDim.x) * kRowWarps) {
    const float a = lse[r], bl = blockLse[r];
    float *o = out + r * Dv;
    const float *ob = blockOut + r * Dv;
    float wa, wb, merged;
    if (bl == -INFINITY) {
      if (a != -INFINITY)
        continue; // the block adds nothing
      wa = 0.0f, wb = 0.0f, merged = -INFINITY; // both -inf: (0, -inf)
    } else if (a == -INFINITY) {
      wa = 0.0f, wb = 1.0f, merged = bl;
    } else {
      double m = fmax(static_cast<double>(a), static_cast<double>(bl));
      double ml = m + log(exp(a - m) + exp(bl - m));
      wa = static_cast<float>(exp(a - ml));
      wb = static_cast<float>(exp(bl - ml));
      merged = static_cast<float>(ml);
    }
    for (int e = lane; e < Dv; e += 32)
      o[e] = (wa != 0.0f ? wa * o[e] : 0.0f) + (wb != 0.0f ? wb * ob[e] : 0.0f);
    // Every lane has read lse[r] before lane 0 overwrites it: the lanes of a
    // warp need not run in step (independent thread scheduling), and cudasim,
    // which runs them one after another, gave the later lanes the merged lse.
    __syncwarp();
    if (lane == 0)
      lse[r] = merged;
  }
}

template <typename T>
__global__ void __launch_bounds__(kRowWarps * 32)
    attentionDeltaKernel(const T *__restrict__ dout, const float *__restrict__ out,
                         float *__restrict__ delta, int64_t rows, int Dv) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(kRowWarps) + (threadIdx.x >> 5); r < rows;
       r += static_cast<int64_t>(gridDim.x) * kRowWarps) {
    float sum = 0.0f;
    for (int e = lane; e < Dv; e += 32)
      sum = fmaf(toF(dout[r * Dv + e]), out[r * Dv + e], sum);
    sum = warpSum(sum);
    if (lane == 0)
      delta[r] = sum;
  }
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_sequence_positions(braid_rt *rt, int64_t *pos, int64_t count,
                                           int64_t start, int64_t seq, int64_t zigzag_ranks) {
  using namespace braid::cuda;
  if (zigzag_ranks < 0)
    BRAID_CUDA_FATAL("sequence_positions: negative zigzag rank count %lld",
                     static_cast<long long>(zigzag_ranks));
  if (count < 0 || start < 0 || start > seq - count)
    BRAID_CUDA_FATAL("sequence_positions: rows %lld + %lld outside the sequence of %lld rows",
                     static_cast<long long>(start), static_cast<long long>(count),
                     static_cast<long long>(seq));
  if (zigzag_ranks > 0 && seq % (2 * zigzag_ranks) != 0)
    BRAID_CUDA_FATAL("sequence_positions: zigzag over %lld ranks needs seq a multiple of %lld, "
                     "got %lld",
                     static_cast<long long>(zigzag_ranks),
                     static_cast<long long>(2 * zigzag_ranks), static_cast<long long>(seq));
  if (count == 0)
    return;
  const int64_t c = zigzag_ranks > 0 ? seq / (2 * zigzag_ranks) : 0;
  launchElements("sequence_positions", count, streamOf(rt), sequencePositionsKernel, pos, count,
                 start, zigzag_ranks, c);
}

extern "C" void braid_k_attention_block(braid_rt *rt, braid_dtype dt, const void *q,
                                        const void *k, const void *v, const int64_t *q_pos,
                                        const int64_t *k_pos, float *out, float *lse,
                                        const braid_attention_params *p) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  if (!checkBlockShape("attention_block", *p))
    return;
  const AttentionShape sh = narrowShape(*p);
  const PositionMask mask{q_pos, k_pos, p->causal};
  cudaStream_t stream = streamOf(rt);
  dispatchAttention(dt, p->v_head_dim, q, k, v, nullptr, [&](const auto &in, auto dpl) {
    launchForward<decltype(dpl)::value>(stream, sh, in, mask, StoreOutputLse{out, lse});
  });
}

extern "C" void braid_k_attention_merge(braid_rt *rt, float *out, float *lse,
                                        const float *block_out, const float *block_lse,
                                        int64_t rows, int64_t v_head_dim) {
  using namespace braid::cuda;
  if (!attn::checkRowShape("attention_merge", rows, v_head_dim))
    return;
  launch("attention_merge", gridFor(rows, kRowWarps), kRowWarps * 32, streamOf(rt),
         attentionMergeKernel, out, lse, block_out, block_lse, rows, v_head_dim);
}

extern "C" void braid_k_attention_delta(braid_rt *rt, braid_dtype dt, const void *dout,
                                        const float *out, float *delta, int64_t rows,
                                        int64_t v_head_dim) {
  using namespace braid::cuda;
  if (!attn::checkRowShape("attention_delta", rows, v_head_dim))
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launch("attention_delta", gridFor(rows, kRowWarps), kRowWarps * 32,
                              streamOf(rt), attentionDeltaKernel<T>, dout, out, delta, rows,
                              v_head_dim));
}
