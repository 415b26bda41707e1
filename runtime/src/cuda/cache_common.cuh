//===- cache_common.cuh - what the KV cache kernels share ----*- CUDA -*-===//
//
// What braid_k_cache_attention (cache.cu), braid_k_cache_attention_chunk
// (cache_context.cu, a cache split by sequence over context-parallel ranks)
// and the paged cache kernels (paged_cache.cu) share: the write kernel, the
// mask policy of the attention core over cache rows, and the checks of
// their shapes.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_CACHE_COMMON_CUH
#define BRAID_RUNTIME_CUDA_CACHE_COMMON_CUH

#include "cuda/attention_core.cuh"

#include <climits>

namespace braid::cuda::attn {

/// Writes the new rows [batch, seq, heads, headDim] into a cache whose rows
/// hold `heads` x headDim values, one thread per element, rotated to their
/// position by ropeLoad (angles and products in double, as the attention
/// kernels rotate keys). Where row s of sequence b goes is the policy's:
/// dest.rowOf(b, s, p, report) is its cache row, or -1 for a row not written
/// here (another rank's, padding), recording a bad position when `report`
/// (one thread of the row).
template <typename T, typename Dest>
__global__ void rotatedWriteKernel(T *__restrict__ cache, const T *__restrict__ rows,
                                   const int32_t *__restrict__ positions, int64_t batch,
                                   int64_t seq, int64_t heads, int headDim, double theta,
                                   Dest dest) {
  const int64_t total = batch * seq * heads * headDim;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / headDim, bs = row / heads, b = bs / seq, s = bs - b * seq;
    const int d = static_cast<int>(i - row * headDim), h = static_cast<int>(row - bs * heads);
    const long long p = static_cast<long long>(positions[b]) + s;
    const long long at = dest.rowOf(b, s, p, h == 0 && d == 0);
    if (at < 0)
      continue;
    cache[(at * heads + h) * headDim + d] =
        fromF<T>(ropeLoad(rows + row * headDim, d, headDim, p, theta));
  }
}

/// The destination of braid_k_cache_write's rows: a cache of chunkLen rows
/// per sequence holding positions [firstRow, firstRow + chunkLen) of a
/// context of `context` rows (the whole cache: 0, C, C); rows of other
/// chunks are skipped.
struct ChunkRows {
  int64_t chunkLen, firstRow, context;
  DeviceError *error;

  __device__ long long rowOf(int64_t b, int64_t, long long p, bool report) const {
    if (p < 0 || p >= context) {
      if (report)
        reportIndexError(error, kCacheWritePosition, p, context, b);
      return -1;
    }
    const long long t = p - firstRow;
    return t < 0 || t >= chunkLen ? -1 : b * chunkLen + t; // -1: another rank's row
  }
};

/// The mask policy of attention over a KV cache (see attention_mask.cuh for
/// the interface; the forward's part: no firstQuery): the block's sequence is
/// blockIdx.z, query row s sits at positions[b] + s, cache row t at
/// firstRow + t (0 unless the cache is a rank's chunk of a context of
/// `context` rows) and is seen by the queries at or after it; a query row
/// whose position lies outside the context is recorded as an error.
struct CacheMask {
  using Pos = int;
  static constexpr bool kKeysRotated = true; // cache_write rotated them
  struct Shared {
    int start; // positions[b]
  };
  const int32_t *positions;
  int firstRow, context;
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
    if (live && (p < 0 || p >= context))
      reportIndexError(error, kCacheAttentionPosition, p, context, blockIdx.z);
  }
  __device__ Pos tileQueryPos(const Shared &sh, int, int s) const { return sh.start + s; }
  __device__ Pos horizon(const Shared &sh, int q0, int S) const {
    return sh.start + min(q0 + kBlockQ, S) - 1;
  }
  __device__ int keyEnd(Pos horizon, int Skv) const {
    return max(0, min(Skv, horizon - firstRow + 1));
  }
  __device__ bool keyTileSeen(Shared &, int, int, Pos) const { return true; }
  __device__ Pos tileKeyPos(const Shared &, int, int t) const { return firstRow + t; }
};

/// The checks of an attention over `sh.cache_len` cache rows of a context
/// of `context` rows, named `kernel` in the messages; false: nothing to do.
inline bool checkCacheShape(const char *kernel, const braid_cache_attention_shape &sh,
                            int64_t context) {
  if (sh.batch < 0 || sh.seq < 0 || sh.cache_len < 0 || sh.heads < 0)
    BRAID_CUDA_FATAL("%s: negative size (batch %lld, seq %lld, cache_len %lld, heads %lld)",
                     kernel, static_cast<long long>(sh.batch), static_cast<long long>(sh.seq),
                     static_cast<long long>(sh.cache_len), static_cast<long long>(sh.heads));
  if (sh.batch == 0 || sh.seq == 0 || sh.heads == 0)
    return false;
  checkHeads(kernel, sh.heads, sh.kv_heads);
  checkRope(kernel, sh.rope_theta, sh.head_dim);
  if (sh.v_head_dim > 256 || sh.head_dim > 1024)
    BRAID_CUDA_FATAL("%s: head dims %lld / %lld exceed the kernel's limits (D <= 1024, Dv <= "
                     "256)",
                     kernel, static_cast<long long>(sh.head_dim),
                     static_cast<long long>(sh.v_head_dim));
  if (sh.seq > 65535LL * kBlockQ || sh.heads > 65535 || sh.batch > 65535 || context > INT32_MAX)
    BRAID_CUDA_FATAL("%s: grid too large (S %lld, H %lld, B %lld, C %lld)", kernel,
                     static_cast<long long>(sh.seq), static_cast<long long>(sh.heads),
                     static_cast<long long>(sh.batch), static_cast<long long>(context));
  return true;
}

/// The attention core's shape of a cache attention (its keys: the cache
/// rows), once checkCacheShape passed.
inline AttentionShape attentionShapeOf(const braid_cache_attention_shape &c) {
  return AttentionShape{static_cast<int>(c.batch),      static_cast<int>(c.seq),
                        static_cast<int>(c.cache_len),  static_cast<int>(c.heads),
                        static_cast<int>(c.kv_heads),   static_cast<int>(c.head_dim),
                        static_cast<int>(c.v_head_dim), static_cast<float>(c.scale),
                        c.rope_theta};
}

} // namespace braid::cuda::attn

#endif // BRAID_RUNTIME_CUDA_CACHE_COMMON_CUH
