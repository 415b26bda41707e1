//===- few_rows_linear.cpp - y = x W for a few rows of x ------------------===//
//
// What few_rows_linear.h specifies. The rank's threads split the output
// columns (in multiples of 16, the width of an AVX-512 register), so each
// thread reads its own part of W once:
//   W [k, n]: a thread walks W's rows four at a time over its columns,
//     adding x[r, kk..kk+3] W[kk..kk+3, j] to the rows' accumulators, which
//     stay in L1 (tiles of kTile columns); per output a chain of fused
//     multiply-adds in increasing kk, vectorized across columns;
//   W [n, k]: a thread takes whole rows of W (its columns of y) and dots
//     each with the rows of x, in 16 interleaved partial sums (kk mod 16)
//     added in a fixed tree, so the loop vectorizes without reassociation.
// Either way an output's arithmetic is the same whichever thread computes
// it. The loops are compiled for the machine's vectors (clones.h), with
// explicit fused multiply-adds.
//
//===----------------------------------------------------------------------===//

#include "few_rows_linear.h"

#include "clones.h"
#include "parallel.h"

#include <algorithm>

using namespace braid::cpu;

namespace {

/// Floats of accumulators one pass over W keeps (64 KB, on the stack: L2 at
/// one row, 1024 columns a row at 16 rows).
constexpr int64_t kAccumulators = 16384;

/// Below this many multiply-adds the product runs on the calling thread
/// (starting threads costs tens of microseconds).
constexpr int64_t kMinThreadedMacs = int64_t(1) << 20;

/// y[r, j] for j in [j0, j1), W [k, n].
BRAID_CPU_CLONES
void rowMajorColumns(const float *x, const float *w, const float *bias, float *y, int64_t rows,
                     int64_t k, int64_t n, int64_t j0, int64_t j1) {
  alignas(64) float accumulators[kAccumulators];
  const int64_t tile = kAccumulators / rows / 16 * 16;
  for (int64_t c0 = j0; c0 < j1; c0 += tile) {
    const int64_t len = std::min(tile, j1 - c0);
    float *acc[kFewRows];
    for (int64_t r = 0; r < rows; ++r) {
      acc[r] = accumulators + r * tile;
      std::fill(acc[r], acc[r] + len, 0.0f);
    }
    int64_t kk = 0;
    for (; kk + 4 <= k; kk += 4) {
      const float *w0 = w + kk * n + c0, *w1 = w0 + n, *w2 = w1 + n, *w3 = w2 + n;
      for (int64_t r = 0; r < rows; ++r) {
        const float *xr = x + r * k + kk;
        const float a0 = xr[0], a1 = xr[1], a2 = xr[2], a3 = xr[3];
        float *__restrict out = acc[r];
        for (int64_t j = 0; j < len; ++j)
          out[j] = __builtin_fmaf(
              a3, w3[j], __builtin_fmaf(a2, w2[j], __builtin_fmaf(a1, w1[j], __builtin_fmaf(a0, w0[j], out[j]))));
      }
    }
    for (; kk < k; ++kk) {
      const float *w0 = w + kk * n + c0;
      for (int64_t r = 0; r < rows; ++r) {
        const float a0 = x[r * k + kk];
        float *__restrict out = acc[r];
        for (int64_t j = 0; j < len; ++j)
          out[j] = __builtin_fmaf(a0, w0[j], out[j]);
      }
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < len; ++j)
        y[r * n + c0 + j] = bias ? acc[r][j] + bias[c0 + j] : acc[r][j];
  }
}

} // namespace

namespace {
/// dotLanes's arithmetic, inlined into each clone that uses it: 16
/// interleaved partial sums (i mod 16) of fused multiply-adds, added in a
/// fixed tree.
[[gnu::always_inline]] inline float sumOfLanes(const float *a, const float *b, int64_t k) {
  float lane[16] = {};
  int64_t kk = 0;
  for (; kk + 16 <= k; kk += 16)
    for (int l = 0; l < 16; ++l)
      lane[l] = __builtin_fmaf(a[kk + l], b[kk + l], lane[l]);
  for (int l = 0; kk < k; ++kk, ++l)
    lane[l] = __builtin_fmaf(a[kk], b[kk], lane[l]);
  for (int width = 8; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l)
      lane[l] += lane[l + width];
  return lane[0];
}
} // namespace

BRAID_CPU_CLONES
float braid::cpu::dotLanes(const float *a, const float *b, int64_t k) {
  return sumOfLanes(a, b, k);
}

BRAID_CPU_CLONES
void braid::cpu::addScaled(float a, const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = __builtin_fmaf(a, x[i], y[i]);
}

BRAID_CPU_CLONES
void braid::cpu::dotLanesRows(const float *a, const float *b, int64_t ld, int64_t n, int64_t k,
                              float scale, float *out) {
  for (int64_t t = 0; t < n; ++t)
    out[t] = scale * sumOfLanes(a, b + t * ld, k);
}

BRAID_CPU_CLONES
void braid::cpu::addScaledRows(const float *w, const float *x, int64_t ld, int64_t n, float *y,
                               int64_t dim) {
  for (int64_t t = 0; t < n; ++t) {
    if (w[t] == 0.0f)
      continue;
    const float a = w[t], *row = x + t * ld;
    for (int64_t i = 0; i < dim; ++i)
      y[i] = __builtin_fmaf(a, row[i], y[i]);
  }
}

namespace {

/// y[r, j] for j in [j0, j1), W [n, k].
void transposedColumns(const float *x, const float *w, const float *bias, float *y, int64_t rows,
                       int64_t k, int64_t n, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t r = 0; r < rows; ++r) {
      const float sum = dotLanes(x + r * k, w + j * k, k);
      y[r * n + j] = bias ? sum + bias[j] : sum;
    }
}

} // namespace

void braid::cpu::fewRowsLinear(const float *x, const float *w, const float *bias, float *y,
                               int64_t rows, int64_t k, int64_t n, bool transposeW) {
  for (int64_t r0 = 0; r0 < rows; r0 += kFewRows) {
    const int64_t count = std::min(kFewRows, rows - r0);
    const float *xs = x + r0 * k;
    float *ys = y + r0 * n;
    // Columns go to threads in blocks of 16 (a cache line of f32 outputs).
    const int64_t blocks = (n + 15) / 16;
    parallelForAbove(blocks, count * k * n, kMinThreadedMacs, [&](int64_t begin, int64_t end) {
      const int64_t j0 = begin * 16, j1 = std::min(n, end * 16);
      if (transposeW)
        transposedColumns(xs, w, bias, ys, count, k, n, j0, j1);
      else
        rowMajorColumns(xs, w, bias, ys, count, k, n, j0, j1);
    });
  }
}
