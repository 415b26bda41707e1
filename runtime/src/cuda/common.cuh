//===- common.cuh - shared helpers of the Braid CUDA kernels ----*- CUDA -*-===//
//
// Storage types (f32, bf16, f16: arithmetic always in f32), dtype dispatch,
// activations, warp/block reductions, the kernel stream, the launches every
// kernel goes through (launch, launchElements, launchRows: the configuration,
// the arguments' casts and the launch check written once), and two resources
// the runtime owns outside the planned arena (see cuda_backend.cu):
//  - a device error record that kernels set when an index operand is out of
//    range (tokens, labels, expert indices); the backend checks it after every
//    synchronize and aborts with a message naming the kernel and the value;
//  - a scratch buffer (grown on demand, stream-ordered on the compute stream)
//    for kernels that need per-row intermediates: cross_entropy's per-row
//    losses and the MoE slot assignment of dispatch/combine.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_COMMON_CUH
#define BRAID_RUNTIME_CUDA_COMMON_CUH

#include "braid/runtime.h"
#include "backend.h"
#include "cuda/check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace braid::cuda {

//===--- Stream ------------------------------------------------------------===//

/// The compute stream of `rt` (the default stream for a null context, which
/// only standalone kernel tests pass).
inline cudaStream_t streamOf(braid_rt *rt) {
  braid::rt::Backend *backend = braid::rt::backendOf(rt);
  return backend ? static_cast<cudaStream_t>(backend->computeStream()) : nullptr;
}

//===--- Device error record, scratch (cuda_backend.cu) ---------------------===//

enum DeviceErrorCode : int {
  kNoError = 0,
  kTokenOutOfRange = 1,  // embedding
  kLabelOutOfRange = 2,  // cross_entropy
  kExpertOutOfRange = 3, // dispatch / combine
  // The KV cache and generation kernels (cache.cu); `where` is the sequence.
  kCacheWritePosition = 4,
  kCacheAttentionPosition = 5,
  kTakeRowsIndex = 6,
  kAddPositionsRow = 7,
  kMambaStepLastRow = 8, // conv_step / scan_step (mamba_step.cu)
  // braid.sample (sample.cu); `where` is the row.
  kSampleTopK = 9,     // a top_k past the program's top_k_cap
  kSampleUndrawn = 10, // a row the program's mode does not draw
  // conv_step / scan_step's state slot (mamba_step.cu); `where` is the
  // sequence. Shared: `bound` holds the lower sequence with the same slot.
  kMambaStepSlot = 11,
  kMambaStepSlotShared = 12,
  // The paged KV cache (paged_cache.cu); `where` is the sequence.
  kPagedWritePage = 20,
  kPagedWritePosition = 21,
  kPagedAttentionPage = 22,
  kPagedAttentionPosition = 23,
  kPagedLastRow = 24,
};

struct DeviceError {
  int code;       // first error wins (atomicCAS from kNoError)
  int pad;
  long long value; // the offending index
  long long bound; // its exclusive upper bound
  long long where; // flat element position of the index operand
};

/// Device pointer of the process's error record (host-mapped pinned memory).
DeviceError *deviceErrorRecord();
/// Aborts with a message if a kernel set the error record; call after a sync.
void checkDeviceError();
/// At least `bytes` of device scratch, valid for work issued on `stream`
/// until the next scratch() call.
void *scratch(cudaStream_t stream, int64_t bytes);

__device__ inline void reportIndexError(DeviceError *record, int code, long long value,
                                        long long bound, long long where) {
  if (atomicCAS(&record->code, kNoError, code) == kNoError) {
    record->value = value;
    record->bound = bound;
    record->where = where;
    __threadfence_system();
  }
}

//===--- Storage types -----------------------------------------------------===//

