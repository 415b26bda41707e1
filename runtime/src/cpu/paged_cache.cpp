//===- paged_cache.cpp - CPU kernels: a KV cache of pages -----------------===//
//
// braid_k_paged_cache_write and braid_k_paged_cache_attention
// (runtime_inference.h): braid_k_cache_write's rotation and
// braid_k_cache_attention's core (attendOverCache, cache_attention.cpp) with
// the key and value rows addressed through a page table, over each
// sequence's real rows s <= last_rows[b]. Every last row, position and page
// a real row reaches is checked before anything is read or written: a bad
// one is a fatal error naming the sequence, never an access outside the
// pool.
//
//===----------------------------------------------------------------------===//

#include "cache_common.h"
#include "common.h"

#include <algorithm>
#include <cstring>

using namespace braid::cpu;

namespace {

/// The geometry of one call, for its checks.
struct PagedCall {
  const char *kernel;
  int64_t batch, seq, pages, pageSize, pagesPerSeq;
  const int32_t *positions, *table, *lastRows;
};

/// The checks of sequence b's real rows: its last row in [-1, seq), the
/// positions of its real rows in the page table's reach, and the pages of
/// positions [firstChecked(first), last] in the pool. Returns the last
/// position + 1 (0 for an idle sequence).
template <typename FirstChecked>
int64_t checkSequence(const PagedCall &c, int64_t b, const char *verb, FirstChecked firstChecked) {
  const int64_t lastRow = c.lastRows[b];
  if (lastRow < -1 || lastRow >= c.seq)
    fail(c.kernel, "sequence %lld has last row %lld, outside [-1, %lld)", (long long)b,
         (long long)lastRow, (long long)c.seq);
  if (lastRow == -1)
    return 0; // idle
  const int64_t first = c.positions[b], last = first + lastRow;
  const int64_t reach = c.pagesPerSeq * c.pageSize;
  if (first < 0 || last >= reach)
    fail(c.kernel, "sequence %lld has positions %lld..%lld, outside its page table's [0, %lld)",
         (long long)b, (long long)first, (long long)last, (long long)reach);
  for (int64_t t = firstChecked(first) / c.pageSize; t <= last / c.pageSize; ++t) {
    const int64_t page = c.table[b * c.pagesPerSeq + t];
    if (page < 0 || page >= c.pages)
      fail(c.kernel, "sequence %lld %s position %lld in page %lld, outside the pool's [0, %lld)",
           (long long)b, verb, (long long)std::max(first, t * c.pageSize), (long long)page,
           (long long)c.pages);
  }
  return last + 1;
}

void checkPagedGeometry(const char *kernel, int64_t pages, int64_t pageSize, int64_t pagesPerSeq) {
  if (pages < 0 || pageSize <= 0 || pagesPerSeq < 0)
    fail(kernel, "bad page geometry (pages %lld, page_size %lld, pages_per_seq %lld)",
         (long long)pages, (long long)pageSize, (long long)pagesPerSeq);
}

} // namespace

extern "C" {

void braid_k_paged_cache_write(braid_rt *, braid_dtype dt, void *pool, const void *rows,
                               const int32_t *positions, const int32_t *page_table,
                               const int32_t *last_rows, int64_t batch, int64_t seq, int64_t pages,
                               int64_t page_size, int64_t pages_per_seq, int64_t heads,
                               int64_t head_dim, double rope_theta) {
  constexpr const char *kKernel = "paged_cache_write";
  if (head_dim > kMaxHeadDim)
    fail(kKernel, "head dim %lld exceeds the supported %lld", (long long)head_dim,
         (long long)kMaxHeadDim);
  checkRope(kKernel, rope_theta, head_dim);
  checkPagedGeometry(kKernel, pages, page_size, pages_per_seq);
  if (batch <= 0 || seq <= 0)
    return;
  const PagedCall call{kKernel,       batch,     seq,        pages,    page_size,
                       pages_per_seq, positions, page_table, last_rows};
  // Only the pages of the written positions are checked: the earlier ones
  // are read by attention, which checks them.
  for (int64_t b = 0; b < batch; ++b)
    checkSequence(call, b, "writes", [](int64_t first) { return first; });
  const PageTable table{page_table, page_size, pages_per_seq, last_rows};
  const int64_t rowElems = heads * head_dim;
  withFloatType(dt, kKernel, [&](auto tag) {
    using T = decltype(tag);
    T *base = out<T>(pool);
    writeRotatedRows(in<T>(rows), positions, batch, seq, heads, head_dim, rope_theta,
                     [&](int64_t b, int64_t s, int64_t p) -> T * {
                       if (s > last_rows[b])
                         return nullptr; // padding, or an idle sequence
                       return base + table.rowOf(b, p) * rowElems;
                     });
  });
}

void braid_k_paged_cache_attention(braid_rt *, braid_dtype dt, const void *q, const void *k_pool,
                                   const void *v_pool, const int32_t *positions,
                                   const int32_t *page_table, const int32_t *last_rows, void *out,
                                   const braid_paged_cache_attention_shape *shape) {
  constexpr const char *kKernel = "paged_cache_attention";
  const braid_paged_cache_attention_shape &ps = *shape;
  // braid_k_cache_attention's shape over sequences of one page each: its
  // checks, and cacheRow's leading dimensions (the page table addresses
  // the rows).
  const braid_cache_attention_shape sh{ps.batch,      ps.seq,      ps.page_size,
                                       ps.heads,      ps.kv_heads, ps.head_dim,
                                       ps.v_head_dim, ps.scale,    ps.rope_theta};
  checkPagedGeometry(kKernel, ps.pages, ps.page_size, ps.pages_per_seq);
  if (!checkCacheShape(kKernel, sh))
    return;
  const PagedCall call{kKernel,          ps.batch,  ps.seq,     ps.pages, ps.page_size,
                       ps.pages_per_seq, positions, page_table, last_rows};
  int64_t maxKeys = 0;
  for (int64_t b = 0; b < ps.batch; ++b)
    maxKeys = std::max(maxKeys, checkSequence(call, b, "reads", [](int64_t) { return 0; }));
  // Padding rows and idle sequences: zeros (the core leaves them).
  const int64_t rowBytes = ps.heads * ps.v_head_dim * elementBytes(dt, kKernel);
  char *bytes = static_cast<char *>(out);
  for (int64_t b = 0; b < ps.batch; ++b)
    for (int64_t s = last_rows[b] + 1; s < ps.seq; ++s)
      std::memset(bytes + (b * ps.seq + s) * rowBytes, 0, size_t(rowBytes));
  const PageTable table{page_table, ps.page_size, ps.pages_per_seq, last_rows};
  attendOverCache(dt, sh, q, k_pool, v_pool, positions, &table, out, maxKeys);
}

} // extern "C"
