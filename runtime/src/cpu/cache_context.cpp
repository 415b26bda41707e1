//===- cache_context.cpp - CPU kernels: a KV cache split by sequence ------===//
//
// The kernels of a KV cache split by sequence over context-parallel ranks
// (runtime_inference.h states them): each rank holds the rows [first_row,
// first_row + chunk_len) of every sequence's context_len rows.
//  - braid_k_cache_write_chunk: braid_k_cache_write of the rows that fall in
//    the chunk (the others are other ranks'); every position is checked
//    against the whole context first.
//  - braid_k_cache_attention_chunk: the chunk's share of a query row's
//    attention, its f32 result and log-sum-exp (attention_block's pair), by
//    attention.cpp's reference loop (attention_ref.h's foldKey): each item is
//    (sequence, kv head), its rows every (query head of the group, s).
//  - braid_k_cache_attention_merge: the chunks' pairs merged by the
//    log-sum-exp rule in chunk order, weights in double, so that every rank
//    computes the same bits.
//
//===----------------------------------------------------------------------===//

#include "cache_common.h"
#include "parallel.h"
#include "rope.h"

#include <algorithm>
#include <cmath>

using namespace braid::cpu;

namespace {

/// Every sequence's rows [positions[b], positions[b] + seq) lie in the
/// context.
void checkContext(const char *kernel, const int32_t *positions, int64_t batch, int64_t seq,
                  int64_t context) {
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t first = positions[b], last = first + seq - 1;
    if (first < 0 || last >= context)
      fail(kernel, "sequence %lld at positions %lld..%lld is outside the cache's [0, %lld)",
           (long long)b, (long long)first, (long long)last, (long long)context);
  }
}

void checkChunk(const char *kernel, int64_t firstRow, int64_t chunk, int64_t context) {
  if (firstRow < 0 || chunk < 0 || firstRow + chunk > context)
    fail(kernel, "chunk [%lld, %lld) is outside the context's [0, %lld)", (long long)firstRow,
         (long long)(firstRow + chunk), (long long)context);
}

/// One (sequence b, kv head g) of a chunk's attention.
template <typename T>
void attendChunk(const braid_cache_attention_shape &sh, const T *q, const T *k, const T *v,
                 const int32_t *positions, float *out, float *lse, int64_t firstRow,
                 const Rope &rope, int64_t b, int64_t g) {
  const int64_t D = sh.head_dim, Dv = sh.v_head_dim, group = sh.heads / sh.kv_heads;
  const float scale = float(sh.scale);
  float qbuf[kMaxHeadDim], kbuf[kMaxHeadDim], vbuf[kMaxHeadDim], acc[kMaxHeadDim];
  for (int64_t r = 0; r < group * sh.seq; ++r) {
    const int64_t h = g * group + r / sh.seq, s = r % sh.seq, p = positions[b] + s;
    const int64_t row = (b * sh.seq + s) * sh.heads + h;
    loadRotated(q + row * D, qbuf, p, rope);
    // Local rows t with firstRow + t <= p.
    const int64_t visible = std::clamp<int64_t>(p - firstRow + 1, 0, sh.cache_len);
    float m = -INFINITY;
    double l = 0.0;
    std::fill(acc, acc + Dv, 0.0f);
    for (int64_t t = 0; t < visible; ++t) {
      const int64_t c = (b * sh.cache_len + t) * sh.kv_heads + g;
      for (int64_t e = 0; e < D; ++e)
        kbuf[e] = braid::load(k + c * D, e);
      for (int64_t e = 0; e < Dv; ++e)
        vbuf[e] = braid::load(v + c * Dv, e);
      foldKey(scale * dot(qbuf, kbuf, D), vbuf, Dv, m, l, acc);
    }
    const float inv = l > 0.0 ? float(1.0 / l) : 0.0f;
    for (int64_t e = 0; e < Dv; ++e)
      out[row * Dv + e] = acc[e] * inv;
    lse[row] = l > 0.0 ? float(double(m) + std::log(l)) : -INFINITY;
  }
}

} // namespace

