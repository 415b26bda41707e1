//===- cache_attention.cpp - CPU kernel: attention over a KV cache --------===//
//
// braid_k_cache_attention (runtime_inference.h): the `seq` new query rows of
// each sequence, query s at position p = positions[b] + s, rotated to p,
// against the sequence's cache rows t <= p, which hold keys already rotated
// (braid_k_cache_write). The arithmetic is attention.cpp's, so that prefill
// through the cache (positions 0) equals braid_k_attention (causal):
//  - with BLAS (BRAID_CPU_ACCUMULATE=f32) and at most kFewRows query rows per
//    kv head (decode), dot products and scaled sums of value rows
//    (few_rows_linear.h) over the cache read in place;
//  - with BLAS and more rows (prefill), the blocked GEMM form of
//    attention_gemm.cpp: scores S = Q' K^T (sgemm), scaled and masked, the
//    softmax numerators of softmax_rows.h, O = P V (sgemm), out = O / l;
//  - otherwise (f64 accumulation) the reference loop of attention.cpp: every
//    key folded into each query row's running max, sum and accumulator
//    (attention_ref.h's foldKey).
// The same core attends over a paged cache (paged_cache.cpp): a page table
// gives each key row's address and the real query rows of each sequence.
// Work is split over the rank's threads by (sequence, kv head). An item's
// query rows are all the (query head of the group, s) pairs, taken in blocks,
// so that at decode (seq = 1) the whole group is one block: the sequence's
// cache rows of that kv head are read once for all its query heads (the
// decode step is bound by the cache's bytes, not by arithmetic). In f32 the
// GEMMs read the cache in place (leading dimension Hkv D), a page at a time
// when paged (pages of fewer than kKeyChunk rows are gathered into chunks of
// kKeyChunk rows first); bf16 and f16 rows are converted to f32 in chunks of
// kKeyChunk rows, each read by its GEMM while it is still in cache.
//
// Memory (GEMM form): scratch per thread from the arena (scratch.h), in
// floats, kQB (D + Dv + T) plus kKeyChunk max(D, Dv) for bf16 / f16 or a
// paged cache, T the longest sequence's last position + 1.
//
//===----------------------------------------------------------------------===//

#include "attention_gemm.h"
#include "attention_ref.h"
#include "blas.h"
#include "cache_common.h"
#include "common.h"
#include "few_rows_linear.h"
#include "parallel.h"
#include "rope.h"
#include "scratch.h"
#include "softmax_rows.h"
#include "to_f32.h"

#include <algorithm>

using namespace braid::cpu;

