//===- matmul.cpp - CPU kernels: linear, batch_matmul ---------------------===//
//
// GEMMs go to BLAS (blas.h) unless BRAID_CPU_ACCUMULATE=f64. f32 storage
// calls sgemm on the tensors themselves; bf16 and f16 storage convert panels
// of the operands to f32 in the kernels' scratch arena, call sgemm on them and
// round each output once to the storage type (f32 accumulation, as GPUs'
// tensor cores and cuBLASLt do for these types). Under
// BRAID_CPU_ACCUMULATE=f64 every type runs the reference kernel:
//
// One cache-blocked GEMM: C[m, n] = sum_k A(m, k) B(k, n) (+ bias[n]) with A
// and B given by element strides (which covers the transposed layouts) and f64
// accumulation: products of f32 values are exact in f64 and their sum nearly
// so, which makes the CPU backend a reference whose results hardly depend on
// how a sum is split (over ranks by a partitioned program, or over k blocks).
// For each output the sum runs over k in increasing order (bias added last),
// whatever the blocking. Blocks of B are converted and packed row-major so
// that the innermost loop (over n) is contiguous and vectorizes.
//
// The reference batch_matmul splits its items over the rank's threads
// (parallel.h), each item one GEMM on one thread, so its results do not
// depend on the thread count. The f32 path keeps one sgemm per item on the
// library's threads: splitting the items over threads of our own, each
// calling a single-threaded sgemm, was measured slower inside a training
// step (bench/cpu/README.md: the library's idle worker spins on a core).
//
//===----------------------------------------------------------------------===//

#include "blas.h"
#include "common.h"
#include "few_rows_linear.h"
#include "parallel.h"
#include "scratch.h"
#include "to_f32.h"

#include <algorithm>
#include <type_traits>

using namespace braid::cpu;