extern "C" {

void braid_k_cache_write_chunk(braid_rt *, braid_dtype dt, void *cache, const void *rows,
                               const int32_t *positions, int64_t batch, int64_t chunk_len,
                               int64_t seq, int64_t heads, int64_t head_dim, double rope_theta,
                               int64_t first_row, int64_t context_len) {
  constexpr const char *kKernel = "cache_write_chunk";
  if (head_dim > kMaxHeadDim)
    fail(kKernel, "head dim %lld exceeds the supported %lld", (long long)head_dim,
         (long long)kMaxHeadDim);
  checkRope(kKernel, rope_theta, head_dim);
  checkChunk(kKernel, first_row, chunk_len, context_len);
  if (seq <= 0)
    return;
  checkContext(kKernel, positions, batch, seq, context_len);
  withFloatType(dt, kKernel, [&](auto tag) {
    using T = decltype(tag);
    writeCacheRows<T>(out<T>(cache), in<T>(rows), positions, batch, chunk_len, seq, heads,
                  head_dim, rope_theta, first_row);
  });
}

void braid_k_cache_attention_chunk(braid_rt *, braid_dtype dt, const void *q,
                                   const void *k_cache, const void *v_cache,
                                   const int32_t *positions, float *out_, float *lse,
                                   const braid_cache_attention_shape *shape, int64_t first_row,
                                   int64_t context_len) {
  constexpr const char *kKernel = "cache_attention_chunk";
  const braid_cache_attention_shape &sh = *shape;
  if (!checkCacheShape(kKernel, sh))
    return;
  checkChunk(kKernel, first_row, sh.cache_len, context_len);
  checkContext(kKernel, positions, sh.batch, sh.seq, context_len);
  const Rope rope(sh.rope_theta, sh.head_dim);
  withFloatType(dt, kKernel, [&](auto tag) {
    using T = decltype(tag);
    parallelFor(sh.batch * sh.kv_heads, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        attendChunk(sh, in<T>(q), in<T>(k_cache), in<T>(v_cache), positions, out_, lse,
                    first_row, rope, i / sh.kv_heads, i % sh.kv_heads);
    });
  });
}

void braid_k_cache_attention_merge(braid_rt *, braid_dtype dt, const float *outs,
                                   const float *lses, void *result, int64_t parts,
                                   int64_t rows, int64_t v_head_dim) {
  constexpr const char *kKernel = "cache_attention_merge";
  if (parts <= 0 || rows < 0 || v_head_dim < 0)
    fail(kKernel, "bad sizes (parts %lld, rows %lld, v_head_dim %lld)", (long long)parts,
         (long long)rows, (long long)v_head_dim);
  withFloatType(dt, kKernel, [&](auto tag) {
    using T = decltype(tag);
    T *dst = out<T>(result);
    parallelForEachAbove(rows, rows * v_head_dim * parts, kMinThreadedElems, [&](int64_t r) {
      double m = -INFINITY;
      for (int64_t j = 0; j < parts; ++j)
        m = std::max(m, double(lses[j * rows + r]));
      double total = 0.0;
      if (m != -INFINITY) // else no chunk saw a key: zeros
        for (int64_t j = 0; j < parts; ++j)
          total += std::exp(double(lses[j * rows + r]) - m);
      for (int64_t e = 0; e < v_head_dim; ++e) {
        double sum = 0.0;
        for (int64_t j = 0; j < parts && total > 0.0; ++j)
          sum += std::exp(double(lses[j * rows + r]) - m) *
                 double(outs[(j * rows + r) * v_head_dim + e]);
        braid::store(dst + r * v_head_dim, e, total > 0.0 ? float(sum / total) : 0.0f);
      }
    });
  });
}

} // extern "C"
