//===- mamba_step.cu - the Mamba state of inference -----------------------===//
//
// braid_k_conv_step and braid_k_scan_step (runtime_inference.h): a Mamba
// layer's convolution and selective scan over each sequence's new rows from
// the states its previous calls left, updated in place. One thread per
// (b, c) channel for the convolution, one per (b, d) for the scan (the
// state in registers as mamba_chunk.cu's scanChunkKernel): a thread reads
// its channel's state before writing it, so in place needs no barrier. The
// arithmetic is mamba_chunk.cu's (conv: bias first, then fmaf per tap;
// scan: expf, fmaf for the output), so a decode step computes what the
// whole-sequence kernels compute at that row. A last row outside [0, seq)
// is recorded in the device error record and leaves that state unchanged.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

#include <cstdlib>
#include <cstring>

namespace braid::cuda {
namespace {

constexpr int kStepThreads = 128;

__device__ __forceinline__ float stepSoftplus(float x) {
  return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}

/// The sequence's last real row, or -1 after recording a bad one.
__device__ __forceinline__ int64_t lastRowOf(const int32_t *lastRows, int64_t b, int64_t seq,
                                             bool report, DeviceError *error) {
  const int64_t last = lastRows ? lastRows[b] : seq - 1;
  if (last >= 0 && last < seq)
    return last;
  if (report)
    reportIndexError(error, kMambaStepLastRow, last, seq, b);
  return -1;
}

template <typename T>
__global__ void convStepKernel(T *state, const T *__restrict__ x, const T *__restrict__ w,
                               const T *__restrict__ bias, const int32_t *__restrict__ positions,
                               const int32_t *__restrict__ lastRows, T *__restrict__ y,
                               int64_t batch, int64_t seq, int64_t channels, int64_t kernel,
                               int forget, DeviceError *error) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < batch * channels;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = i / channels, c = i - b * channels;
    T *st = state + b * (kernel - 1) * channels;
    const bool fresh = forget || positions[b] == 0;
    // Row u of xe = concat(the state or zeros, x[b]).
    auto xe = [&](int64_t u) -> T {
      if (u < kernel - 1)
        return fresh ? fromF<T>(0.0f) : st[u * channels + c];
      return x[(b * seq + u - (kernel - 1)) * channels + c];
    };
    for (int64_t t = 0; t < seq; ++t) {
      float acc = bias ? toF(bias[c]) : 0.0f;
      for (int64_t j = 0; j < kernel; ++j)
        acc = fmaf(toF(w[c * kernel + j]), toF(xe(t + j)), acc);
      y[(b * seq + t) * channels + c] = fromF<T>(acc);
    }
    const int64_t last = lastRowOf(lastRows, b, seq, c == 0, error);
    if (last < 0)
      continue;
    // Ascending: element i reads row last + 1 + i > i, not yet rewritten.
    for (int64_t r = 0; r < kernel - 1; ++r)
      st[r * channels + c] = xe(last + 1 + r);
  }
}

template <typename T, int MAXN>
__global__ void __launch_bounds__(kStepThreads)
    scanStepKernel(float *state, const T *__restrict__ x, const T *__restrict__ delta,
                   const T *__restrict__ A, const T *__restrict__ Bm, const T *__restrict__ Cm,
                   const T *__restrict__ D, const int32_t *__restrict__ positions,
                   const int32_t *__restrict__ lastRows, T *__restrict__ y, int64_t seq,
                   int64_t channels, int nstate, int softplus, int forget, DeviceError *error) {
  const int64_t d = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t b = blockIdx.y;
  if (d >= channels)
    return;
  float *st = state + (b * channels + d) * nstate;
  const bool fresh = forget || positions[b] == 0;
  const int64_t last = lastRowOf(lastRows, b, seq, d == 0, error);
  float a[MAXN], h[MAXN];
#pragma unroll(MAXN <= 64 ? MAXN : 1)
  for (int n = 0; n < MAXN; ++n) {
    a[n] = n < nstate ? toF(A[d * nstate + n]) : 0.0f;
    h[n] = n < nstate && !fresh ? st[n] : 0.0f;
  }
  const float skip = toF(D[d]);
  for (int64_t t = 0; t < seq; ++t) {
    const int64_t xi = (b * seq + t) * channels + d;
    const float xv = toF(x[xi]);
    float dt = toF(delta[xi]);
    if (softplus)
      dt = stepSoftplus(dt);
    const T *bRow = Bm + (b * seq + t) * nstate;
    const T *cRow = Cm + (b * seq + t) * nstate;
    const float dtx = dt * xv;
    float out = 0.0f;
#pragma unroll(MAXN <= 64 ? MAXN : 1)
    for (int n = 0; n < MAXN; ++n) {
      if (n < nstate) {
        h[n] = expf(dt * a[n]) * h[n] + dtx * toF(bRow[n]);
        out = fmaf(toF(cRow[n]), h[n], out);
      }
    }
    y[xi] = fromF<T>(out + skip * xv);
    if (t == last)
#pragma unroll(MAXN <= 64 ? MAXN : 1)
      for (int n = 0; n < MAXN; ++n)
        if (n < nstate)
          st[n] = h[n];
  }
}