namespace {

constexpr int64_t MB = 16;  // rows of C per block
constexpr int64_t NB = 128; // columns of C per block
constexpr int64_t KB = 64;  // contraction slice

template <typename T>
void gemm(const T *a, int64_t aRow, int64_t aCol, const T *b, int64_t bRow, int64_t bCol,
          const T *bias, T *c, int64_t m, int64_t k, int64_t n) {
  double acc[MB][NB];
  double bp[KB][NB];
  for (int64_t j0 = 0; j0 < n; j0 += NB) {
    const int64_t nb = n - j0 < NB ? n - j0 : NB;
    for (int64_t i0 = 0; i0 < m; i0 += MB) {
      const int64_t mb = m - i0 < MB ? m - i0 : MB;
      for (int64_t i = 0; i < mb; ++i)
        for (int64_t j = 0; j < NB; ++j)
          acc[i][j] = 0.0;
      for (int64_t k0 = 0; k0 < k; k0 += KB) {
        const int64_t kb = k - k0 < KB ? k - k0 : KB;
        for (int64_t kk = 0; kk < kb; ++kk) {
          const T *brow = b + (k0 + kk) * bRow + j0 * bCol;
          for (int64_t j = 0; j < nb; ++j)
            bp[kk][j] = braid::load(brow, j * bCol);
          for (int64_t j = nb; j < NB; ++j) // padding: the inner loop has a fixed trip count
            bp[kk][j] = 0.0;
        }
        for (int64_t i = 0; i < mb; ++i) {
          const T *arow = a + (i0 + i) * aRow + k0 * aCol;
          double *ci = acc[i];
          for (int64_t kk = 0; kk < kb; ++kk) {
            const double av = braid::load(arow, kk * aCol);
            const double *bk = bp[kk];
            for (int64_t j = 0; j < NB; ++j) // fixed length: vectorizes even at -O2
              ci[j] += av * bk[j];
          }
        }
      }
      for (int64_t i = 0; i < mb; ++i) {
        T *crow = c + (i0 + i) * n + j0;
        for (int64_t j = 0; j < nb; ++j) {
          double v = acc[i][j];
          if (bias)
            v += braid::load(bias, j0 + j);
          braid::store(crow, j, static_cast<float>(v));
        }
      }
    }
  }
}

/// y = x W (+ b) by BLAS: the bias is broadcast into y first and added by
/// beta = 1, so that each output is one sgemm accumulation plus the bias.
void blasLinear(const float *x, const float *w, const float *bias, float *y, int64_t rows,
                int64_t k, int64_t n, bool transposeW) {
  if (bias)
    for (int64_t r = 0; r < rows; ++r)
      std::copy(bias, bias + n, y + r * n);
  sgemm(false, transposeW, rows, n, k, x, k, w, transposeW ? k : n, bias ? 1.0f : 0.0f, y, n);
}

/// Panels of the low-precision path: rows of op(A) and columns of op(B)
/// converted to f32 at a time. They bound the scratch at
/// 4 (kPanelRows + kPanelCols) k + 4 kPanelRows kPanelCols bytes (11.5 MB
/// at k = 1024) whatever the problem's size, and are wide enough that
/// sgemm runs at its full rate on each; op(A)'s rows are converted once per
/// column panel, a conversion per 2 kPanelCols flops.
constexpr int64_t kPanelRows = 512;
constexpr int64_t kPanelCols = 1536;

/// C[m, n] = op(A) op(B) (+ bias[n]) for bf16 or f16 storage through sgemm:
/// op(A)(i, kk) = a[i * aRow + kk * aCol], op(B)(kk, j) = b[kk * bRow + j * bCol]
/// (strides, as the reference kernel takes them), C row-major with stride n.
/// Each output is one f32 sgemm accumulation (plus the bias, as blasLinear
/// adds it) rounded once to T. Operands are exact in f32, so the only
/// difference from the reference is the order and precision of the sum.
template <typename T>
void lowPrecisionGemm(const T *a, int64_t aRow, int64_t aCol, const T *b, int64_t bRow,
                      int64_t bCol, const T *bias, T *c, int64_t m, int64_t k, int64_t n) {
  const int64_t pr = std::min(m, kPanelRows), pc = std::min(n, kPanelCols);
  Scratch scratch((pr * k + k * pc + pr * pc) * int64_t(sizeof(float)), 0, 0);
  float *ap = reinterpret_cast<float *>(scratch.shared());
  float *bp = ap + pr * k, *cp = bp + k * pc;
  for (int64_t j0 = 0; j0 < n; j0 += pc) {
    const int64_t nb = std::min(pc, n - j0);
    // Panels are written in order whatever the layout read (reading a
    // transposed weight along its rows instead, and writing with a stride,
    // was 10% slower on 2048 x 768 x 2304).
    for (int64_t kk = 0; kk < k; ++kk) {
      if (bCol == 1) {
        toF32(b + kk * bRow + j0, bp + kk * nb, nb);
        continue;
      }
      for (int64_t j = 0; j < nb; ++j)
        bp[kk * nb + j] = braid::load(b, kk * bRow + (j0 + j) * bCol);
    }
    for (int64_t i0 = 0; i0 < m; i0 += pr) {
      const int64_t mb = std::min(pr, m - i0);
      for (int64_t i = 0; i < mb; ++i) {
        if (aCol == 1) {
          toF32(a + (i0 + i) * aRow, ap + i * k, k);
          continue;
        }
        for (int64_t kk = 0; kk < k; ++kk)
          ap[i * k + kk] = braid::load(a, (i0 + i) * aRow + kk * aCol);
      }
      if (bias)
        for (int64_t i = 0; i < mb; ++i)
          for (int64_t j = 0; j < nb; ++j)
            cp[i * nb + j] = braid::load(bias, j0 + j);
      sgemm(false, false, mb, nb, k, ap, k, bp, nb, bias ? 1.0f : 0.0f, cp, nb);
      for (int64_t i = 0; i < mb; ++i)
        for (int64_t j = 0; j < nb; ++j)
          braid::store(c + (i0 + i) * n + j0, j, cp[i * nb + j]);
    }
  }
}

/// Below this many multiply-adds a batch runs on the calling thread: starting
/// a thread costs tens of microseconds, a 2 MFLOP item takes about as long.
constexpr int64_t kMinThreadedMacs = int64_t(1) << 20;

} // namespace

