//===- spmd.cu - local pieces of partitioned ops --------------------------===//
//
// Semantics: the "SPMD kernels" section of braid/runtime.h.
//
// embedding_shard: one thread per output element; tokens outside the shard
// belong to another rank and give 0 (no error: no rank knows the others'
// ranges, so an out-of-vocabulary token is not detectable here).
//
// embedding_grad_shard: in grad_embedding.cu, as embedding_grad with an
// offset.
//
// Vocabulary-parallel cross-entropy: max and stats take one block per row
// (fixed-order block reductions); the loss sums rows in one block in f64, as
// loss.cu; the gradient is one thread per element. A label outside
// [0, valid) sets the device error record on every rank (each knows `valid`).
//
// bias_add, slice, unslice: one thread per output element (place: per element
// of the piece it places). slice / unslice
// move elements by size (any dtype, tokens included) and write the padding as
// all-zero bits.
//
//===----------------------------------------------------------------------===//

#include "cuda/grad_common.cuh"

namespace braid::cuda {
namespace {

/// How many of the `local` indices from global index `first` on lie below
/// `valid` (the rest are padding).
__host__ __device__ inline int64_t realCount(int64_t local, int64_t first, int64_t valid) {
  const int64_t n = valid - first;
  return n < 0 ? 0 : n > local ? local : n;
}

template <typename T>
__global__ void embeddingShardKernel(const void *__restrict__ tokens, int index64,
                                     const T *__restrict__ table, T *__restrict__ out,
                                     int64_t numTokens, int64_t vocabLocal, int64_t hidden,
                                     int64_t offset) {
  const int64_t total = numTokens * hidden;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t t = i / hidden, c = i - t * hidden;
    long long local = loadIndex(tokens, index64, t) - offset;
    out[i] = local >= 0 && local < vocabLocal ? table[local * hidden + c] : fromF<T>(0.0f);
  }
}

template <typename T>
__global__ void biasAddKernel(const T *__restrict__ x, const T *__restrict__ bias,
                              T *__restrict__ y, int64_t n, int64_t nBias) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fromF<T>(toF(x[i]) + toF(bias[i % nBias]));
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    ceShardMaxKernel(const T *__restrict__ logits, float *__restrict__ rowMax,
                     int64_t vocabLocal, int64_t real) {
  __shared__ float shared[32];
  const T *row = logits + static_cast<int64_t>(blockIdx.x) * vocabLocal;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < real; c += blockDim.x)
    m = fmaxf(m, toF(row[c]));
  m = blockMax(m, shared);
  if (threadIdx.x == 0)
    rowMax[blockIdx.x] = m;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    ceShardStatsKernel(const T *__restrict__ logits, const void *__restrict__ labels,
                       int index64, const float *__restrict__ rowMax, float *__restrict__ stats,
                       int64_t vocabLocal, int64_t offset, int64_t valid, int64_t real,
                       DeviceError *error) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const T *row = logits + r * vocabLocal;
  const float M = rowMax[r];
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < real; c += blockDim.x)
    s += expf(toF(row[c]) - M);
  s = blockSum(s, shared);
  if (threadIdx.x == 0) {
    long long label = loadIndex(labels, index64, r);
    if (label < 0 || label >= valid)
      reportIndexError(error, kLabelOutOfRange, label, valid, r);
    long long local = label - offset;
    stats[2 * r] = s;
    stats[2 * r + 1] = label < valid && local >= 0 && local < vocabLocal ? toF(row[local]) : 0.0f;
  }
}

__global__ void __launch_bounds__(kThreads)
    ceShardLossKernel(const float *__restrict__ rowMax, const float *__restrict__ stats,
                      float *__restrict__ loss, int64_t rows, int64_t denominator) {
  __shared__ double partial[kThreads];
  double sum = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    sum += static_cast<double>(rowMax[r]) + log(static_cast<double>(stats[2 * r])) -
           static_cast<double>(stats[2 * r + 1]);
  sum = blockSumF64(sum, partial);
  if (threadIdx.x == 0)
    *loss = static_cast<float>(sum / static_cast<double>(denominator));
}

