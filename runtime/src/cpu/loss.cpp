//===- loss.cpp - CPU kernel: cross_entropy -------------------------------===//
//
// Per row: max in f32, sum of exp(x - max) in double, logsumexp in double;
// the mean over rows is accumulated in double and stored as f32.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <cmath>

using namespace braid::cpu;

extern "C" void braid_k_cross_entropy(braid_rt *, braid_dtype dt, braid_dtype index_dt,
                                      const void *logits, const void *labels, float *loss,
                                      int64_t rows, int64_t vocab) {
  withFloatType(dt, "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    const T *x = in<T>(logits);
    double total = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t label = loadIndex(labels, index_dt, r, "cross_entropy");
      if (label < 0 || label >= vocab)
        fail("cross_entropy", "label %lld of row %lld is outside [0, %lld)", (long long)label,
             (long long)r, (long long)vocab);
      const T *row = x + r * vocab;
      float mx = -INFINITY;
      for (int64_t i = 0; i < vocab; ++i) {
        const float v = braid::load(row, i);
        mx = v > mx ? v : mx;
      }
      double sum = 0.0;
      for (int64_t i = 0; i < vocab; ++i)
        sum += std::exp(double(braid::load(row, i)) - double(mx));
      const double lse = double(mx) + std::log(sum);
      total += lse - double(braid::load(row, label));
    }
    *loss = float(total / double(rows)); // rows == 0: NaN (a mean of nothing)
  });
}
