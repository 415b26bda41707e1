//===- cache.cpp - CPU kernels: KV cache writes and generation's row ops ---===//
//
// braid_k_cache_write (new key / value rows into a sequence's cache at its own
// positions, keys rotated there by the attention kernels' RoPE, rope.h),
// braid_k_take_rows (one row per sequence: a prompt's last position, zeros
// for an idle sequence's -1) and
// braid_k_add_positions (learned position embeddings at a sequence's own
// offset); runtime_inference.h states them. Every position and index is
// checked before anything is written: a bad one is a fatal error naming the
// sequence, never an access outside the tensors.
//
//===----------------------------------------------------------------------===//

#include "cache_common.h"
#include "common.h"
#include "parallel.h"
#include "rope.h"

#include <cstdlib>
#include <cstring>

using namespace braid::cpu;

namespace {

/// The rows [positions[b], positions[b] + seq) of every sequence lie in
/// [0, rows); `what` names the range in the message.
void checkRanges(const char *kernel, const char *what, const int32_t *positions, int64_t batch,
                 int64_t seq, int64_t rows) {
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t first = positions[b], last = first + seq - 1;
    if (first < 0 || last >= rows)
      fail(kernel, "sequence %lld at positions %lld..%lld is outside the %s's [0, %lld)",
           (long long)b, (long long)first, (long long)last, what, (long long)rows);
  }
}

template <typename T>
void addPositionsImpl(const T *x, const T *table, const int32_t *positions, T *out, int64_t B,
                      int64_t S, int64_t hidden) {
  parallelForEachAbove(B * S, B * S * hidden, kMinThreadedElems, [&](int64_t item) {
    const int64_t b = item / S, s = item % S;
    const T *row = table + (positions[b] + s) * hidden;
    for (int64_t e = 0; e < hidden; ++e)
      braid::store(out + item * hidden, e,
                   braid::load(x + item * hidden, e) + braid::load(row, e));
  });
}

} // namespace

extern "C" {

void braid_k_cache_write(braid_rt *, braid_dtype dt, void *cache, const void *rows,
                         const int32_t *positions, int64_t batch, int64_t cache_len,
                         int64_t seq, int64_t heads, int64_t head_dim, double rope_theta) {
  if (head_dim > kMaxHeadDim)
    fail("cache_write", "head dim %lld exceeds the supported %lld", (long long)head_dim,
         (long long)kMaxHeadDim);
  if (rope_theta > 0.0 && head_dim % 2 != 0)
    fail("cache_write", "rotary embedding needs an even head dim, got %lld",
         (long long)head_dim);
  if (seq <= 0)
    return;
  checkRanges("cache_write", "cache", positions, batch, seq, cache_len);
  withFloatType(dt, "cache_write", [&](auto tag) {
    using T = decltype(tag);
    writeCacheRows<T>(out<T>(cache), in<T>(rows), positions, batch, cache_len, seq, heads,
                      head_dim, rope_theta, /*firstRow=*/0);
  });
}

void braid_k_take_rows(braid_rt *, braid_dtype dt, const void *x, const int32_t *index,
                       void *out_, int64_t batch, int64_t seq, int64_t hidden) {
  // -1: an idle sequence of a serving program, whose row is zeros.
  for (int64_t b = 0; b < batch; ++b)
    if (index[b] < -1 || index[b] >= seq)
      fail("take_rows", "index %lld of sequence %lld is outside [0, %lld)",
           (long long)index[b], (long long)b, (long long)seq);
  const int64_t bytes = hidden * elementBytes(dt, "take_rows");
  const char *src = static_cast<const char *>(x);
  for (int64_t b = 0; b < batch; ++b) {
    char *dst = static_cast<char *>(out_) + b * bytes;
    if (index[b] == -1)
      std::memset(dst, 0, size_t(bytes));
    else
      std::memcpy(dst, src + (b * seq + index[b]) * bytes, size_t(bytes));
  }
}

void braid_k_add_positions(braid_rt *, braid_dtype dt, const void *x, const void *table,
                           const int32_t *positions, void *out_, int64_t batch, int64_t seq,
                           int64_t table_rows, int64_t hidden) {
  if (seq <= 0)
    return;
  checkRanges("add_positions", "table", positions, batch, seq, table_rows);
  withFloatType(dt, "add_positions", [&](auto tag) {
    using T = decltype(tag);
    addPositionsImpl<T>(in<T>(x), in<T>(table), positions, out<T>(out_), batch, seq, hidden);
  });
}

} // extern "C"
