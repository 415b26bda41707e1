//===- loss.cu - mean softmax cross-entropy -------------------------------===//
//
// Pass 1: one block per row computes logsumexp(logits[r]) - logits[r, label]
// (blockRowLse of row_lse.cuh, shared with cross_entropy_grad) into a
// per-row f32 scratch buffer. Pass 2: one block sums the rows in a fixed
// order (f64) and writes the mean to the 0-d f32 loss. Deterministic: no
// atomics. A label outside [0, vocab) sets the device error record.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"
#include "cuda/row_lse.cuh"

namespace braid::cuda {
namespace {

template <typename T>
__global__ void __launch_bounds__(kThreads)
    rowLossKernel(const T *__restrict__ logits, const void *__restrict__ labels, int index64,
                  float *__restrict__ rowLoss, int64_t vocab, DeviceError *error) {
  __shared__ float sm[32], ss[32];
  const int64_t r = blockIdx.x;
  const T *row = logits + r * vocab;
  float M, S;
  blockRowLse(row, vocab, sm, ss, M, S);
  if (threadIdx.x == 0) {
    long long label = loadIndex(labels, index64, r);
    float loss = 0.0f;
    if (label < 0 || label >= vocab)
      reportIndexError(error, kLabelOutOfRange, label, vocab, r);
    else
      loss = M + logf(S) - toF(row[label]);
    rowLoss[r] = loss;
  }
}

__global__ void __launch_bounds__(kThreads)
    meanKernel(const float *__restrict__ rowLoss, float *__restrict__ loss, int64_t rows) {
  __shared__ double partial[kThreads];
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
    sum += rowLoss[i];
  sum = blockSumF64(sum, partial);
  if (threadIdx.x == 0)
    *loss = static_cast<float>(sum / static_cast<double>(rows));
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_cross_entropy(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                                      const void *logits, const void *labels, float *loss,
                                      int64_t rows, int64_t vocab) {
  using namespace braid::cuda;
  BRAID_CHECK_INDEX_DTYPE(index_dt);
  checkLossShape("cross_entropy", rows, vocab);
  cudaStream_t stream = streamOf(rt);
  float *rowLoss = static_cast<float *>(scratch(stream, rows * static_cast<int64_t>(sizeof(float))));
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchRows("cross_entropy", rows, stream, rowLossKernel<T>, logits, labels,
                                  index_dt == BRAID_I64, rowLoss, vocab, deviceErrorRecord()));
  launch("cross_entropy", 1, kThreads, stream, meanKernel, rowLoss, loss, rows);
}