namespace {

constexpr const char *kKernel = "cache_attention";
constexpr int64_t kQB = 64; // query rows per GEMM block

/// One call's shapes and operands; an item is (sequence b, kv head g), its
/// rows r < rows(b) = group * seqOf(b) the pairs (query head g * group +
/// r / seqOf(b), s = r % seqOf(b)): every query row of a sequence, or with a
/// page table its real rows s <= last_rows[b] (none for an idle sequence).
template <typename T> struct CacheProblem {
  const braid_cache_attention_shape &sh;
  const T *q, *k, *v;
  const int32_t *positions;
  T *out;
  Rope rope;
  int64_t group;
  const PageTable *pages; ///< null: sequence b's rows [b C, (b + 1) C)

  /// Query rows per sequence at most (the shape's).
  int64_t rows() const { return group * sh.seq; }
  int64_t seqOf(int64_t b) const { return pages ? pages->lastRows[b] + 1 : sh.seq; }
  int64_t rows(int64_t b) const { return group * seqOf(b); }
  int64_t headOf(int64_t b, int64_t g, int64_t r) const { return g * group + r / seqOf(b); }
  /// Position of item row r of sequence b.
  int64_t posOf(int64_t b, int64_t r) const { return positions[b] + r % seqOf(b); }
  /// Keys [0, keysOf(b, r0, n)) hold every key that rows [r0, r0 + n) see.
  int64_t keysOf(int64_t b, int64_t r0, int64_t n) const {
    return positions[b] + std::min(seqOf(b) - 1, r0 % seqOf(b) + n - 1) + 1;
  }
  int64_t qRow(int64_t b, int64_t s, int64_t h) const { return (b * sh.seq + s) * sh.heads + h; }
  /// The key / value row of position t of sequence b, kv head g.
  int64_t cacheRow(int64_t b, int64_t t, int64_t g) const {
    const int64_t row = pages ? pages->rowOf(b, t) : b * sh.cache_len + t;
    return row * sh.kv_heads + g;
  }
  /// q row r of item (b, g) rotated to its position into dst [D].
  void loadQuery(int64_t b, int64_t g, int64_t r, float *dst) const {
    loadRotated(q + qRow(b, r % seqOf(b), headOf(b, g, r)) * sh.head_dim, dst, posOf(b, r),
                rope);
  }
  T *outRow(int64_t b, int64_t g, int64_t r) const {
    return out + qRow(b, r % seqOf(b), headOf(b, g, r)) * sh.v_head_dim;
  }
};

//===--- Reference form (f64 accumulation): keys folded one at a time ------===//

template <typename T> void referenceItem(const CacheProblem<T> &p, int64_t b, int64_t g) {
  const int64_t D = p.sh.head_dim, Dv = p.sh.v_head_dim, R = p.rows(b);
  const int64_t QB = queryBlock(D, Dv);
  const float scale = float(p.sh.scale);
  float qbuf[kBufFloats], acc[kBufFloats];
  float kbuf[kMaxHeadDim], vbuf[kMaxHeadDim];
  float mx[kMaxQB];
  double l[kMaxQB];
  int64_t pos[kMaxQB];
  for (int64_t r0 = 0; r0 < R; r0 += QB) {
    const int64_t qb = std::min(QB, R - r0);
    int64_t tEnd = 0;
    for (int64_t i = 0; i < qb; ++i) {
      p.loadQuery(b, g, r0 + i, qbuf + i * D);
      pos[i] = p.posOf(b, r0 + i);
      tEnd = std::max(tEnd, pos[i] + 1);
      mx[i] = -INFINITY;
      l[i] = 0.0;
      std::fill(acc + i * Dv, acc + (i + 1) * Dv, 0.0f);
    }
    for (int64_t t = 0; t < tEnd; ++t) {
      const int64_t row = p.cacheRow(b, t, g);
      for (int64_t e = 0; e < D; ++e)
        kbuf[e] = braid::load(p.k + row * D, e);
      for (int64_t e = 0; e < Dv; ++e)
        vbuf[e] = braid::load(p.v + row * Dv, e);
      for (int64_t i = 0; i < qb; ++i)
        if (t <= pos[i])
          foldKey(scale * dot(qbuf + i * D, kbuf, D), vbuf, Dv, mx[i], l[i], acc + i * Dv);
    }
    for (int64_t i = 0; i < qb; ++i) {
      T *dst = p.outRow(b, g, r0 + i);
      const float inv = l[i] > 0.0 ? float(1.0 / l[i]) : 0.0f;
      for (int64_t e = 0; e < Dv; ++e)
        braid::store(dst, e, acc[i * Dv + e] * inv);
    }
  }
}

//===--- GEMM form (BLAS) ----------------------------------------------------===//

/// Keys per converted chunk of bf16 / f16 cache rows: small enough to stay
/// in cache between their conversion and the GEMM that reads them, so that
/// the cache's bytes are read once.
constexpr int64_t kKeyChunk = 256;

/// Keys per chunk: f32 rows are read in place, all of them at once (one
/// product, as in attention_gemm.cpp) or, paged, a page at a time (the rows
/// of one page are contiguous, the pages not), except that the GEMM form
/// gathers pages of fewer than kKeyChunk rows into chunks of kKeyChunk (a
/// GEMM per small page is mostly call overhead); bf16 / f16 rows are
/// converted in chunks of kKeyChunk.
template <typename T> int64_t keyChunk(const CacheProblem<T> &p, int64_t keys, bool gemm) {
  if (!std::is_same_v<T, float>)
    return kKeyChunk;
  if (!p.pages)
    return std::max<int64_t>(keys, 1);
  return gemm && p.pages->pageSize < kKeyChunk ? kKeyChunk : p.pages->pageSize;
}

/// f32 rows with a leading dimension.
struct F32Rows {
  const float *data;
  int64_t ld;
};

/// Rows [t0, t0 + n) of one (sequence, kv head) of a cache of `dim` values
/// per row as f32: the cache itself in f32 when they are contiguous (a
/// sequence's cache, or one page), else converted or gathered into buf.
template <typename T>
F32Rows cacheRows(const CacheProblem<T> &p, const T *cache, int64_t dim, int64_t b, int64_t g,
                  int64_t t0, int64_t n, float *buf) {
  if constexpr (std::is_same_v<T, float>)
    if (!p.pages || t0 % p.pages->pageSize + n <= p.pages->pageSize)
      return {cache + p.cacheRow(b, t0, g) * dim, p.sh.kv_heads * dim};
  for (int64_t t = 0; t < n; ++t)
    toF32(cache + p.cacheRow(b, t0 + t, g) * dim, buf + t * dim, dim);
  return {buf, dim};
}

/// Scratch floats of an item: queries, outputs and scores of a block, and
/// (bf16 / f16, or gathered pages) a chunk of key or value rows.
template <typename T> int64_t itemFloats(const CacheProblem<T> &p, int64_t maxKeys) {
  const int64_t D = p.sh.head_dim, Dv = p.sh.v_head_dim;
  const bool converts = !std::is_same_v<T, float> || p.pages;
  return kQB * (D + Dv + maxKeys) + (converts ? kKeyChunk * std::max(D, Dv) : 0);
}

template <typename T>
void gemmItem(const CacheProblem<T> &p, int64_t b, int64_t g, int64_t maxKeys, float *ws) {
  const int64_t D = p.sh.head_dim, Dv = p.sh.v_head_dim, R = p.rows(b);
  float *qr = ws, *ob = qr + kQB * D, *sc = ob + kQB * Dv, *buf = sc + kQB * maxKeys;
  float rowM[kQB];
  double rowL[kQB];
  for (int64_t r0 = 0; r0 < R; r0 += kQB) {
    const int64_t qb = std::min(kQB, R - r0);
    const int64_t tEnd = p.keysOf(b, r0, qb), chunk = keyChunk(p, tEnd, /*gemm=*/true);
    for (int64_t i = 0; i < qb; ++i)
      p.loadQuery(b, g, r0 + i, qr + i * D);
    for (int64_t t0 = 0; t0 < tEnd; t0 += chunk) { // S = Q' K^T
      const int64_t n = std::min(chunk, tEnd - t0);
      const F32Rows k = cacheRows(p, p.k, D, b, g, t0, n, buf);
      sgemm(false, true, qb, n, D, qr, D, k.data, k.ld, 0.0f, sc + t0, tEnd);
    }
    for (int64_t i = 0; i < qb; ++i) {
      float *row = sc + i * tEnd;
      const int64_t n = p.posOf(b, r0 + i) + 1; // keys t <= p
      for (int64_t t = 0; t < n; ++t)
        row[t] = float(p.sh.scale) * row[t];
      std::fill(row + n, row + tEnd, 0.0f);
      softmaxRow(row, n, rowM[i], rowL[i]);
    }
    for (int64_t t0 = 0; t0 < tEnd; t0 += chunk) { // O = P V
      const int64_t n = std::min(chunk, tEnd - t0);
      const F32Rows v = cacheRows(p, p.v, Dv, b, g, t0, n, buf);
      sgemm(false, false, qb, Dv, n, sc + t0, tEnd, v.data, v.ld, t0 ? 1.0f : 0.0f, ob, Dv);
    }
    for (int64_t i = 0; i < qb; ++i) {
      T *dst = p.outRow(b, g, r0 + i);
      const float inv = rowL[i] > 0.0 ? float(1.0 / rowL[i]) : 0.0f;
      for (int64_t e = 0; e < Dv; ++e)
        braid::store(dst, e, ob[i * Dv + e] * inv);
    }
  }
}

//===--- Few-query form (decode) ---------------------------------------------===//

/// An item of at most kFewRows query rows (a decode step's group of query
/// heads): every score a dot product and every output a sum of scaled value
/// rows (few_rows_linear.h), the cache rows read once for the whole group.
/// sgemm at these sizes was mostly call overhead, and its threads, set to one
/// around the kernel (SerialBlas) and back, were started again after every
/// call and spun on the cores the next linear used.
template <typename T>
void fewQueriesItem(const CacheProblem<T> &p, int64_t b, int64_t g, int64_t maxKeys, float *ws) {
  const int64_t D = p.sh.head_dim, Dv = p.sh.v_head_dim, R = p.rows(b);
  if (R == 0)
    return; // an idle sequence
  const int64_t tEnd = p.keysOf(b, 0, R), chunk = keyChunk(p, tEnd, /*gemm=*/false);
  float *qr = ws, *ob = qr + kQB * D, *sc = ob + kQB * Dv, *buf = sc + kQB * maxKeys;
  for (int64_t r = 0; r < R; ++r)
    p.loadQuery(b, g, r, qr + r * D);
  for (int64_t t0 = 0; t0 < tEnd; t0 += chunk) { // S = Q' K^T, scaled
    const int64_t n = std::min(chunk, tEnd - t0);
    const F32Rows k = cacheRows(p, p.k, D, b, g, t0, n, buf);
    for (int64_t r = 0; r < R; ++r)
      dotLanesRows(qr + r * D, k.data, k.ld, n, D, float(p.sh.scale), sc + r * tEnd + t0);
  }
  std::fill(ob, ob + R * Dv, 0.0f);
  float rowM;
  double rowL[kFewRows];
  for (int64_t r = 0; r < R; ++r) {
    const int64_t n = p.posOf(b, r) + 1; // keys t <= p
    softmaxRow(sc + r * tEnd, n, rowM, rowL[r]);
    std::fill(sc + r * tEnd + n, sc + (r + 1) * tEnd, 0.0f);
  }
  for (int64_t t0 = 0; t0 < tEnd; t0 += chunk) { // O = P V
    const int64_t n = std::min(chunk, tEnd - t0);
    const F32Rows v = cacheRows(p, p.v, Dv, b, g, t0, n, buf);
    for (int64_t r = 0; r < R; ++r)
      addScaledRows(sc + r * tEnd + t0, v.data, v.ld, n, ob + r * Dv, Dv);
  }
  for (int64_t r = 0; r < R; ++r) {
    T *dst = p.outRow(b, g, r);
    const float inv = rowL[r] > 0.0 ? float(1.0 / rowL[r]) : 0.0f;
    for (int64_t e = 0; e < Dv; ++e)
      braid::store(dst, e, ob[r * Dv + e] * inv);
  }
}

/// Below this many multiply-adds a call runs on the calling thread.
constexpr int64_t kMinThreadedMacs = int64_t(1) << 17;

/// The few-query form over the items, on the rank's threads when the call is
/// worth them (a decode step of many sequences).
template <typename T> void fewQueries(const CacheProblem<T> &p, int64_t maxKeys) {
  const braid_cache_attention_shape &sh = p.sh;
  const int64_t items = sh.batch * sh.kv_heads;
  const int64_t macs = items * p.rows() * maxKeys * (sh.head_dim + sh.v_head_dim);
  const int64_t threads = macs < kMinThreadedMacs ? 1 : parallelThreads(items);
  const int64_t slot = itemFloats(p, maxKeys);
  Scratch scratch(0, threads, slot * int64_t(sizeof(float)));
  auto run = [&](int64_t s, int64_t begin, int64_t end) {
    float *ws = reinterpret_cast<float *>(scratch.slot(s));
    for (int64_t i = begin; i < end; ++i)
      fewQueriesItem(p, i / sh.kv_heads, i % sh.kv_heads, maxKeys, ws);
  };
  if (threads == 1)
    return run(0, 0, items);
  parallelForSlots(items, run);
}

//===--- Entry ---------------------------------------------------------------===//

/// Every sequence's query positions lie in the cache; returns the longest
/// key range, max over b of positions[b] + seq.
int64_t checkPositions(const braid_cache_attention_shape &sh, const int32_t *positions) {
  int64_t maxKeys = 0;
  for (int64_t b = 0; b < sh.batch; ++b) {
    const int64_t first = positions[b], last = first + sh.seq - 1;
    if (first < 0 || last >= sh.cache_len)
      fail(kKernel, "sequence %lld attends at positions %lld..%lld, outside the cache's "
                    "[0, %lld)",
           (long long)b, (long long)first, (long long)last, (long long)sh.cache_len);
    maxKeys = std::max(maxKeys, last + 1);
  }
  return maxKeys;
}

template <typename T>
void cacheAttention(braid_dtype dt, const CacheProblem<T> &p, int64_t maxKeys) {
  const braid_cache_attention_shape &sh = p.sh;
  const int64_t items = sh.batch * sh.kv_heads;
  if (!attentionByGemm(dt, sh.head_dim, sh.v_head_dim))
    return parallelFor(items, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        referenceItem(p, i / sh.kv_heads, i % sh.kv_heads);
    });
  if (p.rows() <= kFewRows)
    return fewQueries(p, maxKeys);
  const int64_t threads = parallelThreads(items);
  const int64_t slot = itemFloats(p, maxKeys);
  Scratch scratch(0, threads, slot * int64_t(sizeof(float)));
  const SerialBlas serial(threads > 1);
  parallelForSlots(items, [&](int64_t s, int64_t begin, int64_t end) {
    float *ws = reinterpret_cast<float *>(scratch.slot(s));
    for (int64_t i = begin; i < end; ++i)
      gemmItem(p, i / sh.kv_heads, i % sh.kv_heads, maxKeys, ws);
  });
}

} // namespace

void braid::cpu::attendOverCache(braid_dtype dt, const braid_cache_attention_shape &sh,
                                 const void *q, const void *k, const void *v,
                                 const int32_t *positions, const PageTable *pages, void *out,
                                 int64_t maxKeys) {
  withFloatType(dt, kKernel, [&](auto tag) {
    using T = decltype(tag);
    const CacheProblem<T> p{sh,
                            in<T>(q),
                            in<T>(k),
                            in<T>(v),
                            positions,
                            braid::cpu::out<T>(out),
                            Rope(sh.rope_theta, sh.head_dim),
                            sh.heads / sh.kv_heads,
                            pages};
    cacheAttention(dt, p, maxKeys);
  });
}

extern "C" void braid_k_cache_attention(braid_rt *, braid_dtype dt, const void *q,
                                        const void *k_cache, const void *v_cache,
                                        const int32_t *positions, void *out,
                                        const braid_cache_attention_shape *shape) {
  const braid_cache_attention_shape &sh = *shape;
  if (!checkCacheShape(kKernel, sh))
    return;
  attendOverCache(dt, sh, q, k_cache, v_cache, positions, /*pages=*/nullptr, out,
                  checkPositions(sh, positions));
}
