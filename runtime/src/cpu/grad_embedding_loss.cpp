//===- grad_embedding_loss.cpp - CPU backward kernels: embedding, loss ----===//
//
// embedding_grad: the tokens are checked, then each distinct token's rows of
// dy are summed into its table row (embedding_grad.h). position_grad: strided
// column sums in double.
// cross_entropy_grad: softmax per row in double (max in f32 as the forward),
// rows over the rank's threads.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "embedding_grad.h"
#include "parallel.h"

#include <cmath>

using namespace braid::cpu;

namespace {

constexpr int64_t kColBlock = 2048;

template <typename T>
void embeddingGradImpl(braid_dtype index_dt, const void *tokens, const T *dy, T *dtable,
                       int64_t T_, int64_t vocab, int64_t H) {
  for (int64_t t = 0; t < T_; ++t) {
    const int64_t tok = loadIndex(tokens, index_dt, t, "embedding_grad");
    if (tok < 0 || tok >= vocab)
      fail("embedding_grad", "token %lld at position %lld is outside [0, %lld)", (long long)tok,
           (long long)t, (long long)vocab);
  }
  auto rowOf = [&](int64_t t) { return loadIndex(tokens, index_dt, t, "embedding_grad"); };
  sumRowsByToken(rowOf, dy, dtable, T_, vocab, H);
}

template <typename T>
void positionGradImpl(const T *dy, T *dpos, int64_t T_, int64_t seq, int64_t P, int64_t H) {
  double acc[kColBlock];
  for (int64_t s = 0; s < P; ++s)
    for (int64_t h0 = 0; h0 < H; h0 += kColBlock) {
      const int64_t hb = H - h0 < kColBlock ? H - h0 : kColBlock;
      for (int64_t h = 0; h < hb; ++h)
        acc[h] = 0.0;
      if (s < seq)
        for (int64_t t = s; t < T_; t += seq)
          for (int64_t h = 0; h < hb; ++h)
            acc[h] += braid::load(dy + t * H + h0, h);
      for (int64_t h = 0; h < hb; ++h)
        braid::store(dpos + s * H + h0, h, float(acc[h]));
    }
}

template <typename T>
void crossEntropyGradImpl(braid_dtype index_dt, const T *x, const void *labels, float dloss,
                          T *dx, int64_t rows, int64_t V) {
  const double scale = double(dloss) / double(rows);
  // Rows are independent: split over the rank's threads (same results).
  parallelFor(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t label = loadLabel(labels, index_dt, r, V, "cross_entropy_grad");
      const T *row = x + r * V;
      const RowStats stats = rowStats(row, V);
      const float mx = stats.max;
      const double inv = 1.0 / stats.sum;
      for (int64_t i = 0; i < V; ++i) {
        const double p = std::exp(double(braid::load(row, i)) - double(mx)) * inv;
        braid::store(dx + r * V, i, float(scale * (i == label ? p - 1.0 : p)));
      }
    }
  });
}

} // namespace

extern "C" {

void braid_k_embedding_grad(braid_rt *, braid_dtype dt, braid_dtype index_dt,
                            const void *tokens, const void *dy, void *dtable, int64_t num_tokens,
                            int64_t vocab, int64_t hidden) {
  withFloatType(dt, "embedding_grad", [&](auto tag) {
    using T = decltype(tag);
    embeddingGradImpl<T>(index_dt, tokens, in<T>(dy), out<T>(dtable), num_tokens, vocab,
                         hidden);
  });
}

void braid_k_position_grad(braid_rt *, braid_dtype dt, const void *dy, void *dpos,
                           int64_t num_tokens, int64_t seq, int64_t positions, int64_t hidden) {
  if (seq <= 0 || (num_tokens > 0 && positions < seq))
    fail("position_grad", "sequence length %lld must lie in [1, positions = %lld]",
         (long long)seq, (long long)positions);
  withFloatType(dt, "position_grad", [&](auto tag) {
    using T = decltype(tag);
    positionGradImpl<T>(in<T>(dy), out<T>(dpos), num_tokens, seq, positions, hidden);
  });
}

void braid_k_cross_entropy_grad(braid_rt *, braid_dtype dt, braid_dtype index_dt,
                                const void *logits, const void *labels, const float *dloss,
                                void *dlogits, int64_t rows, int64_t vocab) {
  withFloatType(dt, "cross_entropy_grad", [&](auto tag) {
    using T = decltype(tag);
    crossEntropyGradImpl<T>(index_dt, in<T>(logits), labels, *dloss, out<T>(dlogits), rows,
                            vocab);
  });
}

} // extern "C"
