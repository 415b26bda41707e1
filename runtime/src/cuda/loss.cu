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

constexpr int kThreads = 256;

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
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if ((int)threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *loss = static_cast<float>(partial[0] / static_cast<double>(rows));
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_cross_entropy(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                                      const void *logits, const void *labels, float *loss,
                                      int64_t rows, int64_t vocab) {
  using namespace braid::cuda;
  BRAID_CHECK_INDEX_DTYPE(index_dt);
  if (rows <= 0 || vocab <= 0)
    BRAID_CUDA_FATAL("cross_entropy: needs rows and vocab > 0, got %lld and %lld",
                     static_cast<long long>(rows), static_cast<long long>(vocab));
  if (rows > 0x7fffffffLL)
    BRAID_CUDA_FATAL("cross_entropy: %lld rows exceed the grid", static_cast<long long>(rows));
  cudaStream_t stream = streamOf(rt);
  float *rowLoss = static_cast<float *>(scratch(stream, rows * static_cast<int64_t>(sizeof(float))));
  DeviceError *error = deviceErrorRecord();
  BRAID_DISPATCH_FLOAT(dt, T, {
    rowLossKernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<const T *>(logits), labels, index_dt == BRAID_I64, rowLoss, vocab, error);
    BRAID_CUDA_CHECK_LAUNCH();
  });
  meanKernel<<<1, kThreads, 0, stream>>>(rowLoss, loss, rows);
  BRAID_CUDA_CHECK_LAUNCH();
}