template <typename T>
__global__ void ceShardGradKernel(const T *__restrict__ logits, const void *__restrict__ labels,
                                  int index64, const float *__restrict__ rowMax,
                                  const float *__restrict__ stats, const float *__restrict__ dloss,
                                  T *__restrict__ dlogits, int64_t rows, int64_t vocabLocal,
                                  int64_t offset, int64_t valid, int64_t real,
                                  int64_t denominator, DeviceError *error) {
  const int64_t total = rows * vocabLocal;
  const float g = *dloss / static_cast<float>(denominator);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i / vocabLocal, c = i - r * vocabLocal;
    long long label = loadIndex(labels, index64, r);
    if (c == 0 && (label < 0 || label >= valid))
      reportIndexError(error, kLabelOutOfRange, label, valid, r);
    float d = 0.0f;
    if (c < real) {
      float p = expf(toF(logits[i]) - rowMax[r]) / stats[2 * r];
      d = g * (p - (offset + c == label ? 1.0f : 0.0f));
    }
    dlogits[i] = fromF<T>(d);
  }
}

template <typename E>
__global__ void sliceKernel(const E *__restrict__ x, E *__restrict__ y, int64_t outer,
                            int64_t dim, int64_t dimLocal, int64_t inner, int64_t start) {
  const int64_t block = dimLocal * inner, total = outer * block;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = i / block, rem = i - o * block, d = rem / inner, j = rem - d * inner;
    y[i] = start + d < dim ? x[(o * dim + start + d) * inner + j] : E(0);
  }
}

template <typename E>
__global__ void unsliceKernel(const E *__restrict__ x, E *__restrict__ y, int64_t outer,
                              int64_t dim, int64_t dimLocal, int64_t inner, int64_t start) {
  const int64_t block = dim * inner, total = outer * block;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = i / block, rem = i - o * block, d = rem / inner, j = rem - d * inner;
    int64_t local = d - start;
    y[i] = local >= 0 && local < dimLocal ? x[(o * dimLocal + local) * inner + j] : E(0);
  }
}

template <typename E>
__global__ void placeKernel(const E *__restrict__ x, E *__restrict__ y, int64_t outer,
                            int64_t dim, int64_t dimLocal, int64_t inner, int64_t start) {
  const int64_t block = dimLocal * inner, total = outer * block;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = i / block, rem = i - o * block;
    y[(o * dim + start) * inner + rem] = x[i];
  }
}

void checkShard(const char *kernel, int64_t vocabLocal, int64_t offset) {
  if (vocabLocal < 0 || offset < 0)
    BRAID_CUDA_FATAL("%s: shard [%lld, %lld + %lld) is not a range of global indices", kernel,
                     static_cast<long long>(offset), static_cast<long long>(offset),
                     static_cast<long long>(vocabLocal));
}

void checkDenominator(const char *kernel, int64_t denominator) {
  if (denominator <= 0)
    BRAID_CUDA_FATAL("%s: denominator %lld must be positive", kernel,
                     static_cast<long long>(denominator));
}

enum class Move { Slice, Unslice, Place };

/// slice, unslice and place: checks the extents, then moves the elements of
/// y's (slice, unslice) or x's (place) whole extent with the kernel of `move`.
template <Move move>
void moveRows(const char *kernel, braid_rt *rt, braid_dtype dt, const void *x, void *y,
              int64_t outer, int64_t dim, int64_t dimLocal, int64_t inner, int64_t start) {
  if (outer < 0 || dim < 0 || dimLocal < 0 || inner < 0 || start < 0)
    BRAID_CUDA_FATAL("%s: negative extent (outer %lld, dim %lld, dim_local %lld, inner %lld, "
                     "start %lld)",
                     kernel, static_cast<long long>(outer), static_cast<long long>(dim),
                     static_cast<long long>(dimLocal), static_cast<long long>(inner),
                     static_cast<long long>(start));
  if (move == Move::Place && start + dimLocal > dim)
    BRAID_CUDA_FATAL("%s: rows [%lld, %lld) are not in the %lld rows of the result", kernel,
                     static_cast<long long>(start), static_cast<long long>(start + dimLocal),
                     static_cast<long long>(dim));
  const int64_t total = outer * (move == Move::Unslice ? dim : dimLocal) * inner;
  if (total == 0)
    return;
  BRAID_DISPATCH_BITS_IN(kernel, dt, E, {
    auto *kernelOfE = move == Move::Slice     ? sliceKernel<E>
                      : move == Move::Unslice ? unsliceKernel<E>
                                              : placeKernel<E>;
    launchElements(kernel, total, streamOf(rt), kernelOfE, x, y, outer, dim, dimLocal, inner,
                   start);
  });
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_embedding_shard(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                             const void *tokens, const void *table, void *out,
                             int64_t num_tokens, int64_t vocab_local, int64_t hidden,
                             int64_t offset) {
  using namespace braid::cuda;
  BRAID_CHECK_INDEX_DTYPE(index_dt);
  checkShard("embedding_shard", vocab_local, offset);
  if (num_tokens <= 0 || hidden <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("embedding_shard", num_tokens * hidden, streamOf(rt),
                                      embeddingShardKernel<T>, tokens, index_dt == BRAID_I64,
                                      table, out, num_tokens, vocab_local, hidden, offset));
}

void braid_k_bias_add(braid_rt *rt, braid_dtype dt, const void *x, const void *bias, void *y,
                      int64_t n, int64_t n_bias) {
  using namespace braid::cuda;
  if (n <= 0)
    return;
  if (n_bias <= 0 || n % n_bias != 0)
    BRAID_CUDA_FATAL("bias_add: %lld elements are not a whole number of bias vectors of %lld",
                     static_cast<long long>(n), static_cast<long long>(n_bias));
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("bias_add", n, streamOf(rt), biasAddKernel<T>, x, bias, y, n,
                                      n_bias));
}

