//===- matmul.cpp - CPU kernels: linear, batch_matmul ---------------------===//
//
// f32 GEMMs go to BLAS (blas.h) unless BRAID_CPU_ACCUMULATE=f64; bf16 and f16
// storage, and f32 under BRAID_CPU_ACCUMULATE=f64, run the reference kernel:
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
#include "parallel.h"

#include <algorithm>

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

/// Below this many multiply-adds a batch runs on the calling thread: starting
/// a thread costs tens of microseconds, a 2 MFLOP item takes about as long.
constexpr int64_t kMinThreadedMacs = int64_t(1) << 20;

/// Runs item(i) for i in [0, batch), over the rank's threads when the batch
/// is large enough.
template <typename Item> void forEachItem(int64_t batch, int64_t macsPerItem, Item &&item) {
  parallelForAbove(batch, batch * macsPerItem, kMinThreadedMacs, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      item(i);
  });
}

} // namespace

extern "C" {

void braid_k_linear(braid_rt *, braid_dtype dt, const void *x, const void *w, const void *b,
                    void *y, int64_t rows, int64_t k, int64_t n, int32_t transpose_w) {
  if (dt == BRAID_F32 && useBlas())
    return blasLinear(in<float>(x), in<float>(w), b ? in<float>(b) : nullptr, out<float>(y),
                      rows, k, n, transpose_w);
  withFloatType(dt, "linear", [&](auto tag) {
    using T = decltype(tag);
    // W(kk, j) = w[kk, j] or w[j, kk].
    const int64_t bRow = transpose_w ? 1 : n, bCol = transpose_w ? k : 1;
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
    forEachItem(batch, m * k * n, [&](int64_t i) {
      gemm<T>(in<T>(a) + i * m * k, aRow, aCol, in<T>(b) + i * k * n, bRow, bCol, nullptr,
              out<T>(c) + i * m * n, m, k, n);
    });
  });
}

} // extern "C"
