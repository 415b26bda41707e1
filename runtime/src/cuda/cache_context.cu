//===- cache_context.cu - a KV cache split by sequence over cp ranks ------===//
//
// The kernels of a KV cache split by sequence over context-parallel ranks
// (runtime_inference.h; the CPU's are cpu/cache_context.cpp): each rank holds
// rows [first_row, first_row + chunk_len) of every sequence's context_len.
//  - braid_k_cache_write_chunk: cache.cu's write, one thread per element of
//    the new rows, of the rows that fall in the chunk (rotated by ropeLoad
//    exactly as the one-rank write rotates them);
//  - braid_k_cache_attention_chunk: the forward kernel of attention_core.cuh
//    with ChunkMask (cache.cu's CacheMask whose keys sit at first_row + t)
//    and an epilogue that stores the f32 output and log-sum-exp, as
//    attention_block.cu's;
//  - braid_k_cache_attention_merge: one thread per output element, the
//    chunks' weights e^(lse_j - m) in double, summed in chunk order.
// A position outside the context is recorded in the device error record
// under cache_write's and cache_attention's codes (the backend aborts at its
// next synchronization, naming the position and the sequence).
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_core.cuh"

#include <climits>

namespace braid::cuda {
namespace {

using namespace attn;

template <typename T>
__global__ void cacheWriteChunkKernel(T *__restrict__ cache, const T *__restrict__ rows,
                                      const int32_t *__restrict__ positions, int64_t batch,
                                      int64_t chunkLen, int64_t seq, int64_t heads, int headDim,
                                      double theta, int64_t firstRow, int64_t context,
                                      DeviceError *error) {
  const int64_t total = batch * seq * heads * headDim;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / headDim, bs = row / heads, b = bs / seq;
    const int d = static_cast<int>(i - row * headDim), h = static_cast<int>(row - bs * heads);
    const long long p = static_cast<long long>(positions[b]) + (bs - b * seq);
    if (p < 0 || p >= context) {
      if (h == 0 && d == 0)
        reportIndexError(error, kCacheWritePosition, p, context, b);
      continue;
    }
    const long long t = p - firstRow;
    if (t < 0 || t >= chunkLen)
      continue; // another rank's row
    cache[((b * chunkLen + t) * heads + h) * headDim + d] =
        fromF<T>(ropeLoad(rows + row * headDim, d, headDim, p, theta));
  }
}

/// CacheMask (cache.cu) over a chunk: key t sits at firstRow + t; a query
/// row's horizon is its position, checked against the whole context.
struct ChunkMask {
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

/// The normalized f32 output and lse [B, S, Hq] (-inf for a row that sees
/// no key of the chunk).
struct StoreChunkOutput {
  float *out, *lse;

  template <typename T, int DPL>
  __device__ void operator()(const AttentionShape &sh, const AttentionInputs<T> &, int b, int h,
                             int s, float m, float l, const float (&acc)[DPL]) const {
    bool any = l > 0.0f;
    storeNormalized(out + rowOffset(b, s, sh.S, sh.Hq, h, sh.Dv), acc, any ? 1.0f / l : 0.0f,
                    sh.Dv);
    if ((threadIdx.x & 31) == 0)
      lse[(static_cast<int64_t>(b) * sh.S + s) * sh.Hq + h] = any ? m + logf(l) : -INFINITY;
  }
};

template <typename T>
__global__ void mergeKernel(const float *__restrict__ outs, const float *__restrict__ lses,
                            T *__restrict__ result, int64_t parts, int64_t rows, int64_t dv) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * dv;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / dv, e = i - r * dv;
    double m = -INFINITY;
    for (int64_t j = 0; j < parts; ++j)
      m = fmax(m, static_cast<double>(lses[j * rows + r]));
    double total = 0.0, sum = 0.0;
    if (m != -INFINITY)
      for (int64_t j = 0; j < parts; ++j) {
        const double w = exp(static_cast<double>(lses[j * rows + r]) - m);
        total += w;
        sum += w * static_cast<double>(outs[(j * rows + r) * dv + e]);
      }
    result[i] = fromF<T>(total > 0.0 ? static_cast<float>(sum / total) : 0.0f);
  }
}

