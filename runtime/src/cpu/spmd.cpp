//===- spmd.cpp - CPU kernels: local pieces of partitioned ops ------------===//
//
// Vocabulary-parallel embedding (forward and table gradient), bias_add, the
// three passes and the gradient of vocabulary-parallel cross-entropy, and
// slice / unslice of one dimension. Semantics: the "SPMD kernels" section of
// braid/runtime.h.
//
// embedding_grad_shard groups tokens as embedding_grad does (one double sum
// per distinct token, one rounding per stored element); tokens outside the
// shard are another rank's and are skipped, not errors. The cross-entropy
// passes mirror cross_entropy: max in f32, exp sums and the loss in double,
// results stored as f32. A label outside [0, valid) is an error on every rank
// (each knows `valid`), so a bad label aborts wherever it lands. slice and
// unslice move bits (any dtype, tokens included); their padding is all-zero
// bits, which is 0 in every dtype.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "embedding_grad.h"

#include <cmath>
#include <cstring>

using namespace braid::cpu;

namespace {

/// How many of the `local` indices from global index `first` on lie below
/// `valid` (the rest are padding).
int64_t realCount(int64_t local, int64_t first, int64_t valid) {
  const int64_t n = valid - first;
  return n < 0 ? 0 : n > local ? local : n;
}

void checkShard(const char *kernel, int64_t vocabLocal, int64_t offset) {
  if (vocabLocal < 0 || offset < 0)
    fail(kernel, "shard [%lld, %lld + %lld) is not a range of global indices",
         (long long)offset, (long long)offset, (long long)vocabLocal);
}

template <typename T>
void embeddingShardImpl(braid_dtype index_dt, const void *tokens, const T *table, T *out_,
                        int64_t T_, int64_t V, int64_t H, int64_t offset) {
  for (int64_t t = 0; t < T_; ++t) {
    const int64_t local = loadIndex(tokens, index_dt, t, "embedding_shard") - offset;
    T *dst = out_ + t * H;
    if (local >= 0 && local < V)
      std::memcpy(static_cast<void *>(dst), static_cast<const void *>(table + local * H),
                  size_t(H) * sizeof(T));
    else
      std::memset(static_cast<void *>(dst), 0, size_t(H) * sizeof(T));
  }
}

template <typename T>
void embeddingGradShardImpl(braid_dtype index_dt, const void *tokens, const T *dy, T *dtable,
                            int64_t T_, int64_t V, int64_t H, int64_t offset) {
  auto rowOf = [&](int64_t t) { // -1: another rank's token
    const int64_t local = loadIndex(tokens, index_dt, t, "embedding_grad_shard") - offset;
    return local >= 0 && local < V ? local : int64_t(-1);
  };
  sumRowsByToken(rowOf, dy, dtable, T_, V, H);
}

template <typename T>
void ceShardMaxImpl(const T *x, float *rowMax, int64_t rows, int64_t V, int64_t real) {
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = x + r * V;
    float mx = -INFINITY;
    for (int64_t c = 0; c < real; ++c) {
      const float v = braid::load(row, c);
      mx = v > mx ? v : mx;
    }
    rowMax[r] = mx;
  }
}

template <typename T>
void ceShardStatsImpl(braid_dtype index_dt, const T *x, const void *labels, const float *rowMax,
                      float *stats, int64_t rows, int64_t V, int64_t offset, int64_t valid,
                      int64_t real) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t label = loadLabel(labels, index_dt, r, valid, "ce_shard_stats");
    const T *row = x + r * V;
    double sum = 0.0;
    for (int64_t c = 0; c < real; ++c)
      sum += std::exp(double(braid::load(row, c)) - double(rowMax[r]));
    const int64_t local = label - offset;
    stats[2 * r] = float(sum);
    stats[2 * r + 1] = local >= 0 && local < V ? braid::load(row, local) : 0.0f;
  }
}

