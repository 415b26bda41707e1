//===- cache.cu - KV cache writes, attention over the cache, row ops ------===//
//
// The kernels of prefill and decode programs (runtime_inference.h):
//  - braid_k_cache_write: one thread per element of the new rows, rotated to
//    its sequence's position by the attention kernels' RoPE (ropeLoad of
//    attention_core.cuh: angles and products in double), so that the cache
//    holds exactly the rotated keys braid_k_attention computes in its tiles;
//  - braid_k_cache_attention: the forward kernel of attention_core.cuh
//    (attendQueryTile: online softmax over 32-key tiles) with a mask policy
//    of its own, CacheMask (cache_common.cuh): query row s of sequence b (the
//    block's z index) sits at positions[b] + s, its RoPE angle and causal horizon; keys are
//    stored rotated (kKeysRotated: loaded as they are) and their mask
//    position is their cache row. With positions 0 this is braid_k_attention
//    (causal) on the cached keys, tile for tile;
//  - braid_k_take_rows (-1: a row of zeros), braid_k_add_positions: one
//    thread per output element.
// A position or index out of range is recorded in the device error record
// (the backend aborts at its next synchronization, naming the kernel, the
// position and the sequence); the kernel then writes nothing there (cache
// write), attends to no key or to the whole cache (attention), or writes 0
// (take_rows) or x unchanged (add_positions), never outside the tensors.
//
// Limits of the attention: as braid_k_attention (Dv <= 256, D <= 1024, 65535
// heads and sequences); one block per (32 query rows, query head, sequence),
// so at decode each query head of a group reads its kv head's cache rows
// (from L2 after the first).
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_core.cuh"
#include "cuda/cache_common.cuh"

#include <climits>

namespace braid::cuda {
namespace {

using namespace attn;

template <typename E>
__global__ void takeRowsKernel(const E *__restrict__ x, const int32_t *__restrict__ index,
                               E *__restrict__ out, int64_t batch, int64_t seq, int64_t hidden,
                               DeviceError *error) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < batch * hidden;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = i / hidden, c = i - b * hidden, row = index[b];
    if (row == -1) { // an idle sequence of a serving program
      out[i] = E(0);
      continue;
    }
    if (row < 0 || row >= seq) {
      if (c == 0)
        reportIndexError(error, kTakeRowsIndex, row, seq, b);
      out[i] = E(0);
      continue;
    }
    out[i] = x[(b * seq + row) * hidden + c];
  }
}

template <typename T>
__global__ void addPositionsKernel(const T *x, const T *__restrict__ table,
                                   const int32_t *__restrict__ positions, T *out, int64_t batch,
                                   int64_t seq, int64_t tableRows, int64_t hidden,
                                   DeviceError *error) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < batch * seq * hidden;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t bs = i / hidden, c = i - bs * hidden, b = bs / seq;
    const long long row = static_cast<long long>(positions[b]) + (bs - b * seq);
    if (row < 0 || row >= tableRows) {
      if (c == 0)
        reportIndexError(error, kAddPositionsRow, row, tableRows, b);
      out[i] = x[i];
      continue;
    }
    out[i] = fromF<T>(toF(x[i]) + toF(table[row * hidden + c]));
  }
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_cache_write(braid_rt *rt, braid_dtype dt, void *cache, const void *rows,
                                    const int32_t *positions, int64_t batch, int64_t cache_len,
                                    int64_t seq, int64_t heads, int64_t head_dim,
                                    double rope_theta) {
  using namespace braid::cuda;
  attn::checkRope("cache_write", rope_theta, head_dim);
  if (head_dim > INT32_MAX)
    BRAID_CUDA_FATAL("cache_write: head dim %lld too large", static_cast<long long>(head_dim));
  const int64_t n = batch * seq * heads * head_dim;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("cache_write", n, streamOf(rt),
                                      attn::rotatedWriteKernel<T, attn::ChunkRows>, cache, rows,
                                      positions, batch, seq, heads, static_cast<int>(head_dim),
                                      rope_theta,
                                      attn::ChunkRows{cache_len, 0, cache_len,
                                                      deviceErrorRecord()}));
}

extern "C" void braid_k_cache_attention(braid_rt *rt, braid_dtype dt, const void *q,
                                        const void *k_cache, const void *v_cache,
                                        const int32_t *positions, void *out,
                                        const braid_cache_attention_shape *shape) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  const braid_cache_attention_shape &c = *shape;
  if (!checkCacheShape("cache_attention", c, c.cache_len))
    return;
  const AttentionShape sh = attentionShapeOf(c);
  const CacheMask mask{positions, 0, sh.Skv, deviceErrorRecord()};
  cudaStream_t stream = streamOf(rt);
  dispatchAttention(dt, c.v_head_dim, q, k_cache, v_cache, nullptr,
                    [&](const auto &in, auto dpl) {
                      using T = std::remove_cv_t<std::remove_pointer_t<decltype(in.q)>>;
                      constexpr int kDpl = decltype(dpl)::value;
                      launchTiles("cache_attention",
                                  attentionForwardKernel<T, kDpl, CacheMask, StoreOutput>,
                                  tileGrid(sh.S, sh.Hq, sh.batch), forwardSmemBytes(sh), stream,
                                  sh, in, mask, StoreOutput{out});
                    });
}

extern "C" void braid_k_take_rows(braid_rt *rt, braid_dtype dt, const void *x,
                                  const int32_t *index, void *out, int64_t batch, int64_t seq,
                                  int64_t hidden) {
  using namespace braid::cuda;
  BRAID_DISPATCH_BITS_IN("take_rows", dt, E,
                         launchElements("take_rows", batch * hidden, streamOf(rt),
                                        takeRowsKernel<E>, x, index, out, batch, seq, hidden,
                                        deviceErrorRecord()));
}

extern "C" void braid_k_add_positions(braid_rt *rt, braid_dtype dt, const void *x,
                                      const void *table, const int32_t *positions, void *out,
                                      int64_t batch, int64_t seq, int64_t table_rows,
                                      int64_t hidden) {
  using namespace braid::cuda;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("add_positions", batch * seq * hidden, streamOf(rt),
                                      addPositionsKernel<T>, x, table, positions, out, batch,
                                      seq, table_rows, hidden, deviceErrorRecord()));
}
