//===- paged_cache.cu - a KV cache of pages -------------------------------===//
//
// braid_k_paged_cache_write and braid_k_paged_cache_attention
// (runtime_inference.h) are the kernels of cache.cu with the key and value
// rows addressed through a page table:
//  - the write: rotatedWriteKernel (cache_common.cuh) with PagedRows as the
//    destination of each new row, skipping the rows after each sequence's
//    last real row;
//  - the attention: the forward kernel of attention_core.cuh with a mask
//    policy of its own, PagedMask: CacheMask's positions, padding rows (after
//    last_rows[b]; all of an idle sequence) at position -1, which sees no
//    key (their output is 0), and keyRow, the pool row of each key through
//    the page table.
// A bad last row, position or page (of a row written, or of a key a real
// query sees) is recorded in the device error record, naming the sequence;
// the kernels then skip the row, load the key as 0 or see no key, never
// reading or writing outside the pool or the page table.
//
//===----------------------------------------------------------------------===//

#include "cuda/attention_core.cuh"
#include "cuda/cache_common.cuh"

#include <climits>

namespace braid::cuda {
namespace {

using namespace attn;

/// A page table of `pagesPerSeq` pages of `pageSize` rows per sequence into
/// a pool of `pages` pages, and each sequence's last real row of `seq`.
struct PageTable {
  const int32_t *table, *lastRows;
  int64_t seq, pages, pageSize, pagesPerSeq;

  __device__ long long reach() const { return pagesPerSeq * pageSize; }
  /// last_rows[b], or -1 (nothing real) for a bad one, recorded if `report`.
  __device__ int lastRow(int64_t b, bool report, DeviceError *error) const {
    const int last = lastRows[b];
    if (last >= -1 && last < seq)
      return last;
    if (report)
      reportIndexError(error, kPagedLastRow, last, seq, b);
    return -1;
  }
  /// The pool row of position t of sequence b (0 <= t < reach), or -1 for a
  /// page outside the pool, recorded with `code` if `report`.
  __device__ long long rowOf(int64_t b, long long t, bool report, int code,
                             DeviceError *error) const {
    const long long page = table[b * pagesPerSeq + t / pageSize];
    if (page >= 0 && page < pages)
      return page * pageSize + t % pageSize;
    if (report)
      reportIndexError(error, code, page, pages, b);
    return -1;
  }
};

/// The destination of braid_k_paged_cache_write's rows (rotatedWriteKernel).
struct PagedRows {
  PageTable pt;
  DeviceError *error;

  __device__ long long rowOf(int64_t b, int64_t s, long long p, bool report) const {
    if (s > pt.lastRow(b, report && s == 0, error))
      return -1; // padding, or an idle sequence
    if (p < 0 || p >= pt.reach()) {
      if (report)
        reportIndexError(error, kPagedWritePosition, p, pt.reach(), b);
      return -1;
    }
    return pt.rowOf(b, p, report, kPagedWritePage, error);
  }
};

/// CacheMask (cache_common.cuh) over a paged cache: the keys are the
/// positions [0, reach) of the block's sequence (Skv = reach), at the pool
/// rows keyRow gives; query rows after the sequence's last real row sit at
/// position -1, seeing no key.
struct PagedMask {
  using Pos = int;
  static constexpr bool kKeysRotated = true; // paged_cache_write rotated them
  struct Shared {
    int start, last; // positions[b], the last real row (-1: none)
  };
  const int32_t *positions;
  PageTable pt;
  DeviceError *error;