template <typename T, int MAXN>
void launchScanStep(cudaStream_t stream, float *state, const void *x, const void *delta,
                    const void *A, const void *Bm, const void *Cm, const void *D,
                    const int32_t *positions, const int32_t *lastRows, void *y,
                    const braid_scan_params &p, int forget) {
  dim3 grid(static_cast<unsigned>((p.channels + kStepThreads - 1) / kStepThreads),
            static_cast<unsigned>(p.batch));
  launch("scan_step", grid, kStepThreads, stream, scanStepKernel<T, MAXN>, state, x, delta, A,
         Bm, Cm, D, positions, lastRows, y, p.seq, p.channels, static_cast<int>(p.state),
         p.delta_softplus ? 1 : 0, forget, deviceErrorRecord());
}

/// BRAID_TEST_FORGET_MAMBA_STATE names the states a test drops ("conv",
/// "ssm" or "both"): their kernels start every sequence fresh.
int forgets(const char *which) {
  const char *hook = std::getenv("BRAID_TEST_FORGET_MAMBA_STATE");
  return hook && (!std::strcmp(hook, which) || !std::strcmp(hook, "both")) ? 1 : 0;
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_conv_step(braid_rt *rt, braid_dtype dt, void *conv_state, const void *x,
                                  const void *w, const void *bias, const int32_t *positions,
                                  const int32_t *last_rows, void *y, int64_t batch, int64_t seq,
                                  int64_t channels, int64_t kernel) {
  using namespace braid::cuda;
  if (kernel < 1)
    BRAID_CUDA_FATAL("conv_step: kernel size %lld below 1", static_cast<long long>(kernel));
  if (seq <= 0)
    return;
  const int forget = forgets("conv");
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("conv_step", batch * channels, streamOf(rt),
                                      convStepKernel<T>, conv_state, x, w, bias, positions,
                                      last_rows, y, batch, seq, channels, kernel, forget,
                                      deviceErrorRecord()));
}

extern "C" void braid_k_scan_step(braid_rt *rt, braid_dtype dt, float *ssm_state, const void *x,
                                  const void *delta, const void *A, const void *Bm,
                                  const void *Cm, const void *D, const int32_t *positions,
                                  const int32_t *last_rows, void *y,
                                  const braid_scan_params *p) {
  using namespace braid::cuda;
  if (p->state <= 0 || p->state > 256)
    BRAID_CUDA_FATAL("scan_step: state size %lld outside [1, 256]",
                     static_cast<long long>(p->state));
  if (p->batch > 65535)
    BRAID_CUDA_FATAL("scan_step: batch %lld exceeds the grid", static_cast<long long>(p->batch));
  if (p->batch <= 0 || p->channels <= 0 || p->seq <= 0)
    return;
  const int forget = forgets("ssm");
  cudaStream_t stream = streamOf(rt);
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (p->state <= 16)
      launchScanStep<T, 16>(stream, ssm_state, x, delta, A, Bm, Cm, D, positions, last_rows, y,
                            *p, forget);
    else if (p->state <= 64)
      launchScanStep<T, 64>(stream, ssm_state, x, delta, A, Bm, Cm, D, positions, last_rows, y,
                            *p, forget);
    else
      launchScanStep<T, 256>(stream, ssm_state, x, delta, A, Bm, Cm, D, positions, last_rows, y,
                             *p, forget);
  });
}
