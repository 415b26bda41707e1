//===- cache.cu - KV cache writes, attention over the cache, row ops ------===//
//
// The kernels of prefill and decode programs (runtime_inference.h):
//  - braid_k_cache_write: one thread per element of the new rows, rotated to
//    its sequence's position by the attention kernels' RoPE (ropeLoad of
//    attention_core.cuh: angles and products in double), so that the cache
//    holds exactly the rotated keys braid_k_attention computes in its tiles;
//  - braid_k_cache_attention: the forward kernel of attention_core.cuh
//    (attendQueryTile: online softmax over 32-key tiles) with a mask policy
//    of its own, CacheMask: query row s of sequence b (the block's z index)
//    sits at positions[b] + s, its RoPE angle and causal horizon; keys are
//    stored rotated (kKeysRotated: loaded as they are) and their mask
//    position is their cache row. With positions 0 this is braid_k_attention
//    (causal) on the cached keys, tile for tile;
//  - braid_k_take_rows, braid_k_add_positions: one thread per output element.
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

#include <climits>

namespace braid::cuda {
namespace {

using namespace attn;

template <typename T>
__global__ void cacheWriteKernel(T *__restrict__ cache, const T *__restrict__ rows,
                                 const int32_t *__restrict__ positions, int64_t batch,
                                 int64_t cacheLen, int64_t seq, int64_t heads, int headDim,
                                 double theta, DeviceError *error) {
  const int64_t total = batch * seq * heads * headDim;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / headDim, bs = row / heads, b = bs / seq;
    const int d = static_cast<int>(i - row * headDim), h = static_cast<int>(row - bs * heads);
    const long long p = static_cast<long long>(positions[b]) + (bs - b * seq);
    if (p < 0 || p >= cacheLen) {
      if (h == 0 && d == 0)
        reportIndexError(error, kCacheWritePosition, p, cacheLen, b);
      continue;
    }
    cache[((b * cacheLen + p) * heads + h) * headDim + d] =
        fromF<T>(ropeLoad(rows + row * headDim, d, headDim, p, theta));
  }
}

/// The mask policy of attention over a KV cache (see attention_mask.cuh for
/// the interface; the forward's part: no firstQuery): the block's sequence is
/// blockIdx.z; a query row whose position lies outside the cache is recorded
/// as an error.
struct CacheMask {
  using Pos = int;
  static constexpr bool kKeysRotated = true; // cache_write rotated them
  struct Shared {
    int start; // positions[b]
  };
  const int32_t *positions;
  int cacheLen;
  DeviceError *error;

  __device__ int start() const { return positions[blockIdx.z]; }
  __device__ Pos queryPos(int s) const { return start() + s; }
  __device__ Pos keyPos(int) const { return 0; } // unused: kKeysRotated
  __device__ bool sees(Pos key, Pos query) const { return key <= query; }
  __device__ void stageQueryRow(Shared &sh, int r, int s, bool live) const {
    const int first = start();
    if (r == 0)
      sh.start = first;
    const long long p = static_cast<long long>(first) + s;
    if (live && (p < 0 || p >= cacheLen))
      reportIndexError(error, kCacheAttentionPosition, p, cacheLen, blockIdx.z);
  }
  __device__ Pos tileQueryPos(const Shared &sh, int, int s) const { return sh.start + s; }
  __device__ Pos horizon(const Shared &sh, int q0, int S) const {
    return sh.start + min(q0 + kBlockQ, S) - 1;
  }
  __device__ int keyEnd(Pos horizon, int Skv) const { return max(0, min(Skv, horizon + 1)); }
  __device__ bool keyTileSeen(Shared &, int, int, Pos) const { return true; }
  __device__ Pos tileKeyPos(const Shared &, int, int t) const { return t; }
};

/// The checks of braid_k_cache_attention; false: nothing to do.
bool checkCacheShape(const braid_cache_attention_shape &sh) {
  if (sh.batch < 0 || sh.seq < 0 || sh.cache_len < 0 || sh.heads < 0)
    BRAID_CUDA_FATAL("cache_attention: negative size (batch %lld, seq %lld, cache_len %lld, "
                     "heads %lld)",
                     static_cast<long long>(sh.batch), static_cast<long long>(sh.seq),
                     static_cast<long long>(sh.cache_len), static_cast<long long>(sh.heads));
  if (sh.batch == 0 || sh.seq == 0 || sh.heads == 0)
    return false;
  checkHeads("cache_attention", sh.heads, sh.kv_heads);
  checkRope("cache_attention", sh.rope_theta, sh.head_dim);
  if (sh.v_head_dim > 256 || sh.head_dim > 1024)
    BRAID_CUDA_FATAL("cache_attention: head dims %lld / %lld exceed the kernel's limits "
                     "(D <= 1024, Dv <= 256)",
                     static_cast<long long>(sh.head_dim), static_cast<long long>(sh.v_head_dim));
  if (sh.seq > 65535LL * kBlockQ || sh.heads > 65535 || sh.batch > 65535 ||
      sh.cache_len > INT32_MAX)
    BRAID_CUDA_FATAL("cache_attention: grid too large (S %lld, H %lld, B %lld, C %lld)",
                     static_cast<long long>(sh.seq), static_cast<long long>(sh.heads),
                     static_cast<long long>(sh.batch), static_cast<long long>(sh.cache_len));
  return true;
}

template <typename E>
__global__ void takeRowsKernel(const E *__restrict__ x, const int32_t *__restrict__ index,
                               E *__restrict__ out, int64_t batch, int64_t seq, int64_t hidden,
                               DeviceError *error) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < batch * hidden;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = i / hidden, c = i - b * hidden, row = index[b];
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
                       launchElements("cache_write", n, streamOf(rt), cacheWriteKernel<T>, cache,
                                      rows, positions, batch, cache_len, seq, heads,
                                      static_cast<int>(head_dim), rope_theta,
                                      deviceErrorRecord()));
}

extern "C" void braid_k_cache_attention(braid_rt *rt, braid_dtype dt, const void *q,
                                        const void *k_cache, const void *v_cache,
                                        const int32_t *positions, void *out,
                                        const braid_cache_attention_shape *shape) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  const braid_cache_attention_shape &c = *shape;
  if (!checkCacheShape(c))
    return;
  const AttentionShape sh{static_cast<int>(c.batch),      static_cast<int>(c.seq),
                          static_cast<int>(c.cache_len),  static_cast<int>(c.heads),
                          static_cast<int>(c.kv_heads),   static_cast<int>(c.head_dim),
                          static_cast<int>(c.v_head_dim), static_cast<float>(c.scale),
                          c.rope_theta};
  const CacheMask mask{positions, sh.Skv, deviceErrorRecord()};
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
