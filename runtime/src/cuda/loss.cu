//===- loss.cu - mean softmax cross-entropy -------------------------------===//
//
// Pass 1: one block per row computes logsumexp(logits[r]) - logits[r, label]
// with an online (max, sum) pair per thread, merged across the block, into a
// per-row f32 scratch buffer. Pass 2: one block sums the rows in a fixed
// order (f64) and writes the mean to the 0-d f32 loss. Deterministic: no
// atomics. A label outside [0, vocab) sets the device error record.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

namespace braid::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void mergeLse(float &m, float &s, float m2, float s2) {
  if (m2 == -INFINITY)
    return;
  if (m == -INFINITY) {
    m = m2;
    s = s2;
    return;
  }
  float mn = fmaxf(m, m2);
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    rowLossKernel(const T *__restrict__ logits, const void *__restrict__ labels, int index64,
                  float *__restrict__ rowLoss, int64_t vocab, DeviceError *error) {
  __shared__ float sm[32], ss[32];
  const int64_t r = blockIdx.x;
  const T *row = logits + r * vocab;
  float m = -INFINITY, s = 0.0f;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    float x = toF(row[i]);
    if (x > m) {
      s = (m == -INFINITY ? 0.0f : s * expf(m - x)) + 1.0f;
      m = x;
    } else {
      s += expf(x - m);
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    mergeLse(m, s, m2, s2);
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sm[warp] = m;
    ss[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float M = sm[0], S = ss[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w)
      mergeLse(M, S, sm[w], ss[w]);
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
