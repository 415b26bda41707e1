//===- softmax.cpp - CPU kernels: softmax and its gradient ----------------===//
//
// Per row of the last dimension: the max in f32 and the sum of exp(x - max)
// in double (rowStats, as cross_entropy), each result exp(x - max) / sum
// rounded once to the storage type. The gradient's row sum of dy * y is in
// double. Large inputs' rows run over the rank's threads; each row is
// computed by one thread in one order, so results do not depend on the
// thread count.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "parallel.h"

#include <cmath>

using namespace braid::cpu;

extern "C" {

void braid_k_softmax(braid_rt *, braid_dtype dt, const void *x, void *y, int64_t rows,
                     int64_t n) {
  withFloatType(dt, "softmax", [&](auto tag) {
    using T = decltype(tag);
    const T *input = in<T>(x);
    T *output = out<T>(y);
    parallelForEachAbove(rows, rows * n, kMinThreadedElems, [&](int64_t r) {
      const T *row = input + r * n;
      T *result = output + r * n;
      const RowStats stats = rowStats(row, n);
      const double inv = 1.0 / stats.sum;
      for (int64_t i = 0; i < n; ++i)
        braid::store(result, i,
                     float(std::exp(double(braid::load(row, i)) - double(stats.max)) * inv));
    });
  });
}

void braid_k_softmax_grad(braid_rt *, braid_dtype dt, const void *y, const void *dy, void *dx,
                          int64_t rows, int64_t n) {
  withFloatType(dt, "softmax_grad", [&](auto tag) {
    using T = decltype(tag);
    const T *prob = in<T>(y);
    const T *grad = in<T>(dy);
    T *result = out<T>(dx);
    parallelForEachAbove(rows, rows * n, kMinThreadedElems, [&](int64_t r) {
      const T *p = prob + r * n, *g = grad + r * n;
      double dot = 0.0;
      for (int64_t i = 0; i < n; ++i)
        dot += double(braid::load(g, i)) * double(braid::load(p, i));
      for (int64_t i = 0; i < n; ++i)
        braid::store(result + r * n, i,
                     float(double(braid::load(p, i)) * (double(braid::load(g, i)) - dot)));
    });
  });
}

} // extern "C"