template <typename T>
void ceShardGradImpl(braid_dtype index_dt, const T *x, const void *labels, const float *rowMax,
                     const float *stats, float dloss, T *dx, int64_t rows, int64_t V,
                     int64_t offset, int64_t valid, int64_t real, int64_t denominator) {
  const double scale = double(dloss) / double(denominator);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t local = loadLabel(labels, index_dt, r, valid, "ce_shard_grad") - offset;
    const T *row = x + r * V;
    const double mx = rowMax[r], inv = 1.0 / double(stats[2 * r]);
    for (int64_t c = 0; c < real; ++c) {
      const double p = std::exp(double(braid::load(row, c)) - mx) * inv;
      braid::store(dx + r * V, c, float(scale * (c == local ? p - 1.0 : p)));
    }
    for (int64_t c = real; c < V; ++c)
      braid::store(dx + r * V, c, 0.0f);
  }
}

template <typename E>
void sliceImpl(const E *x, E *y, int64_t outer, int64_t dim, int64_t dimLocal, int64_t inner,
               int64_t start) {
  const int64_t kept = realCount(dimLocal, start, dim);
  for (int64_t o = 0; o < outer; ++o) {
    E *dst = y + o * dimLocal * inner;
    if (kept > 0)
      std::memcpy(dst, x + (o * dim + start) * inner, size_t(kept * inner) * sizeof(E));
    std::memset(dst + kept * inner, 0, size_t((dimLocal - kept) * inner) * sizeof(E));
  }
}

template <typename E>
void unsliceImpl(const E *x, E *y, int64_t outer, int64_t dim, int64_t dimLocal, int64_t inner,
                 int64_t start) {
  const int64_t kept = realCount(dimLocal, start, dim);
  std::memset(y, 0, size_t(outer * dim * inner) * sizeof(E));
  if (kept > 0)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y + (o * dim + start) * inner, x + o * dimLocal * inner,
                  size_t(kept * inner) * sizeof(E));
}

template <typename E>
void placeImpl(const E *x, E *y, int64_t outer, int64_t dim, int64_t dimLocal, int64_t inner,
               int64_t start) {
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(y + (o * dim + start) * inner, x + o * dimLocal * inner,
                size_t(dimLocal * inner) * sizeof(E));
}

enum class Move { Slice, Unslice, Place };

/// slice, unslice and place: checks the extents, then moves the elements with
/// the implementation of `move` (any dtype: by element size).
template <Move move>
void moveRows(const char *kernel, braid_dtype dt, const void *x, void *y, int64_t outer,
              int64_t dim, int64_t dimLocal, int64_t inner, int64_t start) {
  if (outer < 0 || dim < 0 || dimLocal < 0 || inner < 0 || start < 0)
    fail(kernel, "negative extent (outer %lld, dim %lld, dim_local %lld, inner %lld, start %lld)",
         (long long)outer, (long long)dim, (long long)dimLocal, (long long)inner,
         (long long)start);
  if (move == Move::Place && start + dimLocal > dim)
    fail(kernel, "rows [%lld, %lld) are not in the %lld rows of the result", (long long)start,
         (long long)(start + dimLocal), (long long)dim);
  withElementType(dt, kernel, [&](auto tag) {
    using E = decltype(tag);
    auto *impl = move == Move::Slice     ? sliceImpl<E>
                 : move == Move::Unslice ? unsliceImpl<E>
                                         : placeImpl<E>;
    impl(in<E>(x), out<E>(y), outer, dim, dimLocal, inner, start);
  });
}

} // namespace

