//===- optimizer.cpp - CPU kernels: norm clipping, SGD, AdamW, conversions ===//
//
// Per-element update math in double (one rounding on each store); the sum of
// squares accumulates in double and is added to the f32 total. AdamW's bias
// corrections 1 - b^t are computed in double from t = *step. A NULL `coef`
// means 1. AdamW, elementwise, runs in chunks over the rank's threads.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace braid::cpu;

namespace {

constexpr int64_t kChunk = int64_t(1) << 16; // elements per thread's work item

template <typename T> void sgdImpl(T *p, const T *g, double coef, int64_t n, double lr, double wd) {
  for (int64_t i = 0; i < n; ++i) {
    const double pv = braid::load(p, i);
    const double gv = coef * double(braid::load(g, i));
    braid::store(p, i, float(pv - lr * (gv + wd * pv)));
  }
}

template <typename T>
void adamwImpl(T *p, const T *g, float *m, float *v, double coef, double t, int64_t n, double lr,
               double b1, double b2, double eps, double wd) {
  const double bc1 = 1.0 - std::pow(b1, t), bc2 = 1.0 - std::pow(b2, t);
  // Elementwise: chunks of kChunk elements over the rank's threads (same
  // results; small tensors stay on the calling thread).
  parallelFor((n + kChunk - 1) / kChunk, [&](int64_t c0, int64_t c1) {
    for (int64_t i = c0 * kChunk, end = std::min(n, c1 * kChunk); i < end; ++i) {
      const double gv = coef * double(braid::load(g, i));
      const double mv = b1 * double(m[i]) + (1.0 - b1) * gv;
      const double vv = b2 * double(v[i]) + (1.0 - b2) * gv * gv;
      m[i] = float(mv);
      v[i] = float(vv);
      const double pv = braid::load(p, i);
      braid::store(p, i, float(pv - lr * (mv / bc1 / (std::sqrt(vv / bc2) + eps) + wd * pv)));
    }
  });
}

template <typename S, typename D> void convertImpl(const S *x, D *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    braid::store(y, i, braid::load(x, i));
}

} // namespace

extern "C" {

void braid_k_sum_squares(braid_rt *, braid_dtype dt, const void *x, float *sumsq, int64_t n) {
  withFloatType(dt, "sum_squares", [&](auto tag) {
    using T = decltype(tag);
    const T *p = in<T>(x);
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = braid::load(p, i);
      s += v * v;
    }
    *sumsq = float(double(*sumsq) + s);
  });
}

void braid_k_clip_coefficient(braid_rt *, const float *sumsq, float *coef, double max_norm) {
  if (!(max_norm > 0.0)) {
    *coef = 1.0f;
    return;
  }
  const double c = max_norm / (std::sqrt(double(*sumsq)) + 1e-6);
  *coef = std::isnan(c) ? float(c) : (c < 1.0 ? float(c) : 1.0f); // NaN norms stay visible
}

void braid_k_sgd_update(braid_rt *, braid_dtype dt, void *param, const void *grad,
                        const float *coef, int64_t n, double lr, double weight_decay) {
  withFloatType(dt, "sgd_update", [&](auto tag) {
    using T = decltype(tag);
    sgdImpl<T>(out<T>(param), in<T>(grad), coef ? double(*coef) : 1.0, n, lr, weight_decay);
  });
}

void braid_k_adamw_update(braid_rt *, braid_dtype dt, void *param, const void *grad, float *m,
                          float *v, const float *coef, const float *step, int64_t n,
                          const braid_adamw_params *p) {
  const double t = double(*step);
  if (!(t >= 1.0))
    fail("adamw_update", "step %g must be >= 1 (the program increments it first)", t);
  withFloatType(dt, "adamw_update", [&](auto tag) {
    using T = decltype(tag);
    adamwImpl<T>(out<T>(param), in<T>(grad), m, v, coef ? double(*coef) : 1.0, t, n, p->lr,
                 p->beta1, p->beta2, p->eps, p->weight_decay);
  });
}

void braid_k_increment(braid_rt *, float *step) { *step += 1.0f; }

void braid_k_convert(braid_rt *, braid_dtype from, braid_dtype to, const void *x, void *y,
                     int64_t n) {
  if (from == to) { // bit-exact copy (NaN payloads included)
    std::memcpy(y, x, size_t(n * elementBytes(from, "convert")));
    return;
  }
  withFloatType(from, "convert", [&](auto stag) {
    using S = decltype(stag);
    withFloatType(to, "convert", [&](auto dtag) {
      using D = decltype(dtag);
      convertImpl<S, D>(in<S>(x), out<D>(y), n);
    });
  });
}

void braid_k_zero(braid_rt *, braid_dtype dt, void *y, int64_t n) {
  std::memset(y, 0, size_t(n * elementBytes(dt, "zero"))); // 0.0 and 0 are all-zero bits
}

} // extern "C"
