//===- cache.cpp - CPU kernels: KV cache writes and generation's row ops ---===//
//
// braid_k_cache_write (new key / value rows into a sequence's cache at its own
// positions, keys rotated there by the attention kernels' RoPE, rope.h),
// braid_k_take_rows (one row per sequence: a prompt's last position) and
// braid_k_add_positions (learned position embeddings at a sequence's own
// offset); runtime_inference.h states them. Every position and index is
// checked before anything is written: a bad one is a fatal error naming the
// sequence, never an access outside the tensors.
//
//===----------------------------------------------------------------------===//

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

/// The test hook BRAID_TEST_CACHE_FAULT breaks a decode step's cache write
/// (one row per sequence) so that tests see braid-run --generate --verify
/// fail: "position" writes each row one position late (where it stays
/// inside the cache), "swap" writes sequence b's row into the cache of
/// sequence b ^ 1 (two sequences' caches swapped). Nothing else reads it.
struct CacheFault {
  bool latePosition = false, swapSequences = false;
  CacheFault() {
    const char *hook = std::getenv("BRAID_TEST_CACHE_FAULT");
    latePosition = hook && std::strcmp(hook, "position") == 0;
    swapSequences = hook && std::strcmp(hook, "swap") == 0;
  }
};

template <typename T>
void cacheWriteImpl(T *cache, const T *rows, const int32_t *positions, int64_t B, int64_t C,
                    int64_t S, int64_t H, int64_t D, double theta) {
  const Rope rope(theta, D);
  static const CacheFault fault;
  const bool decode = S == 1;
  // A (sequence, row) writes H cache rows that no other item writes.
  parallelForEachAbove(B * S, B * S * H * D, kMinThreadedElems, [&](int64_t item) {
    const int64_t b = item / S, s = item % S, p = positions[b] + s;
    // The test hook's destination (the sequence and position written).
    const int64_t wb = decode && fault.swapSequences && (b ^ 1) < B ? b ^ 1 : b;
    const int64_t wp = decode && fault.latePosition && p + 1 < C ? p + 1 : p;
    float c[kMaxHeadDim / 2], sn[kMaxHeadDim / 2], buf[kMaxHeadDim];
    if (rope.on)
      rope.angles(p, c, sn);
    for (int64_t h = 0; h < H; ++h) {
      rotate(rows + ((b * S + s) * H + h) * D, buf, c, sn, rope);
      T *dst = cache + ((wb * C + wp) * H + h) * D;
      for (int64_t e = 0; e < D; ++e)
        braid::store(dst, e, buf[e]);
    }
  });
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
    cacheWriteImpl<T>(out<T>(cache), in<T>(rows), positions, batch, cache_len, seq, heads,
                      head_dim, rope_theta);
  });
}

void braid_k_take_rows(braid_rt *, braid_dtype dt, const void *x, const int32_t *index,
                       void *out_, int64_t batch, int64_t seq, int64_t hidden) {
  for (int64_t b = 0; b < batch; ++b)
    if (index[b] < 0 || index[b] >= seq)
      fail("take_rows", "index %lld of sequence %lld is outside [0, %lld)",
           (long long)index[b], (long long)b, (long long)seq);
  const int64_t bytes = hidden * elementBytes(dt, "take_rows");
  const char *src = static_cast<const char *>(x);
  for (int64_t b = 0; b < batch; ++b)
    std::memcpy(static_cast<char *>(out_) + b * bytes, src + (b * seq + index[b]) * bytes,
                size_t(bytes));
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