void braid_k_ce_shard_max(braid_rt *rt, braid_dtype dt, const void *logits, float *row_max,
                          int64_t rows, int64_t vocab_local, int64_t offset, int64_t valid) {
  using namespace braid::cuda;
  checkShard("ce_shard_max", vocab_local, offset);
  checkRows("ce_shard_max", rows);
  if (rows <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchRows("ce_shard_max", rows, streamOf(rt), ceShardMaxKernel<T>, logits,
                                  row_max, vocab_local, realCount(vocab_local, offset, valid)));
}

void braid_k_ce_shard_stats(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                            const void *logits, const void *labels, const float *row_max,
                            float *stats, int64_t rows, int64_t vocab_local, int64_t offset,
                            int64_t valid) {
  using namespace braid::cuda;
  BRAID_CHECK_INDEX_DTYPE(index_dt);
  checkShard("ce_shard_stats", vocab_local, offset);
  checkRows("ce_shard_stats", rows);
  if (rows <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchRows("ce_shard_stats", rows, streamOf(rt), ceShardStatsKernel<T>,
                                  logits, labels, index_dt == BRAID_I64, row_max, stats,
                                  vocab_local, offset, valid,
                                  realCount(vocab_local, offset, valid), deviceErrorRecord()));
}

void braid_k_ce_shard_loss(braid_rt *rt, const float *row_max, const float *stats, float *loss,
                           int64_t rows, int64_t denominator) {
  using namespace braid::cuda;
  checkDenominator("ce_shard_loss", denominator);
  launch("ce_shard_loss", 1, kThreads, streamOf(rt), ceShardLossKernel, row_max, stats, loss,
         rows < 0 ? 0 : rows, denominator);
}

void braid_k_ce_shard_grad(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                           const void *logits, const void *labels, const float *row_max,
                           const float *stats, const float *dloss, void *dlogits, int64_t rows,
                           int64_t vocab_local, int64_t offset, int64_t valid,
                           int64_t denominator) {
  using namespace braid::cuda;
  BRAID_CHECK_INDEX_DTYPE(index_dt);
  checkShard("ce_shard_grad", vocab_local, offset);
  checkDenominator("ce_shard_grad", denominator);
  if (rows <= 0 || vocab_local <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("ce_shard_grad", rows * vocab_local, streamOf(rt),
                                      ceShardGradKernel<T>, logits, labels, index_dt == BRAID_I64,
                                      row_max, stats, dloss, dlogits, rows, vocab_local, offset,
                                      valid, realCount(vocab_local, offset, valid), denominator,
                                      deviceErrorRecord()));
}

void braid_k_slice(braid_rt *rt, braid_dtype dt, const void *x, void *y, int64_t outer,
                   int64_t dim, int64_t dim_local, int64_t inner, int64_t start) {
  using namespace braid::cuda;
  moveRows<Move::Slice>("slice", rt, dt, x, y, outer, dim, dim_local, inner, start);
}

void braid_k_unslice(braid_rt *rt, braid_dtype dt, const void *x, void *y, int64_t outer,
                     int64_t dim, int64_t dim_local, int64_t inner, int64_t start) {
  using namespace braid::cuda;
  moveRows<Move::Unslice>("unslice", rt, dt, x, y, outer, dim, dim_local, inner, start);
}

void braid_k_place(braid_rt *rt, braid_dtype dt, const void *x, void *y, int64_t outer,
                   int64_t dim, int64_t dim_local, int64_t inner, int64_t start) {
  using namespace braid::cuda;
  moveRows<Move::Place>("place", rt, dt, x, y, outer, dim, dim_local, inner, start);
}

} // extern "C"
