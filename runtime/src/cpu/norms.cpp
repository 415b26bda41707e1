//===- norms.cpp - CPU kernels: rms_norm, layer_norm ----------------------===//
//
// Row statistics are summed in double (two passes for the variance); the
// per-element scaling is f32.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <cmath>

using namespace braid::cpu;

namespace {

template <typename T>
void rmsNormImpl(const T *x, const T *gamma, T *y, int64_t rows, int64_t hidden, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * hidden;
    T *yr = y + r * hidden;
    double ss = 0.0;
    for (int64_t i = 0; i < hidden; ++i) {
      const double v = braid::load(xr, i);
      ss += v * v;
    }
    const float inv = float(1.0 / std::sqrt(ss / double(hidden) + eps));
    for (int64_t i = 0; i < hidden; ++i)
      braid::store(yr, i, braid::load(xr, i) * inv * braid::load(gamma, i));
  }
}

template <typename T>
void layerNormImpl(const T *x, const T *gamma, const T *beta, T *y, int64_t rows, int64_t hidden,
                   double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * hidden;
    T *yr = y + r * hidden;
    double sum = 0.0;
    for (int64_t i = 0; i < hidden; ++i)
      sum += braid::load(xr, i);
    const double mean = sum / double(hidden);
    double var = 0.0;
    for (int64_t i = 0; i < hidden; ++i) {
      const double d = double(braid::load(xr, i)) - mean;
      var += d * d;
    }
    var /= double(hidden);
    const float inv = float(1.0 / std::sqrt(var + eps));
    const float m = float(mean);
    for (int64_t i = 0; i < hidden; ++i)
      braid::store(yr, i,
                   (braid::load(xr, i) - m) * inv * braid::load(gamma, i) + braid::load(beta, i));
  }
}

} // namespace

extern "C" {

void braid_k_rms_norm(braid_rt *, braid_dtype dt, const void *x, const void *gamma, void *y,
                      int64_t rows, int64_t hidden, double epsilon) {
  withFloatType(dt, "rms_norm", [&](auto tag) {
    using T = decltype(tag);
    rmsNormImpl<T>(in<T>(x), in<T>(gamma), out<T>(y), rows, hidden, epsilon);
  });
}

void braid_k_layer_norm(braid_rt *, braid_dtype dt, const void *x, const void *gamma,
                        const void *beta, void *y, int64_t rows, int64_t hidden, double epsilon) {
  withFloatType(dt, "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    layerNormImpl<T>(in<T>(x), in<T>(gamma), in<T>(beta), out<T>(y), rows, hidden, epsilon);
  });
}

} // extern "C"
