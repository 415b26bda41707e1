//===- loss.cpp - CPU kernel: cross_entropy -------------------------------===//
//
// Per row: max in f32, sum of exp(x - max) in double, logsumexp in double;
// the mean over rows is accumulated in double (in row order) and stored as f32.
// Rows run over the rank's threads.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "parallel.h"
#include "scratch.h"

#include <cmath>

using namespace braid::cpu;

extern "C" void braid_k_cross_entropy(braid_rt *, braid_dtype dt, braid_dtype index_dt,
                                      const void *logits, const void *labels, float *loss,
                                      int64_t rows, int64_t vocab) {
  withFloatType(dt, "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    const T *x = in<T>(logits);
    // Rows over the rank's threads, each row's term kept (scratch arena) and
    // the mean summed in row order: the same result at any thread count.
    Scratch scratch(rows * int64_t(sizeof(double)), 0, 0);
    double *term = reinterpret_cast<double *>(scratch.shared());
    parallelFor(rows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t label = loadLabel(labels, index_dt, r, vocab, "cross_entropy");
        const T *row = x + r * vocab;
        const RowStats stats = rowStats(row, vocab);
        const double lse = double(stats.max) + std::log(stats.sum);
        term[r] = lse - double(braid::load(row, label));
      }
    });
    double total = 0.0;
    for (int64_t r = 0; r < rows; ++r)
      total += term[r];
    *loss = float(total / double(rows)); // rows == 0: NaN (a mean of nothing)
  });
}