__device__ __forceinline__ float toF(float x) { return x; }
__device__ __forceinline__ float toF(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float toF(__half x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T fromF(float x);
template <> __device__ __forceinline__ float fromF<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 fromF<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __half fromF<__half>(float x) { return __float2half_rn(x); }

__device__ __forceinline__ long long loadIndex(const void *p, int is64, long long i) {
  return is64 ? static_cast<const long long *>(p)[i]
              : static_cast<long long>(static_cast<const int32_t *>(p)[i]);
}

//===--- Activations (braid_act) -------------------------------------------===//

__device__ __forceinline__ float sigmoidF(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float applyAct(int act, float x) {
  switch (act) {
  case BRAID_ACT_SILU:
    return x / (1.0f + expf(-x));
  case BRAID_ACT_GELU:
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  case BRAID_ACT_GELU_TANH:
    return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  case BRAID_ACT_SIGMOID:
    return sigmoidF(x);
  case BRAID_ACT_RELU:
    return x > 0.0f ? x : 0.0f;
  case BRAID_ACT_EXP:
    return expf(x);
  case BRAID_ACT_NEG:
    return -x;
  default:
    return __int_as_float(0x7fc00000); // NaN: unknown activation (checked on the host)
  }
}

/// Stops with a message on an activation outside braid_act.
inline void checkAct(const char *kernel, braid_act act) {
  if (static_cast<int>(act) < BRAID_ACT_SILU || static_cast<int>(act) > BRAID_ACT_NEG)
    BRAID_CUDA_FATAL("%s: unknown activation %d", kernel, static_cast<int>(act));
}

//===--- Reductions --------------------------------------------------------===//

/// Threads per block of the one-dimensional kernels (grid-stride loops over
/// elements, one block per row).
constexpr int kThreads = 256;

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// `op` over the 32 lanes of the warp (butterfly order); every lane gets it.
template <typename Op> __device__ __forceinline__ float warpReduce(float v, Op op) {
  for (int o = 16; o > 0; o >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warpSum(float v) { return warpReduce(v, SumOp()); }
__device__ __forceinline__ float warpMax(float v) { return warpReduce(v, MaxOp()); }

/// `op` over the block (blockDim.x a multiple of 32, <= 1024), `identity` its
/// neutral value; every thread gets the result. `shared` holds 32 floats.
/// Deterministic order.
template <typename Op>
__device__ inline float blockReduce(float v, float *shared, float identity, Op op) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warpReduce(v, op);
  __syncthreads();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : identity;
  return warpReduce(v, op);
}
__device__ inline float blockSum(float v, float *shared) {
  return blockReduce(v, shared, 0.0f, SumOp());
}
__device__ inline float blockMax(float v, float *shared) {
  return blockReduce(v, shared, -INFINITY, MaxOp());
}

/// Sum over a block of kThreads threads in f64, in a fixed tree order; the
/// result is valid in thread 0. `partial` holds kThreads doubles.
__device__ inline double blockSumF64(double v, double *partial) {
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if ((int)threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  return partial[0];
}

//===--- Launches ----------------------------------------------------------===//

/// Stops with a message when a one-block-per-row kernel has more rows than
/// a grid's x dimension holds (2^31 - 1 blocks).
inline void checkRows(const char *kernel, int64_t rows) {
  if (rows > 0x7fffffffLL)
    BRAID_CUDA_FATAL("%s: %lld rows exceed the grid", kernel, static_cast<long long>(rows));
}

inline unsigned gridFor(int64_t n, int threads, int64_t maxBlocks = 65536 * 8) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1)
    blocks = 1;
  return static_cast<unsigned>(blocks < maxBlocks ? blocks : maxBlocks);
}

/// Launches kernel(args...) in `grid` blocks of `threads` with `smemBytes` of
/// dynamic shared memory on `stream`, and checks the launch. Each argument is
/// converted with static_cast to its parameter's type, so untyped buffers
/// (`const void *`) pass as the kernel's `const T *`. `name` labels the
/// launch in cudasim's traces and reports.
template <typename... P, typename... A>
void launchWithShared(const char *name, dim3 grid, int threads, size_t smemBytes,
                      cudaStream_t stream, void (*kernel)(P...), const A &...args) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong argument count");
  (void)name;
  // cudasim-label: name
  kernel<<<grid, threads, smemBytes, stream>>>(static_cast<P>(args)...);
  BRAID_CUDA_CHECK_LAUNCH();
}

/// The same without dynamic shared memory.
template <typename... P, typename... A>
void launch(const char *name, dim3 grid, int threads, cudaStream_t stream, void (*kernel)(P...),
            const A &...args) {
  launchWithShared(name, grid, threads, 0, stream, kernel, args...);
}

/// out[i] = 0 for i < n, in the storage type.
template <typename T>
__global__ void zeroKernel(T *__restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    out[i] = fromF<T>(0.0f);
}

/// One thread per element of [0, n) for a grid-stride kernel; none for n <= 0.
template <typename... P, typename... A>
void launchElements(const char *name, int64_t n, cudaStream_t stream, void (*kernel)(P...),
                    const A &...args) {
  if (n > 0)
    launch(name, gridFor(n, kThreads), kThreads, stream, kernel, args...);
}

/// One block per row; none for rows <= 0.
template <typename... P, typename... A>
void launchRows(const char *name, int64_t rows, cudaStream_t stream, void (*kernel)(P...),
                const A &...args) {
  checkRows(name, rows);
  if (rows > 0)
    launch(name, static_cast<unsigned>(rows), kThreads, stream, kernel, args...);
}

} // namespace braid::cuda

/// One case of the dispatch macros below: runs the statement with `T` = `Type`.
#define BRAID_DISPATCH_CASE(label, T, Type, ...)                                                 \
  case label: {                                                                                  \
    using T = Type;                                                                              \
    __VA_ARGS__;                                                                                 \
    break;                                                                                       \
  }

/// Runs the statement with `T` bound to the storage type of float dtype `dt`;
/// stops with a message naming `kernel` on any other dtype.
#define BRAID_DISPATCH_FLOAT_IN(kernel, dt, T, ...)                                              \
  do {                                                                                           \
    switch (dt) {                                                                                \
      BRAID_DISPATCH_CASE(BRAID_F32, T, float, __VA_ARGS__)                                      \
      BRAID_DISPATCH_CASE(BRAID_BF16, T, __nv_bfloat16, __VA_ARGS__)                             \
      BRAID_DISPATCH_CASE(BRAID_F16, T, __half, __VA_ARGS__)                                     \
    default:                                                                                     \
      BRAID_CUDA_FATAL("%s: unsupported float dtype %d", kernel, static_cast<int>(dt));          \
    }                                                                                            \
  } while (0)
/// The same in an entry point, which the message names.
#define BRAID_DISPATCH_FLOAT(dt, T, ...) BRAID_DISPATCH_FLOAT_IN(__func__, dt, T, __VA_ARGS__)

/// Runs the statement with `E` an unsigned integer of the element size of
/// `dt` (kernels that move elements without looking at them).
#define BRAID_DISPATCH_BITS_IN(kernel, dt, E, ...)                                               \
  do {                                                                                           \
    switch (braid_dtype_size(dt)) {                                                              \
      BRAID_DISPATCH_CASE(1, E, uint8_t, __VA_ARGS__)                                            \
      BRAID_DISPATCH_CASE(2, E, uint16_t, __VA_ARGS__)                                           \
      BRAID_DISPATCH_CASE(4, E, uint32_t, __VA_ARGS__)                                           \
      BRAID_DISPATCH_CASE(8, E, uint64_t, __VA_ARGS__)                                           \
    default:                                                                                     \
      BRAID_CUDA_FATAL("%s: unknown dtype %d", kernel, static_cast<int>(dt));                    \
    }                                                                                            \
  } while (0)

#define BRAID_CHECK_INDEX_DTYPE(dt)                                                              \
  do {                                                                                           \
    if ((dt) != BRAID_I32 && (dt) != BRAID_I64)                                                  \
      BRAID_CUDA_FATAL("%s: index dtype %d is not i32/i64", __func__, static_cast<int>(dt));     \
  } while (0)

#endif // BRAID_RUNTIME_CUDA_COMMON_CUH
