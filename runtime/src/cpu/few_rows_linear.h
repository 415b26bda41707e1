//===- few_rows_linear.h - y = x W for a few rows of x ----------*- C++ -*-===//
//
// Internal to runtime/src/cpu. A decode step multiplies one row per sequence
// by every weight matrix: the product is bound by reading W once, and
// sgemm's packing of W (a copy written and read again before the product)
// took about as long as its kernel at one row (perf, llama 0.5B decode).
// fewRowsLinear streams W from memory once per kFewRows rows, in its stored
// layout, and keeps the rows' outputs in cache. braid_k_linear uses it for
// the linears of decode programs (BRAID_LINEAR_ROWS_APART): a row's result
// is the same whatever rows come with it, as sgemm's is for the others, so a
// request's logits do not depend on the batch it shares.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_FEW_ROWS_LINEAR_H
#define BRAID_RUNTIME_CPU_FEW_ROWS_LINEAR_H

#include <cstdint>

namespace braid::cpu {

/// Rows of x per pass over W (measured on 1536 x 4096 f32 weights, one
/// thread, best of 10: 1.7x sgemm's rate at one row, 2x at 16).
constexpr int64_t kFewRows = 16;

/// y[r, :] = x[r, :] W (+ bias), kFewRows rows per pass over W: W is [k, n]
/// row-major, or [n, k] when `transposeW`. Each output is one f32 sum over k
/// in increasing order (fused multiply-adds), the bias added last, computed
/// by one thread in the same order whatever the rank's thread count, so the
/// result does not depend on it.
void fewRowsLinear(const float *x, const float *w, const float *bias, float *y, int64_t rows,
                   int64_t k, int64_t n, bool transposeW);

/// sum_i a[i] b[i] in 16 interleaved partial sums (i mod 16) added in a
/// fixed tree: the same value on every machine whatever the vector width.
float dotLanes(const float *a, const float *b, int64_t k);

/// y[i] = fma(a, x[i], y[i]) for i in [0, n).
void addScaled(float a, const float *x, float *y, int64_t n);

/// out[t] = scale * dotLanes(a, b + t ld, k) for t in [0, n): the same
/// values, in one call (a decode step's scores of one query row over a page
/// of keys; a call per key was mostly call overhead).
void dotLanesRows(const float *a, const float *b, int64_t ld, int64_t n, int64_t k, float scale,
                  float *out);

/// For t in [0, n) in order, where w[t] != 0: addScaled(w[t], x + t ld, y,
/// dim): the same sums, in one call.
void addScaledRows(const float *w, const float *x, int64_t ld, int64_t n, float *y, int64_t dim);

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_FEW_ROWS_LINEAR_H