extern "C" {

void braid_k_embedding_shard(braid_rt *, braid_dtype dt, braid_dtype index_dt,
                             const void *tokens, const void *table, void *out_,
                             int64_t num_tokens, int64_t vocab_local, int64_t hidden,
                             int64_t offset) {
  checkShard("embedding_shard", vocab_local, offset);
  withFloatType(dt, "embedding_shard", [&](auto tag) {
    using T = decltype(tag);
    embeddingShardImpl<T>(index_dt, tokens, in<T>(table), out<T>(out_), num_tokens, vocab_local,
                          hidden, offset);
  });
}

void braid_k_embedding_grad_shard(braid_rt *, braid_dtype dt, braid_dtype index_dt,
                                  const void *tokens, const void *dy, void *dtable,
                                  int64_t num_tokens, int64_t vocab_local, int64_t hidden,
                                  int64_t offset) {
  checkShard("embedding_grad_shard", vocab_local, offset);
  withFloatType(dt, "embedding_grad_shard", [&](auto tag) {
    using T = decltype(tag);
    embeddingGradShardImpl<T>(index_dt, tokens, in<T>(dy), out<T>(dtable), num_tokens,
                              vocab_local, hidden, offset);
  });
}

void braid_k_bias_add(braid_rt *, braid_dtype dt, const void *x, const void *bias, void *y,
                      int64_t n, int64_t n_bias) {
  if (n > 0 && (n_bias <= 0 || n % n_bias != 0))
    fail("bias_add", "%lld elements are not a whole number of bias vectors of %lld",
         (long long)n, (long long)n_bias);
  withFloatType(dt, "bias_add", [&](auto tag) {
    using T = decltype(tag);
    const T *px = in<T>(x), *pb = in<T>(bias);
    T *py = out<T>(y);
    for (int64_t i0 = 0; i0 < n; i0 += n_bias)
      for (int64_t j = 0; j < n_bias; ++j)
        braid::store(py, i0 + j, braid::load(px, i0 + j) + braid::load(pb, j));
  });
}

void braid_k_ce_shard_max(braid_rt *, braid_dtype dt, const void *logits, float *row_max,
                          int64_t rows, int64_t vocab_local, int64_t offset, int64_t valid) {
  checkShard("ce_shard_max", vocab_local, offset);
  withFloatType(dt, "ce_shard_max", [&](auto tag) {
    using T = decltype(tag);
    ceShardMaxImpl<T>(in<T>(logits), row_max, rows, vocab_local,
                      realCount(vocab_local, offset, valid));
  });
}

void braid_k_ce_shard_stats(braid_rt *, braid_dtype dt, braid_dtype index_dt,
                            const void *logits, const void *labels, const float *row_max,
                            float *stats, int64_t rows, int64_t vocab_local, int64_t offset,
                            int64_t valid) {
  checkShard("ce_shard_stats", vocab_local, offset);
  withFloatType(dt, "ce_shard_stats", [&](auto tag) {
    using T = decltype(tag);
    ceShardStatsImpl<T>(index_dt, in<T>(logits), labels, row_max, stats, rows, vocab_local,
                        offset, valid, realCount(vocab_local, offset, valid));
  });
}

void braid_k_ce_shard_loss(braid_rt *, const float *row_max, const float *stats, float *loss,
                           int64_t rows, int64_t denominator) {
  if (denominator <= 0)
    fail("ce_shard_loss", "denominator %lld must be positive", (long long)denominator);
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r)
    total += double(row_max[r]) + std::log(double(stats[2 * r])) - double(stats[2 * r + 1]);
  *loss = float(total / double(denominator));
}

void braid_k_ce_shard_grad(braid_rt *, braid_dtype dt, braid_dtype index_dt,
                           const void *logits, const void *labels, const float *row_max,
                           const float *stats, const float *dloss, void *dlogits, int64_t rows,
                           int64_t vocab_local, int64_t offset, int64_t valid,
                           int64_t denominator) {
  checkShard("ce_shard_grad", vocab_local, offset);
  if (denominator <= 0)
    fail("ce_shard_grad", "denominator %lld must be positive", (long long)denominator);
  withFloatType(dt, "ce_shard_grad", [&](auto tag) {
    using T = decltype(tag);
    ceShardGradImpl<T>(index_dt, in<T>(logits), labels, row_max, stats, *dloss,
                       out<T>(dlogits), rows, vocab_local, offset, valid,
                       realCount(vocab_local, offset, valid), denominator);
  });
}

void braid_k_slice(braid_rt *, braid_dtype dt, const void *x, void *y, int64_t outer,
                   int64_t dim, int64_t dim_local, int64_t inner, int64_t start) {
  moveRows<Move::Slice>("slice", dt, x, y, outer, dim, dim_local, inner, start);
}

void braid_k_unslice(braid_rt *, braid_dtype dt, const void *x, void *y, int64_t outer,
                     int64_t dim, int64_t dim_local, int64_t inner, int64_t start) {
  moveRows<Move::Unslice>("unslice", dt, x, y, outer, dim, dim_local, inner, start);
}

void braid_k_place(braid_rt *, braid_dtype dt, const void *x, void *y, int64_t outer,
                   int64_t dim, int64_t dim_local, int64_t inner, int64_t start) {
  moveRows<Move::Place>("place", dt, x, y, outer, dim, dim_local, inner, start);
}

} // extern "C"