  __device__ Pos queryPos(int s) const { return positions[blockIdx.z] + s; }
  __device__ Pos keyPos(int) const { return 0; } // unused: kKeysRotated
  __device__ bool sees(Pos key, Pos query) const { return key <= query; }
  __device__ void stageQueryRow(Shared &sh, int r, int s, bool live) const {
    const int b = blockIdx.z, first = positions[b];
    const int last = pt.lastRow(b, r == 0 && blockIdx.x == 0 && blockIdx.y == 0, error);
    if (r == 0) {
      sh.start = first;
      sh.last = last;
    }
    const long long p = static_cast<long long>(first) + s;
    if (live && s <= last && (p < 0 || p >= pt.reach()))
      reportIndexError(error, kPagedAttentionPosition, p, pt.reach(), b);
  }
  __device__ Pos tileQueryPos(const Shared &sh, int, int s) const {
    const long long p = static_cast<long long>(sh.start) + s;
    return s <= sh.last && p >= 0 && p < pt.reach() ? static_cast<int>(p) : -1;
  }
  __device__ Pos horizon(const Shared &sh, int q0, int S) const {
    const int lastRow = min(min(q0 + kBlockQ, S) - 1, sh.last);
    if (lastRow < q0)
      return -1; // padding only
    const long long p = static_cast<long long>(sh.start) + lastRow;
    const long long end = pt.reach() - 1;
    return static_cast<int>(p < 0 ? -1 : p > end ? end : p);
  }
  __device__ int keyEnd(Pos horizon, int Skv) const { return max(0, min(Skv, horizon + 1)); }
  __device__ bool keyTileSeen(Shared &, int, int, Pos) const { return true; }
  __device__ Pos tileKeyPos(const Shared &, int, int t) const { return t; }
  __device__ long long keyRow(int b, int t, bool needed) const {
    return pt.rowOf(b, t, needed, kPagedAttentionPage, error);
  }
};

void checkPageGeometry(const char *kernel, int64_t pages, int64_t pageSize, int64_t pagesPerSeq) {
  if (pages < 0 || pageSize <= 0 || pagesPerSeq < 0 || pagesPerSeq * pageSize > INT32_MAX)
    BRAID_CUDA_FATAL("%s: bad page geometry (pages %lld, page_size %lld, pages_per_seq %lld)",
                     kernel, static_cast<long long>(pages), static_cast<long long>(pageSize),
                     static_cast<long long>(pagesPerSeq));
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_paged_cache_write(braid_rt *rt, braid_dtype dt, void *pool,
                                          const void *rows, const int32_t *positions,
                                          const int32_t *page_table, const int32_t *last_rows,
                                          int64_t batch, int64_t seq, int64_t pages,
                                          int64_t page_size, int64_t pages_per_seq, int64_t heads,
                                          int64_t head_dim, double rope_theta) {
  using namespace braid::cuda;
  attn::checkRope("paged_cache_write", rope_theta, head_dim);
  checkPageGeometry("paged_cache_write", pages, page_size, pages_per_seq);
  if (head_dim > INT32_MAX)
    BRAID_CUDA_FATAL("paged_cache_write: head dim %lld too large",
                     static_cast<long long>(head_dim));
  const PagedRows dest{{page_table, last_rows, seq, pages, page_size, pages_per_seq},
                       deviceErrorRecord()};
  const int64_t n = batch * seq * heads * head_dim;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("paged_cache_write", n, streamOf(rt),
                                      attn::rotatedWriteKernel<T, PagedRows>, pool, rows, positions,
                                      batch, seq, heads, static_cast<int>(head_dim), rope_theta,
                                      dest));
}

extern "C" void braid_k_paged_cache_attention(braid_rt *rt, braid_dtype dt, const void *q,
                                              const void *k_pool, const void *v_pool,
                                              const int32_t *positions, const int32_t *page_table,
                                              const int32_t *last_rows, void *out,
                                              const braid_paged_cache_attention_shape *shape) {
  using namespace braid::cuda;
  using namespace braid::cuda::attn;
  const braid_paged_cache_attention_shape &c = *shape;
  checkPageGeometry("paged_cache_attention", c.pages, c.page_size, c.pages_per_seq);
  // The attention core's keys: the positions a page table reaches.
  const int64_t reach = c.pages_per_seq * c.page_size;
  const braid_cache_attention_shape keys{c.batch,    c.seq,        reach,   c.heads,     c.kv_heads,
                                         c.head_dim, c.v_head_dim, c.scale, c.rope_theta};
  if (!checkCacheShape("paged_cache_attention", keys, reach))
    return;
  const AttentionShape sh = attentionShapeOf(keys);
  const PagedMask mask{positions,
                       {page_table, last_rows, c.seq, c.pages, c.page_size, c.pages_per_seq},
                       deviceErrorRecord()};
  dispatchAttention(dt, c.v_head_dim, q, k_pool, v_pool, nullptr, [&](const auto &in, auto dpl) {
    launchForward<decltype(dpl)::value>(streamOf(rt), sh, in, mask, StoreOutput{out});
  });
}
