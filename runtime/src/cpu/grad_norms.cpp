//===- grad_norms.cpp - CPU backward kernels: rms_norm, layer_norm --------===//
//
// Row statistics in double (two passes for the layer-norm variance), the
// per-element math in double, stores rounded once. dgamma / dbeta sum over
// rows into double accumulators of kColBlock columns: the hidden dimension
// is processed in column blocks, and the row statistics (a few sums over the
// row) are recomputed once per block, so no scratch grows with rows or
// hidden (a single block for hidden <= kColBlock).
//
// rms_norm:   r = 1 / sqrt(mean(x^2) + eps), y = x r g
//   dx = r g dy - x r^3 mean(g dy x),   dgamma = sum_rows dy x r
// layer_norm: xh = (x - mean) r, r = 1 / sqrt(var + eps), y = xh g + b
//   dx = r (g dy - mean(g dy) - xh mean(g dy xh)),
//   dgamma = sum_rows dy xh,   dbeta = sum_rows dy
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <cmath>

using namespace braid::cpu;

namespace {

constexpr int64_t kColBlock = 2048; // double accumulators per output (16 KiB)

template <typename T>
void rmsNormGradImpl(const T *x, const T *gamma, const T *dy, T *dx, T *dgamma, int64_t rows,
                     int64_t H, double eps) {
  double dg[kColBlock];
  for (int64_t c0 = 0; c0 < H; c0 += kColBlock) {
    const int64_t cb = H - c0 < kColBlock ? H - c0 : kColBlock;
    for (int64_t c = 0; c < cb; ++c)
      dg[c] = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const T *xr = x + r * H, *dyr = dy + r * H;
      double ss = 0.0, dot = 0.0;
      for (int64_t i = 0; i < H; ++i) {
        const double xv = braid::load(xr, i), g = braid::load(gamma, i);
        ss += xv * xv;
        dot += g * double(braid::load(dyr, i)) * xv;
      }
      const double inv = 1.0 / std::sqrt(ss / double(H) + eps);
      const double coef = inv * inv * inv * dot / double(H);
      for (int64_t c = 0; c < cb; ++c) {
        const int64_t i = c0 + c;
        const double xv = braid::load(xr, i), d = braid::load(dyr, i);
        braid::store(dx + r * H, i, float(inv * double(braid::load(gamma, i)) * d - xv * coef));
        dg[c] += d * xv * inv;
      }
    }
    for (int64_t c = 0; c < cb; ++c)
      braid::store(dgamma, c0 + c, float(dg[c]));
  }
}

template <typename T>
void layerNormGradImpl(const T *x, const T *gamma, const T *dy, T *dx, T *dgamma, T *dbeta,
                       int64_t rows, int64_t H, double eps) {
  double dg[kColBlock], db[kColBlock];
  for (int64_t c0 = 0; c0 < H; c0 += kColBlock) {
    const int64_t cb = H - c0 < kColBlock ? H - c0 : kColBlock;
    for (int64_t c = 0; c < cb; ++c)
      dg[c] = db[c] = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const T *xr = x + r * H, *dyr = dy + r * H;
      double sum = 0.0;
      for (int64_t i = 0; i < H; ++i)
        sum += braid::load(xr, i);
      const double mean = sum / double(H);
      double var = 0.0;
      for (int64_t i = 0; i < H; ++i) {
        const double d = double(braid::load(xr, i)) - mean;
        var += d * d;
      }
      const double inv = 1.0 / std::sqrt(var / double(H) + eps);
      double sgd = 0.0, sgdx = 0.0; // sums of g dy and g dy xh
      for (int64_t i = 0; i < H; ++i) {
        const double gd = double(braid::load(gamma, i)) * double(braid::load(dyr, i));
        sgd += gd;
        sgdx += gd * (double(braid::load(xr, i)) - mean) * inv;
      }
      const double mgd = sgd / double(H), mgdx = sgdx / double(H);
      for (int64_t c = 0; c < cb; ++c) {
        const int64_t i = c0 + c;
        const double xh = (double(braid::load(xr, i)) - mean) * inv;
        const double d = braid::load(dyr, i);
        braid::store(dx + r * H, i,
                     float(inv * (double(braid::load(gamma, i)) * d - mgd - xh * mgdx)));
        dg[c] += d * xh;
        db[c] += d;
      }
    }
    for (int64_t c = 0; c < cb; ++c) {
      braid::store(dgamma, c0 + c, float(dg[c]));
      braid::store(dbeta, c0 + c, float(db[c]));
    }
  }
}

} // namespace

extern "C" {

void braid_k_rms_norm_grad(braid_rt *, braid_dtype dt, const void *x, const void *gamma,
                           const void *dy, void *dx, void *dgamma, int64_t rows, int64_t hidden,
                           double epsilon) {
  withFloatType(dt, "rms_norm_grad", [&](auto tag) {
    using T = decltype(tag);
    rmsNormGradImpl<T>(in<T>(x), in<T>(gamma), in<T>(dy), out<T>(dx), out<T>(dgamma), rows,
                       hidden, epsilon);
  });
}

void braid_k_layer_norm_grad(braid_rt *, braid_dtype dt, const void *x, const void *gamma,
                             const void *dy, void *dx, void *dgamma, void *dbeta, int64_t rows,
                             int64_t hidden, double epsilon) {
  withFloatType(dt, "layer_norm_grad", [&](auto tag) {
    using T = decltype(tag);
    layerNormGradImpl<T>(in<T>(x), in<T>(gamma), in<T>(dy), out<T>(dx), out<T>(dgamma),
                         out<T>(dbeta), rows, hidden, epsilon);
  });
}

} // extern "C"