void checkChunk(const char *kernel, int64_t firstRow, int64_t chunk, int64_t context) {
  if (firstRow < 0 || chunk < 0 || firstRow + chunk > context)
    BRAID_CUDA_FATAL("%s: chunk [%lld, %lld) is outside the context's [0, %lld)", kernel,
                     static_cast<long long>(firstRow), static_cast<long long>(firstRow + chunk),
                     static_cast<long long>(context));
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_cache_write_chunk(braid_rt *rt, braid_dtype dt, void *cache,
                                          const void *rows, const int32_t *positions,
                                          int64_t batch, int64_t chunk_len, int64_t seq,
                                          int64_t heads, int64_t head_dim, double rope_theta,
                                          int64_t first_row, int64_t context_len) {
  using namespace braid::cuda;
  attn::checkRope("cache_write_chunk", rope_theta, head_dim);
  checkChunk("cache_write_chunk", first_row, chunk_len, context_len);
  if (head_dim > INT32_MAX)
    BRAID_CUDA_FATAL("cache_write_chunk: head dim %lld too large",
                     static_cast<long long>(head_dim));
  const int64_t n = batch * seq * heads * head_dim;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("cache_write_chunk", n, streamOf(rt),
                                      cacheWriteChunkKernel<T>, cache, rows, positions, batch,
                                      chunk_len, seq, heads, static_cast<int>(head_dim),
                                      rope_theta, first_row, context_len,
                                      deviceErrorRecord()));
}

extern "C" void braid_k_cache_attention_chunk(braid_rt *rt, braid_dtype dt, const void *q,
                                              const void *k_cache, const void *v_cache,
                                              const int32_t *positions, float *out, float *lse,
                                              const braid_cache_attention_shape *shape,
                                              int64_t first_row, int64_t context_len) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  const braid_cache_attention_shape &c = *shape;
  if (c.batch < 0 || c.seq < 0 || c.cache_len < 0 || c.heads < 0)
    BRAID_CUDA_FATAL("cache_attention_chunk: negative size (batch %lld, seq %lld, cache_len "
                     "%lld, heads %lld)",
                     static_cast<long long>(c.batch), static_cast<long long>(c.seq),
                     static_cast<long long>(c.cache_len), static_cast<long long>(c.heads));
  if (c.batch == 0 || c.seq == 0 || c.heads == 0)
    return;
  checkHeads("cache_attention_chunk", c.heads, c.kv_heads);
  checkRope("cache_attention_chunk", c.rope_theta, c.head_dim);
  checkChunk("cache_attention_chunk", first_row, c.cache_len, context_len);
  if (c.v_head_dim > 256 || c.head_dim > 1024)
    BRAID_CUDA_FATAL("cache_attention_chunk: head dims %lld / %lld exceed the kernel's limits "
                     "(D <= 1024, Dv <= 256)",
                     static_cast<long long>(c.head_dim), static_cast<long long>(c.v_head_dim));
  if (c.seq > 65535LL * kBlockQ || c.heads > 65535 || c.batch > 65535 ||
      context_len > INT32_MAX)
    BRAID_CUDA_FATAL("cache_attention_chunk: grid too large (S %lld, H %lld, B %lld, C %lld)",
                     static_cast<long long>(c.seq), static_cast<long long>(c.heads),
                     static_cast<long long>(c.batch), static_cast<long long>(context_len));
  const AttentionShape sh{static_cast<int>(c.batch),      static_cast<int>(c.seq),
                          static_cast<int>(c.cache_len),  static_cast<int>(c.heads),
                          static_cast<int>(c.kv_heads),   static_cast<int>(c.head_dim),
                          static_cast<int>(c.v_head_dim), static_cast<float>(c.scale),
                          c.rope_theta};
  const ChunkMask mask{positions, static_cast<int>(first_row), static_cast<int>(context_len),
                       deviceErrorRecord()};
  dispatchAttention(dt, c.v_head_dim, q, k_cache, v_cache, nullptr,
                    [&](const auto &in, auto dpl) {
                      launchForward<decltype(dpl)::value>(streamOf(rt), sh, in, mask,
                                                          StoreChunkOutput{out, lse});
                    });
}

extern "C" void braid_k_cache_attention_merge(braid_rt *rt, braid_dtype dt, const float *outs,
                                              const float *lses, void *result, int64_t parts,
                                              int64_t rows, int64_t v_head_dim) {
  using namespace braid::cuda;
  if (parts <= 0 || rows < 0 || v_head_dim < 0)
    BRAID_CUDA_FATAL("cache_attention_merge: bad sizes (parts %lld, rows %lld, v_head_dim "
                     "%lld)",
                     static_cast<long long>(parts), static_cast<long long>(rows),
                     static_cast<long long>(v_head_dim));
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("cache_attention_merge", rows * v_head_dim, streamOf(rt),
                                      mergeKernel<T>, outs, lses, static_cast<T *>(result),
                                      parts, rows, v_head_dim));
}
