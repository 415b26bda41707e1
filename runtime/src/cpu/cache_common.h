//===- cache_common.h - what the CPU cache attentions share -----*- C++ -*-===//
//
// cache_attention.cpp (one rank's cache) and cache_context.cpp (a cache
// split by sequence over context-parallel ranks) share the checks of an
// attention's shape; cache.cpp and cache_context.cpp share the write of new
// rows into a cache (and its test hook).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_CACHE_COMMON_H
#define BRAID_RUNTIME_CPU_CACHE_COMMON_H

#include "attention_ref.h"
#include "common.h"
#include "parallel.h"
#include "rope.h"

#include <cstdlib>
#include <cstring>

namespace braid::cpu {

/// The checks of an attention over a cache, named `kernel` in the messages;
/// false: nothing to do.
inline bool checkCacheShape(const char *kernel, const braid_cache_attention_shape &sh) {
  if (sh.batch < 0 || sh.seq < 0 || sh.cache_len < 0 || sh.heads < 0)
    fail(kernel, "negative size (batch %lld, seq %lld, cache_len %lld, heads %lld)",
         (long long)sh.batch, (long long)sh.seq, (long long)sh.cache_len, (long long)sh.heads);
  if (sh.batch == 0 || sh.seq == 0 || sh.heads == 0)
    return false;
  checkHeads(kernel, sh.heads, sh.kv_heads, sh.head_dim, sh.v_head_dim);
  checkRope(kernel, sh.rope_theta, sh.head_dim);
  return true;
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

/// Writes the new rows of each sequence (RoPE-rotated to their positions
/// when `theta` > 0) into a cache of Cl rows per sequence holding positions
/// [firstRow, firstRow + Cl): the whole cache (firstRow 0), or one
/// context-parallel rank's chunk, rows of other chunks skipped.
template <typename T>
void writeCacheRows(T *cache, const T *rows, const int32_t *positions, int64_t B, int64_t Cl,
                    int64_t S, int64_t H, int64_t D, double theta, int64_t firstRow) {
  const Rope rope(theta, D);
  static const CacheFault fault;
  const bool decode = S == 1;
  // A (sequence, row) writes H cache rows that no other item writes.
  parallelForEachAbove(B * S, B * S * H * D, kMinThreadedElems, [&](int64_t item) {
    const int64_t b = item / S, s = item % S, p = positions[b] + s;
    // The test hook's destination (the sequence and position written).
    const int64_t wb = decode && fault.swapSequences && (b ^ 1) < B ? b ^ 1 : b;
    const int64_t late = decode && fault.latePosition && p + 1 - firstRow < Cl ? 1 : 0;
    const int64_t t = p + late - firstRow;
    if (t < 0 || t >= Cl)
      return; // another rank's row
    float c[kMaxHeadDim / 2], sn[kMaxHeadDim / 2], buf[kMaxHeadDim];
    if (rope.on)
      rope.angles(p, c, sn);
    for (int64_t h = 0; h < H; ++h) {
      rotate(rows + ((b * S + s) * H + h) * D, buf, c, sn, rope);
      T *dst = cache + ((wb * Cl + t) * H + h) * D;
      for (int64_t e = 0; e < D; ++e)
        braid::store(dst, e, buf[e]);
    }
  });
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_CACHE_COMMON_H
