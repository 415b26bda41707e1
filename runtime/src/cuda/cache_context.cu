//===- cache_context.cu - a KV cache split by sequence over cp ranks ------===//
//
// The kernels of a KV cache split by sequence over context-parallel ranks
// (runtime_inference.h; the CPU's are cpu/cache_context.cpp): each rank holds
// rows [first_row, first_row + chunk_len) of every sequence's context_len.
//  - braid_k_cache_write_chunk: cache.cu's write kernel (cache_common.cuh)
//    of the rows that fall in the chunk, rotated as the one-rank write
//    rotates them;
//  - braid_k_cache_attention_chunk: the forward kernel of attention_core.cuh
//    with cache.cu's mask policy, its keys at first_row + t (cache_common.cuh),
//    and attention_block.cu's epilogue (StoreOutputLse: the f32 output and
//    log-sum-exp);
//  - braid_k_cache_attention_merge: one thread per output element, the
//    chunks' weights e^(lse_j - m) in double, summed in chunk order.
// A position outside the context is recorded in the device error record
// under cache_write's and cache_attention's codes (the backend aborts at its
// next synchronization, naming the position and the sequence).
//
//===----------------------------------------------------------------------===//

#include "cuda/cache_common.cuh"

#include <climits>

namespace braid::cuda {
namespace {

using namespace attn;

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
                                      attn::rotatedWriteKernel<T, attn::ChunkRows>, cache,
                                      rows, positions, batch, seq, heads,
                                      static_cast<int>(head_dim), rope_theta,
                                      attn::ChunkRows{chunk_len, first_row, context_len,
                                                      deviceErrorRecord()}));
}

extern "C" void braid_k_cache_attention_chunk(braid_rt *rt, braid_dtype dt, const void *q,
                                              const void *k_cache, const void *v_cache,
                                              const int32_t *positions, float *out, float *lse,
                                              const braid_cache_attention_shape *shape,
                                              int64_t first_row, int64_t context_len) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  const braid_cache_attention_shape &c = *shape;
  checkChunk("cache_attention_chunk", first_row, c.cache_len, context_len);
  if (!checkCacheShape("cache_attention_chunk", c, context_len))
    return;
  const AttentionShape sh = attentionShapeOf(c);
  const CacheMask mask{positions, static_cast<int>(first_row), static_cast<int>(context_len),
                       deviceErrorRecord()};
  dispatchAttention(dt, c.v_head_dim, q, k_cache, v_cache, nullptr,
                    [&](const auto &in, auto dpl) {
                      launchForward<decltype(dpl)::value>(streamOf(rt), sh, in, mask,
                                                          StoreOutputLse{out, lse});
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
