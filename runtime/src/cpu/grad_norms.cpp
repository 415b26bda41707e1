//===- grad_norms.cpp - CPU backward kernels: rms_norm, layer_norm --------===//
//
// Row statistics in double (laneSum; two passes for the layer-norm
// variance), the per-element math in double, stores rounded once. Rows fall
// into at most kChunks chunks of consecutive rows, a partition that depends
// on the row count only; the chunks are split over the rank's threads
// (parallel.h). Per chunk, rows in order: the row's statistics, its dx, and
// its terms of dgamma / dbeta added to the chunk's double partial sums (in
// the scratch arena, scratch.h: kChunks x hidden doubles per output, 2 MiB
// per output at hidden 4096). Then each column of dgamma / dbeta is the sum
// of its chunks' partials in chunk order. Every output is computed by one
// thread in one order, so results do not depend on the thread count; x and
// dy are read once.
//
// rms_norm:   r = 1 / sqrt(mean(x^2) + eps), y = x r g
//   dx = r g dy - x r^3 mean(g dy x),   dgamma = sum_rows dy x r
// layer_norm: xh = (x - mean) r, r = 1 / sqrt(var + eps), y = xh g + b
//   dx = r (g dy - mean(g dy) - xh mean(g dy xh)),
//   dgamma = sum_rows dy xh,   dbeta = sum_rows dy
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "parallel.h"
#include "scratch.h"

#include <algorithm>
#include <cmath>

using namespace braid::cpu;

namespace {

constexpr int64_t kChunks = 64; // row chunks: partial sums of dgamma / dbeta

/// The row chunks of a gradient and their double partial sums, `outputs`
/// (dgamma, dbeta) of `hidden` each per chunk.
class Chunks {
public:
  Chunks(int64_t rows, int64_t hidden, int64_t outputs)
      : rows(rows), hidden(hidden), count(std::min(kChunks, rows)),
        scratch(count * outputs * hidden * int64_t(sizeof(double)), 0, 0) {}

  /// Calls work(rowBegin, rowEnd, partials) per chunk over the rank's
  /// threads; partials (outputs x hidden doubles) start at zero.
  template <typename Work> void run(int64_t outputs, Work &&work) {
    auto chunks = [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double *part = partials(c, outputs);
        std::fill(part, part + outputs * hidden, 0.0);
        work(rows * c / count, rows * (c + 1) / count, part);
      }
    };
    parallelForAbove(count, rows * hidden, kMinThreadedElems, chunks);
  }

  /// Output o's column i: the chunks' partials summed in chunk order.
  double total(int64_t outputs, int64_t o, int64_t i) const {
    double sum = 0.0;
    for (int64_t c = 0; c < count; ++c)
      sum += partials(c, outputs)[o * hidden + i];
    return sum;
  }

private:
  double *partials(int64_t c, int64_t outputs) const {
    return reinterpret_cast<double *>(scratch.shared()) + c * outputs * hidden;
  }

  int64_t rows, hidden, count;
  Scratch scratch;
};

template <typename T>
void rmsNormGradImpl(const T *x, const T *gamma, const T *dy, T *dx, T *dgamma, int64_t rows,
                     int64_t H, double eps) {
  Chunks chunks(rows, H, 1);
  chunks.run(1, [&](int64_t r0, int64_t r1, double *dg) {
    for (int64_t r = r0; r < r1; ++r) {
      const T *xr = x + r * H, *dyr = dy + r * H;
      const double ss = laneSum(H, [&](int64_t i) {
        const double xv = braid::load(xr, i);
        return xv * xv;
      });
      const double dot = laneSum(H, [&](int64_t i) {
        return double(braid::load(gamma, i)) * double(braid::load(dyr, i)) *
               double(braid::load(xr, i));
      });
      const double inv = 1.0 / std::sqrt(ss / double(H) + eps);
      const double coef = inv * inv * inv * dot / double(H);
      for (int64_t i = 0; i < H; ++i) {
        const double xv = braid::load(xr, i), d = braid::load(dyr, i);
        braid::store(dx + r * H, i, float(inv * double(braid::load(gamma, i)) * d - xv * coef));
        dg[i] += d * xv * inv;
      }
    }
  });
  for (int64_t i = 0; i < H; ++i)
    braid::store(dgamma, i, float(chunks.total(1, 0, i)));
}

template <typename T>
void layerNormGradImpl(const T *x, const T *gamma, const T *dy, T *dx, T *dgamma, T *dbeta,
                       int64_t rows, int64_t H, double eps) {
  Chunks chunks(rows, H, 2);
  chunks.run(2, [&](int64_t r0, int64_t r1, double *part) {
    double *dg = part, *db = part + H;
    for (int64_t r = r0; r < r1; ++r) {
      const T *xr = x + r * H, *dyr = dy + r * H;
      const double mean =
          laneSum(H, [&](int64_t i) { return double(braid::load(xr, i)); }) / double(H);
      const double var = laneSum(H, [&](int64_t i) {
        const double d = double(braid::load(xr, i)) - mean;
        return d * d;
      });
      const double inv = 1.0 / std::sqrt(var / double(H) + eps);
      // Sums of g dy and g dy xh.
      const double sgd = laneSum(H, [&](int64_t i) {
        return double(braid::load(gamma, i)) * double(braid::load(dyr, i));
      });
      const double sgdx = laneSum(H, [&](int64_t i) {
        return double(braid::load(gamma, i)) * double(braid::load(dyr, i)) *
               ((double(braid::load(xr, i)) - mean) * inv);
      });
      const double mgd = sgd / double(H), mgdx = sgdx / double(H);
      for (int64_t i = 0; i < H; ++i) {
        const double xh = (double(braid::load(xr, i)) - mean) * inv;
        const double d = braid::load(dyr, i);
        braid::store(dx + r * H, i,
                     float(inv * (double(braid::load(gamma, i)) * d - mgd - xh * mgdx)));
        dg[i] += d * xh;
        db[i] += d;
      }
    }
  });
  for (int64_t i = 0; i < H; ++i) {
    braid::store(dgamma, i, float(chunks.total(2, 0, i)));
    braid::store(dbeta, i, float(chunks.total(2, 1, i)));
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
