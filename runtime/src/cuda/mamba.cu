//===- mamba.cu - causal depthwise conv1d and the selective scan ----------===//
//
// conv1d: one thread per output element, f32 accumulation
//   y[b,t,c] = bias[c] + sum_{j<K} w[c,j] x[b, t-(K-1)+j, c]   (x at t < 0 is 0).
//
// selective_scan: one thread per (b, d) walks t = 0..S-1 sequentially with the
// N-element state h[b, d, :] in a per-thread array (registers / local memory),
// so the state never touches global memory. Threads of a block share b, so
// B[b, t, :] and C[b, t, :] reads are broadcasts; x / delta / y accesses are
// coalesced over d. Supported state sizes: N <= 256 (instantiations for
// N <= 16, 64, 256; up to 64 the state is fully unrolled into registers,
// the 256 variant keeps it in local memory and is slower; Mamba uses 16). All arithmetic in f32.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

namespace braid::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kScanThreads = 128;

template <typename T>
__global__ void conv1dKernel(const T *__restrict__ x, const T *__restrict__ w,
                             const T *__restrict__ bias, T *__restrict__ y, int64_t seq,
                             int64_t channels, int64_t kernel, int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = i % channels;
    int64_t bt = i / channels;
    int64_t t = bt % seq, b = bt / seq;
    float acc = bias ? toF(bias[c]) : 0.0f;
    for (int64_t j = 0; j < kernel; ++j) {
      int64_t src = t - (kernel - 1) + j;
      if (src >= 0)
        acc = fmaf(toF(w[c * kernel + j]), toF(x[(b * seq + src) * channels + c]), acc);
    }
    y[i] = fromF<T>(acc);
  }
}

__device__ __forceinline__ float softplusF(float x) {
  // log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), without overflow.
  return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}

template <typename T, int MAXN>
__global__ void __launch_bounds__(kScanThreads)
    selectiveScanKernel(const T *__restrict__ x, const T *__restrict__ delta,
                        const T *__restrict__ A, const T *__restrict__ Bm,
                        const T *__restrict__ Cm, const T *__restrict__ D, T *__restrict__ y,
                        int64_t seq, int64_t channels, int state, int softplus) {
  const int64_t d = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t b = blockIdx.y;
  if (d >= channels)
    return;
  float a[MAXN], h[MAXN];
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n) {
    a[n] = n < state ? toF(A[d * state + n]) : 0.0f;
    h[n] = 0.0f;
  }
  const float skip = toF(D[d]);
  for (int64_t t = 0; t < seq; ++t) {
    const int64_t xi = (b * seq + t) * channels + d;
    const float xv = toF(x[xi]);
    float dt = toF(delta[xi]);
    if (softplus)
      dt = softplusF(dt);
    const T *bRow = Bm + (b * seq + t) * state;
    const T *cRow = Cm + (b * seq + t) * state;
    const float dtx = dt * xv;
    float out = 0.0f;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
    for (int n = 0; n < MAXN; ++n) {
      if (n < state) {
        h[n] = expf(dt * a[n]) * h[n] + dtx * toF(bRow[n]);
        out = fmaf(toF(cRow[n]), h[n], out);
      }
    }
    y[xi] = fromF<T>(out + skip * xv);
  }
}

template <typename T, int MAXN>
void launchScan(cudaStream_t stream, const void *x, const void *delta, const void *A,
                const void *Bm, const void *Cm, const void *D, void *y, int64_t batch,
                int64_t seq, int64_t channels, int64_t state, int softplus) {
  dim3 grid(static_cast<unsigned>((channels + kScanThreads - 1) / kScanThreads),
            static_cast<unsigned>(batch));
  selectiveScanKernel<T, MAXN><<<grid, kScanThreads, 0, stream>>>(
      static_cast<const T *>(x), static_cast<const T *>(delta), static_cast<const T *>(A),
      static_cast<const T *>(Bm), static_cast<const T *>(Cm), static_cast<const T *>(D),
      static_cast<T *>(y), seq, channels, static_cast<int>(state), softplus);
  BRAID_CUDA_CHECK_LAUNCH();
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_conv1d(braid_rt *rt, braid_dtype dt, const void *x, const void *w, const void *b,
                    void *y, int64_t batch, int64_t seq, int64_t channels, int64_t kernel) {
  using namespace braid::cuda;
  int64_t total = batch * seq * channels;
  if (total <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  BRAID_DISPATCH_FLOAT(dt, T, {
    conv1dKernel<T><<<gridFor(total, kThreads), kThreads, 0, stream>>>(
        static_cast<const T *>(x), static_cast<const T *>(w), static_cast<const T *>(b),
        static_cast<T *>(y), seq, channels, kernel, total);
    BRAID_CUDA_CHECK_LAUNCH();
  });
}

void braid_k_selective_scan(braid_rt *rt, braid_dtype dt, const void *x, const void *delta,
                            const void *A, const void *Bm, const void *Cm, const void *D, void *y,
                            int64_t batch, int64_t seq, int64_t channels, int64_t state,
                            int32_t delta_softplus) {
  using namespace braid::cuda;
  if (batch <= 0 || seq <= 0 || channels <= 0)
    return;
  if (state <= 0 || state > 256)
    BRAID_CUDA_FATAL("selective_scan: state size %lld outside [1, 256]",
                     static_cast<long long>(state));
  if (batch > 65535)
    BRAID_CUDA_FATAL("selective_scan: batch %lld exceeds the grid", static_cast<long long>(batch));
  cudaStream_t stream = streamOf(rt);
  int sp = delta_softplus ? 1 : 0;
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (state <= 16)
      launchScan<T, 16>(stream, x, delta, A, Bm, Cm, D, y, batch, seq, channels, state, sp);
    else if (state <= 64)
      launchScan<T, 64>(stream, x, delta, A, Bm, Cm, D, y, batch, seq, channels, state, sp);
    else
      launchScan<T, 256>(stream, x, delta, A, Bm, Cm, D, y, batch, seq, channels, state, sp);
  });
}

} // extern "C"
