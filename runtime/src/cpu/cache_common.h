//===- cache_common.h - what the CPU cache attentions share -----*- C++ -*-===//
//
// cache_attention.cpp (one rank's cache), cache_context.cpp (a cache split
// by sequence over context-parallel ranks) and paged_cache.cpp (a pool of
// pages) share the checks of an attention's shape and its core
// (attendOverCache); cache.cpp, cache_context.cpp and paged_cache.cpp share
// the write of new rows into a cache (and its test hook).
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

/// Writes row s of each sequence b of `rows` [B, S, H, D] (RoPE-rotated to
/// its position p = positions[b] + s when `theta` > 0) to dest(b, s, p): the
/// [H, D] block of its cache row, or null for a row that is not written
/// here (another rank's, padding). The caller has checked every written
/// position.
template <typename T, typename Dest>
void writeRotatedRows(const T *rows, const int32_t *positions, int64_t B, int64_t S, int64_t H,
                      int64_t D, double theta, Dest dest) {
  const Rope rope(theta, D);
  // A (sequence, row) writes H cache rows that no other item writes.
  parallelForEachAbove(B * S, B * S * H * D, kMinThreadedElems, [&](int64_t item) {
    const int64_t b = item / S, s = item % S;
    T *block = dest(b, s, positions[b] + s);
    if (!block)
      return;
    const int64_t p = positions[b] + s;
    float c[kMaxHeadDim / 2], sn[kMaxHeadDim / 2], buf[kMaxHeadDim];
    if (rope.on)
      rope.angles(p, c, sn);
    for (int64_t h = 0; h < H; ++h) {
      rotate(rows + ((b * S + s) * H + h) * D, buf, c, sn, rope);
      for (int64_t e = 0; e < D; ++e)
        braid::store(block + h * D, e, buf[e]);
    }
  });
}

/// Writes the new rows of each sequence (RoPE-rotated to their positions
/// when `theta` > 0) into a cache of Cl rows per sequence holding positions
/// [firstRow, firstRow + Cl): the whole cache (firstRow 0), or one
/// context-parallel rank's chunk, rows of other chunks skipped.
template <typename T>
void writeCacheRows(T *cache, const T *rows, const int32_t *positions, int64_t B, int64_t Cl,
                    int64_t S, int64_t H, int64_t D, double theta, int64_t firstRow) {
  static const CacheFault fault;
  const bool decode = S == 1;
  writeRotatedRows(rows, positions, B, S, H, D, theta,
                   [&](int64_t b, int64_t, int64_t p) -> T * {
                     // The test hook's destination (the sequence and position
                     // written).
                     const int64_t wb = decode && fault.swapSequences && (b ^ 1) < B ? b ^ 1 : b;
                     const int64_t late =
                         decode && fault.latePosition && p + 1 - firstRow < Cl ? 1 : 0;
                     const int64_t t = p + late - firstRow;
                     if (t < 0 || t >= Cl)
                       return nullptr; // another rank's row
                     return cache + (wb * Cl + t) * H * D;
                   });
}

/// The page table of a paged cache (runtime_inference.h): where position t
/// of sequence b lives, and each sequence's last real row.
struct PageTable {
  const int32_t *table;
  int64_t pageSize, pagesPerSeq;
  const int32_t *lastRows;

  /// The pool row (page * P + t % P) of position t of sequence b.
  int64_t rowOf(int64_t b, int64_t t) const {
    return int64_t(table[b * pagesPerSeq + t / pageSize]) * pageSize + t % pageSize;
  }
};

/// Attention of the real query rows of each sequence over its cache rows:
/// braid_k_cache_attention's arithmetic (cache_attention.cpp), over
/// sequences of `sh.cache_len` rows each, or over pages when `pages` is
/// given (then the rows s > last_rows[b] are skipped, not written). maxKeys
/// is the longest key range, max over b of the last query position + 1.
void attendOverCache(braid_dtype dt, const braid_cache_attention_shape &sh, const void *q,
                     const void *k, const void *v, const int32_t *positions,
                     const PageTable *pages, void *out, int64_t maxKeys);

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_CACHE_COMMON_H
