//===- codegen.h - what generated code uses for fused kernels ---*- C++ -*-===//
//
// The compiler's emitter writes fused elementwise kernels against exactly this
// interface:
//
//   namespace { struct fused_0 {
//     const float *in0; const braid::bf16 *in1; float *out0;
//     BRAID_HD void operator()(int64_t i) const {
//       braid::store(out0, i, braid::silu(braid::load(in0, i)) * braid::load(in1, i));
//     } }; }
//   ... braid::launch_elementwise(rt, n, fused_0{x, y, z});
//
// - BRAID_HD: `__host__ __device__` under nvcc, empty otherwise.
// - braid::bf16 / braid::f16: storage types; braid::load / braid::store
//   convert to and from f32 (round-to-nearest-even on store).
// - braid::silu, gelu, gelu_tanh, sigmoid, relu, exp, softplus, neg: the
//   formulas of the CPU kernels (braid/numeric.h), so fused and unfused code
//   agree bit for bit on the CPU.
// - braid::params(braid_attention_params{.batch = 2, ...}): the address of a
//   kernel's params struct built in the call; the temporary lives until the
//   end of the call's full expression.
// - braid::launch_elementwise(rt, n, f): calls f(i) for every i in [0, n).
//   Host compiler: a plain loop. nvcc: a __global__ kernel of 256-thread
//   blocks on the runtime's compute stream (braid_rt_compute_stream, which the
//   runtime core defines). The same generated text compiles either way.
//   With BRAID_CUDASIM defined (a host compiler building for the CUDA backend
//   on the CPU emulation, runtime/cudasim), the nvcc path, launched through
//   cudasim: on the CUDA backend a plain loop would run on the host, out of
//   the compute stream's order.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_CODEGEN_H
#define BRAID_CODEGEN_H

#include "braid/numeric.h"
#include "braid/runtime.h"

#if defined(__CUDACC__) || defined(BRAID_CUDASIM)
#define BRAID_CODEGEN_DEVICE 1
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#endif

/* The stream kernels are issued on (a cudaStream_t), or NULL on the CPU
 * backend and for a NULL context. Defined by the runtime core. */
extern "C" void *braid_rt_compute_stream(braid_rt *rt);

namespace braid {

/// The address of `value`, a params struct written in the call that reads it:
/// braid_k_attention(rt, ..., braid::params(braid_attention_params{...})).
template <typename T> const T *params(const T &value) { return &value; }

#ifdef BRAID_CODEGEN_DEVICE

namespace detail {
template <typename F>
__global__ void __launch_bounds__(256) elementwise_kernel(int64_t n, F f) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    f(i);
}
} // namespace detail

template <typename F>
void launch_elementwise(braid_rt *rt, int64_t n, const F &f) {
  if (n <= 0)
    return;
  const int64_t threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65535LL * 32) // grid-stride beyond this: plenty of blocks to fill a GPU
    blocks = 65535LL * 32;
  cudaStream_t stream = static_cast<cudaStream_t>(braid_rt_compute_stream(rt));
#ifdef BRAID_CUDASIM
  ::cudasim::Launch("braid::detail::elementwise_kernel", dim3(unsigned(blocks)),
                    dim3(unsigned(threads)), 0, stream)(detail::elementwise_kernel<F>, n, f);
#else
  detail::elementwise_kernel<F><<<unsigned(blocks), unsigned(threads), 0, stream>>>(n, f);
#endif
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    fprintf(stderr, "braid: launching a fused elementwise kernel (n = %lld) failed: %s\n",
            (long long)n, cudaGetErrorString(err));
    abort();
  }
}

#else

// Not inlined: a step launches the same few functors hundreds of times (a
// rolled loop over micro-batches still holds an accumulation per
// parameter), and a vectorized, unrolled copy of the loop at every launch
// made the host compiler's time grow with them (a GPT-3 stage: 7.5 s at
// -O2, most of it unrolling inlined copies). One instantiation per functor
// runs as fast.
template <typename F>
__attribute__((noinline)) void launch_elementwise(braid_rt *rt, int64_t n, const F &f) {
  (void)rt;
  for (int64_t i = 0; i < n; ++i)
    f(i);
}

#endif

} // namespace braid

#endif // BRAID_CODEGEN_H