extern "C" {

void braid_k_linear(braid_rt *, braid_dtype dt, const void *x, const void *w, const void *b,
                    void *y, int64_t rows, int64_t k, int64_t n, int32_t flags) {
  const bool transpose_w = flags & BRAID_LINEAR_TRANSPOSE_W;
  // A decode step's rows (its sequences) in f32 stream W, a few rows per pass
  // (few_rows_linear.h): the step is bound by reading W, which sgemm copies
  // into packed panels first, and each row's result does not depend on the
  // rows beside it.
  if (dt == BRAID_F32 && useBlas() && (flags & BRAID_LINEAR_ROWS_APART))
    return fewRowsLinear(in<float>(x), in<float>(w), b ? in<float>(b) : nullptr, out<float>(y),
                         rows, k, n, transpose_w);
  if (dt == BRAID_F32 && useBlas())
    return blasLinear(in<float>(x), in<float>(w), b ? in<float>(b) : nullptr, out<float>(y),
                      rows, k, n, transpose_w);
  withFloatType(dt, "linear", [&](auto tag) {
    using T = decltype(tag);
    // W(kk, j) = w[kk, j] or w[j, kk].
    const int64_t bRow = transpose_w ? 1 : n, bCol = transpose_w ? k : 1;
    if constexpr (!std::is_same_v<T, float>)
      if (useBlas())
        return lowPrecisionGemm<T>(in<T>(x), k, 1, in<T>(w), bRow, bCol,
                                   b ? in<T>(b) : nullptr, out<T>(y), rows, k, n);
    gemm<T>(in<T>(x), k, 1, in<T>(w), bRow, bCol, b ? in<T>(b) : nullptr, out<T>(y), rows, k,
            n);
  });
}

void braid_k_batch_matmul(braid_rt *, braid_dtype dt, const void *a, const void *b, void *c,
                          int64_t batch, int64_t m, int64_t k, int64_t n, int32_t transpose_a,
                          int32_t transpose_b) {
  if (dt == BRAID_F32 && useBlas()) {
    for (int64_t i = 0; i < batch; ++i)
      sgemm(transpose_a, transpose_b, m, n, k, in<float>(a) + i * m * k, transpose_a ? m : k,
            in<float>(b) + i * k * n, transpose_b ? k : n, 0.0f, out<float>(c) + i * m * n, n);
    return;
  }
  withFloatType(dt, "batch_matmul", [&](auto tag) {
    using T = decltype(tag);
    const int64_t aRow = transpose_a ? 1 : k, aCol = transpose_a ? m : 1;
    const int64_t bRow = transpose_b ? 1 : n, bCol = transpose_b ? k : 1;
    if constexpr (!std::is_same_v<T, float>)
      if (useBlas()) {
        for (int64_t i = 0; i < batch; ++i)
          lowPrecisionGemm<T>(in<T>(a) + i * m * k, aRow, aCol, in<T>(b) + i * k * n, bRow,
                              bCol, nullptr, out<T>(c) + i * m * n, m, k, n);
        return;
      }
    parallelForEachAbove(batch, batch * m * k * n, kMinThreadedMacs, [&](int64_t i) {
      gemm<T>(in<T>(a) + i * m * k, aRow, aCol, in<T>(b) + i * k * n, bRow, bCol, nullptr,
              out<T>(c) + i * m * n, m, k, n);
    });
  });
}

} // extern "C"
