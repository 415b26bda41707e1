//===- grad_embedding.cu - embedding / position backward, cross_entropy ----===//
//
// embedding_grad and embedding_grad_shard (rows [offset, offset + rows) of
// the table: one implementation, offset 0 for the whole table),
// deterministic (no float atomics, no [rows, hidden] f32 buffer): the local
// ids (token - offset) are sorted with their positions as values by CUB's
// stable radix sort (key bits limited to ceil(log2(rows + 1))), the start of
// every row's segment is found by binary search, then one thread per (row,
// column) sums dy rows of its segment in ascending token order and writes
// dtable (rows of unused ids get 0). Everything lives in one runtime scratch
// block: 4 x num_tokens i32 + (rows + 1) i32 + CUB's temp storage. Tokens
// outside the rows are skipped (key `rows`, sorting after every row): for
// the whole table they also set the device error record; for a shard they
// belong to another rank. Limit: num_tokens, rows < 2^31.
//
// position_grad: one thread per (position, column); dpos[s] sums dy[t] over
// t = s, s + seq, ... in order (rows s >= seq get 0). Deterministic.
//
// cross_entropy_grad: one block per row (blockRowLse of row_lse.cuh, as loss.cu),
// then dlogits[r, i] = dloss / rows * (softmax(logits[r])_i - [i == label]).
// An out-of-range label sets the error record (the row gets the softmax term).
//
//===----------------------------------------------------------------------===//

#include "cuda/grad_common.cuh"
#include "cuda/row_lse.cuh"

#include <cub/device/device_radix_sort.cuh>

namespace braid::cuda {
namespace {

using grad::kThreads;

// error == nullptr: a shard's gradient, whose other tokens are not errors.
__global__ void tokenKeysKernel(const void *__restrict__ tokens, int index64,
                                int32_t *__restrict__ keys, int32_t *__restrict__ values,
                                int64_t numTokens, int64_t rows, int64_t offset,
                                DeviceError *error) {
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < numTokens;
       t += (int64_t)gridDim.x * blockDim.x) {
    long long token = loadIndex(tokens, index64, t) - offset;
    if (token < 0 || token >= rows) {
      if (error)
        reportIndexError(error, kTokenOutOfRange, token, rows, t);
      token = rows; // sorts after every valid id; no segment reads it
    }
    keys[t] = static_cast<int32_t>(token);
    values[t] = static_cast<int32_t>(t);
  }
}

// starts[v] = first i with sortedKeys[i] >= v, for v in [0, vocab].
__global__ void segmentStartsKernel(const int32_t *__restrict__ sortedKeys,
                                    int32_t *__restrict__ starts, int64_t numTokens,
                                    int64_t vocab) {
  for (int64_t v = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; v <= vocab;
       v += (int64_t)gridDim.x * blockDim.x) {
    int64_t lo = 0, hi = numTokens;
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (sortedKeys[mid] < v)
        lo = mid + 1;
      else
        hi = mid;
    }
    starts[v] = static_cast<int32_t>(lo);
  }
}

template <typename T>
__global__ void embeddingGradKernel(const int32_t *__restrict__ starts,
                                    const int32_t *__restrict__ order, const T *__restrict__ dy,
                                    T *__restrict__ dtable, int64_t vocab, int64_t hidden) {
  const int64_t total = vocab * hidden;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t v = i / hidden, c = i - v * hidden;
    float acc = 0.0f;
    for (int32_t k = starts[v], end = starts[v + 1]; k < end; ++k)
      acc += toF(dy[static_cast<int64_t>(order[k]) * hidden + c]);
    dtable[i] = fromF<T>(acc);
  }
}

template <typename T>
__global__ void positionGradKernel(const T *__restrict__ dy, T *__restrict__ dpos,
                                   int64_t numTokens, int64_t seq, int64_t positions,
                                   int64_t hidden) {
  const int64_t total = positions * hidden;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t s = i / hidden, c = i - s * hidden;
    float acc = 0.0f;
    if (s < seq)
      for (int64_t t = s; t < numTokens; t += seq)
        acc += toF(dy[t * hidden + c]);
    dpos[i] = fromF<T>(acc);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    crossEntropyGradKernel(const T *__restrict__ logits, const void *__restrict__ labels,
                           int index64, const float *__restrict__ dloss,
                           T *__restrict__ dlogits, int64_t rows, int64_t vocab,
                           DeviceError *error) {
  __shared__ float sm[32], ss[32], result[2];
  const int64_t r = blockIdx.x;
  const T *row = logits + r * vocab;
  float rowM, rowS;
  blockRowLse(row, vocab, sm, ss, rowM, rowS);
  if (threadIdx.x == 0) {
    result[0] = rowM;
    result[1] = 1.0f / rowS;
  }
  __syncthreads();
  const float M = result[0], invS = result[1];
  const float g = *dloss / static_cast<float>(rows);
  long long label = loadIndex(labels, index64, r);
  if (threadIdx.x == 0 && (label < 0 || label >= vocab))
    reportIndexError(error, kLabelOutOfRange, label, vocab, r);
  T *out = dlogits + r * vocab;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    float p = expf(toF(row[i]) - M) * invS;
    out[i] = fromF<T>(g * (p - (i == label ? 1.0f : 0.0f)));
  }
}

} // namespace
} // namespace braid::cuda

