//===- norms.cpp - CPU kernels: rms_norm, layer_norm ----------------------===//
//
// Row statistics are summed in double (laneSum; two passes for the
// variance); the per-element scaling is f32. Rows are split over the rank's
// threads (parallel.h); each row is computed by one thread in one order, so
// results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "parallel.h"

#include <cmath>

using namespace braid::cpu;

namespace {

template <typename T>
void rmsNormRow(const T *xr, const T *gamma, T *yr, int64_t hidden, double eps) {
  const double ss = laneSum(hidden, [&](int64_t i) {
    const double v = braid::load(xr, i);
    return v * v;
  });
  const float inv = float(1.0 / std::sqrt(ss / double(hidden) + eps));
  for (int64_t i = 0; i < hidden; ++i)
    braid::store(yr, i, braid::load(xr, i) * inv * braid::load(gamma, i));
}

template <typename T>
void layerNormRow(const T *xr, const T *gamma, const T *beta, T *yr, int64_t hidden,
                  double eps) {
  const double mean =
      laneSum(hidden, [&](int64_t i) { return double(braid::load(xr, i)); }) / double(hidden);
  const double var = laneSum(hidden, [&](int64_t i) {
                       const double d = double(braid::load(xr, i)) - mean;
                       return d * d;
                     }) /
                     double(hidden);
  const float inv = float(1.0 / std::sqrt(var + eps));
  const float m = float(mean);
  for (int64_t i = 0; i < hidden; ++i)
    braid::store(yr, i,
                 (braid::load(xr, i) - m) * inv * braid::load(gamma, i) + braid::load(beta, i));
}

} // namespace

extern "C" {

void braid_k_rms_norm(braid_rt *, braid_dtype dt, const void *x, const void *gamma, void *y,
                      int64_t rows, int64_t hidden, double epsilon) {
  withFloatType(dt, "rms_norm", [&](auto tag) {
    using T = decltype(tag);
    parallelForEachAbove(rows, rows * hidden, kMinThreadedElems, [&](int64_t r) {
      rmsNormRow<T>(in<T>(x) + r * hidden, in<T>(gamma), out<T>(y) + r * hidden, hidden,
                    epsilon);
    });
  });
}

void braid_k_layer_norm(braid_rt *, braid_dtype dt, const void *x, const void *gamma,
                        const void *beta, void *y, int64_t rows, int64_t hidden, double epsilon) {
  withFloatType(dt, "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    parallelForEachAbove(rows, rows * hidden, kMinThreadedElems, [&](int64_t r) {
      layerNormRow<T>(in<T>(x) + r * hidden, in<T>(gamma), in<T>(beta),
                      out<T>(y) + r * hidden, hidden, epsilon);
    });
  });
}

} // extern "C"