extern "C" {

/// dtable [vocab, hidden] = the table rows [offset, offset + vocab)'s
/// gradient; `reportOutside`: tokens outside them are errors.
static void embeddingGradRows(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                              const void *tokens, const void *dy, void *dtable,
                              int64_t num_tokens, int64_t vocab, int64_t hidden, int64_t offset,
                              bool reportOutside, const char *what) {
  using namespace braid::cuda;
  BRAID_CHECK_INDEX_DTYPE(index_dt);
  if (vocab <= 0 || hidden <= 0)
    return;
  if (num_tokens >= 0x7fffffffLL || vocab >= 0x7fffffffLL)
    BRAID_CUDA_FATAL("%s: %lld tokens / vocab %lld exceed the i32 sort", what,
                     static_cast<long long>(num_tokens), static_cast<long long>(vocab));
  cudaStream_t stream = streamOf(rt);
  if (num_tokens <= 0) {
    BRAID_CUDA_CHECK(cudaMemsetAsync(dtable, 0, vocab * hidden * braid_dtype_size(dt), stream));
    return;
  }
  const int n = static_cast<int>(num_tokens);
  int endBit = 1;
  while (endBit < 31 && (1LL << endBit) <= vocab) // keys lie in [0, vocab]
    ++endBit;
  size_t tempBytes = 0;
  BRAID_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, tempBytes,
                                                   static_cast<const int32_t *>(nullptr),
                                                   static_cast<int32_t *>(nullptr),
                                                   static_cast<const int32_t *>(nullptr),
                                                   static_cast<int32_t *>(nullptr), n, 0, endBit,
                                                   stream));
  const int64_t arrBytes = grad::alignUp(num_tokens * static_cast<int64_t>(sizeof(int32_t)));
  const int64_t startsBytes = grad::alignUp((vocab + 1) * static_cast<int64_t>(sizeof(int32_t)));
  char *base = static_cast<char *>(
      scratch(stream, 4 * arrBytes + startsBytes + static_cast<int64_t>(tempBytes)));
  auto *keysIn = reinterpret_cast<int32_t *>(base);
  auto *valsIn = reinterpret_cast<int32_t *>(base + arrBytes);
  auto *keysOut = reinterpret_cast<int32_t *>(base + 2 * arrBytes);
  auto *valsOut = reinterpret_cast<int32_t *>(base + 3 * arrBytes);
  auto *starts = reinterpret_cast<int32_t *>(base + 4 * arrBytes);
  void *temp = base + 4 * arrBytes + startsBytes;

  launchElements(what, num_tokens, stream, tokenKeysKernel, tokens, index_dt == BRAID_I64, keysIn,
                 valsIn, num_tokens, vocab, offset, reportOutside ? deviceErrorRecord() : nullptr);
  BRAID_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, tempBytes,
                                                   static_cast<const int32_t *>(keysIn), keysOut,
                                                   static_cast<const int32_t *>(valsIn), valsOut,
                                                   n, 0, endBit, stream));
  launchElements(what, vocab + 1, stream, segmentStartsKernel, keysOut, starts, num_tokens, vocab);
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements(what, vocab * hidden, stream, embeddingGradKernel<T>, starts,
                                      valsOut, dy, dtable, vocab, hidden));
}

void braid_k_embedding_grad(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                            const void *tokens, const void *dy, void *dtable, int64_t num_tokens,
                            int64_t vocab, int64_t hidden) {
  embeddingGradRows(rt, dt, index_dt, tokens, dy, dtable, num_tokens, vocab, hidden, 0, true,
                    "embedding_grad");
}

void braid_k_embedding_grad_shard(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                                  const void *tokens, const void *dy, void *dtable,
                                  int64_t num_tokens, int64_t vocab_local, int64_t hidden,
                                  int64_t offset) {
  if (vocab_local < 0 || offset < 0)
    BRAID_CUDA_FATAL("embedding_grad_shard: shard [%lld, %lld + %lld) is not a range of global "
                     "indices",
                     static_cast<long long>(offset), static_cast<long long>(offset),
                     static_cast<long long>(vocab_local));
  embeddingGradRows(rt, dt, index_dt, tokens, dy, dtable, num_tokens, vocab_local, hidden,
                    offset, false, "embedding_grad_shard");
}

void braid_k_position_grad(braid_rt *rt, braid_dtype dt, const void *dy, void *dpos,
                           int64_t num_tokens, int64_t seq, int64_t positions, int64_t hidden) {
  using namespace braid::cuda;
  if (positions <= 0 || hidden <= 0)
    return;
  if (seq <= 0)
    BRAID_CUDA_FATAL("position_grad: seq %lld must be positive", static_cast<long long>(seq));
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("position_grad", positions * hidden, streamOf(rt),
                                      positionGradKernel<T>, dy, dpos, num_tokens, seq, positions,
                                      hidden));
}

void braid_k_cross_entropy_grad(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                                const void *logits, const void *labels, const float *dloss,
                                void *dlogits, int64_t rows, int64_t vocab) {
  using namespace braid::cuda;
  BRAID_CHECK_INDEX_DTYPE(index_dt);
  checkLossShape("cross_entropy_grad", rows, vocab);
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchRows("cross_entropy_grad", rows, streamOf(rt),
                                  crossEntropyGradKernel<T>, logits, labels, index_dt == BRAID_I64,
                                  dloss, dlogits, rows, vocab, deviceErrorRecord()));
}

} // extern "C"
