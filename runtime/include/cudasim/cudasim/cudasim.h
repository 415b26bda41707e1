//===- cudasim.h - the CUDA subset of the Braid runtime, emulated on the CPU -===//
//
// cudasim runs the runtime's CUDA kernels and its CUDA backend on a machine
// without a GPU, so that the device path is executed (and checked against the
// CPU backend) before it ever meets a GPU. It emulates what runtime/src/cuda
// uses, not CUDA at large:
//  - kernels: every block of a launch runs on the calling stream's OS thread,
//    its threads as cooperative fibers (ucontext) that switch only at
//    __syncthreads, __syncwarp and the warp intrinsics (shuffles, __any_sync).
//    A barrier that some threads of the block (or warp) never reach is
//    reported as a deadlock instead of hanging. BRAID_CUDASIM_ORDER=reverse
//    runs threads and blocks in the opposite order, which changes the result
//    of a kernel that reads shared or global memory without the barrier it
//    needs (the test suite runs the kernels both ways);
//  - launch checks as on an H100/H200: at most 1024 threads per block, grid y
//    and z at most 65535, dynamic shared memory above 48 KiB only after
//    cudaFuncSetAttribute(MaxDynamicSharedMemorySize), never above 227 KiB;
//  - memory: device allocations are host memory of their exact size (so that
//    AddressSanitizer sees an overrun by one byte), filled with 0xff bytes
//    (NaN in every float type: reads of memory nothing wrote show); copies
//    check that their kind matches where the pointers point;
//  - streams: each created stream is a worker thread that runs its work in
//    order; events and cudaStreamWaitEvent order streams as CUDA does (a wait
//    takes the event's last record at the time of the call), so a missing
//    wait can show as a wrong result. The legacy default stream (0) runs its
//    work synchronously. cudaMemcpyAsync to pageable host memory returns once
//    the copy is done, from pageable host memory once the source is staged,
//    as the CUDA documentation says;
//  - cuBLASLt matmul (column-major layouts, transposes, strided batches, the
//    bias epilogue, alignment preferences; f32 accumulation) and
//    cub::DeviceRadixSort::SortPairs (a stable sort on the key bits).
// BRAID_CUDASIM_SYNC=1 runs every stream's work at the call (telling an
// ordering problem from a kernel's); BRAID_CUDASIM_TRACE=1 prints each launch.
// What it cannot show: timing, warp-synchronous code without __syncwarp
// (threads of a warp do not run in lockstep here), and host code reading
// device memory (both are host memory here).
//
// Sources written for nvcc are compiled as C++ after rewrite_cuda.py has
// turned `kernel<<<grid, block, smem, stream>>>(args)` into a cudasim launch
// and `extern __shared__ T name[];` into the launch's dynamic shared memory.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_CUDASIM_CUDASIM_H
#define BRAID_CUDASIM_CUDASIM_H

#include <cmath>
#include <math.h> // device code calls isnan, fminf, ... unqualified
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

//===--- Qualifiers ----------------------------------------------------------===//

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
// Shared memory is per block; blocks of one launch run one after another on
// one OS thread, and kernels on different streams on different OS threads.
#define __shared__ static thread_local
#define __CUDASIM__ 1

//===--- Vector and index types ---------------------------------------------===//

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
struct float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }

namespace cudasim {
/// The indices of the thread now running on this OS thread.
struct ThreadIndices {
  uint3 thread{0, 0, 0};
  uint3 block{0, 0, 0};
  dim3 blockSize;
  dim3 gridSize;
};
ThreadIndices &indices();
} // namespace cudasim

#define threadIdx (::cudasim::indices().thread)
#define blockIdx (::cudasim::indices().block)
#define blockDim (::cudasim::indices().blockSize)
#define gridDim (::cudasim::indices().gridSize)
constexpr int warpSize = 32;

//===--- 16-bit float storage types -----------------------------------------===//

struct __half {
  uint16_t bits;
};
struct __nv_bfloat16 {
  uint16_t bits;
};
using half = __half;

inline float cudasimBitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t cudasimFloatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __bfloat162float(__nv_bfloat16 h) { return cudasimBitsToFloat(uint32_t(h.bits) << 16); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t u = cudasimFloatToBits(f);
  if (std::isnan(f))
    return __nv_bfloat16{static_cast<uint16_t>((u >> 16) | 0x40)}; // quiet NaN
  u += 0x7fff + ((u >> 16) & 1);                                    // round to nearest even
  return __nv_bfloat16{static_cast<uint16_t>(u >> 16)};
}
float __half2float(__half h);
__half __float2half_rn(float f);

inline float __int_as_float(int i) { return cudasimBitsToFloat(static_cast<uint32_t>(i)); }
inline int __float_as_int(float f) { return static_cast<int>(cudasimFloatToBits(f)); }

//===--- Errors, streams, events, memory ------------------------------------===//

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
};
using cudaError = cudaError_t;

namespace cudasim {
struct Stream;
struct Event;
} // namespace cudasim
using cudaStream_t = cudasim::Stream *;
using cudaEvent_t = cudasim::Event *;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};

constexpr unsigned cudaStreamDefault = 0, cudaStreamNonBlocking = 1;
constexpr unsigned cudaEventDefault = 0, cudaEventBlockingSync = 1, cudaEventDisableTiming = 2;
constexpr unsigned cudaHostAllocDefault = 0, cudaHostAllocPortable = 1, cudaHostAllocMapped = 2;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  int multiProcessorCount;
  int major, minor;
  int clockRate;
  int memoryClockRate;
  int memoryBusWidth;
  int warpSize;
  int maxThreadsPerBlock;
};

const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest);
cudaError_t cudaMemGetInfo(size_t *freeBytes, size_t *totalBytes);

cudaError_t cudaMalloc(void **ptr, size_t bytes);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMallocAsync(void **ptr, size_t bytes, cudaStream_t stream);
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream);
cudaError_t cudaHostAlloc(void **ptr, size_t bytes, unsigned flags);
cudaError_t cudaMallocHost(void **ptr, size_t bytes);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaHostGetDevicePointer(void **device, void *host, unsigned flags);
template <typename T> cudaError_t cudaMalloc(T **ptr, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void **>(ptr), bytes);
}
template <typename T> cudaError_t cudaMallocAsync(T **ptr, size_t bytes, cudaStream_t stream) {
  return cudaMallocAsync(reinterpret_cast<void **>(ptr), bytes, stream);
}
template <typename T> cudaError_t cudaHostAlloc(T **ptr, size_t bytes, unsigned flags) {
  return cudaHostAlloc(reinterpret_cast<void **>(ptr), bytes, flags);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void *dst, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

namespace cudasim {
cudaError_t setMaxDynamicSharedMemory(const void *kernel, int bytes);
/// Runs `work` on `stream` in order (synchronously for the default stream).
void enqueue(cudaStream_t stream, std::function<void()> work);
/// Fails with a message (and aborts) naming `what` when `ptr` is not inside a
/// device allocation of at least `bytes` bytes from it.
bool isDevicePointer(const void *ptr, size_t bytes);
} // namespace cudasim

template <typename F>
cudaError_t cudaFuncSetAttribute(F *kernel, cudaFuncAttribute attribute, int value) {
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize)
    return cudaErrorInvalidValue;
  return cudasim::setMaxDynamicSharedMemory(reinterpret_cast<const void *>(kernel), value);
}

//===--- Kernel launch -------------------------------------------------------===//

namespace cudasim {

/// Checks the configuration and queues the kernel body on `stream`; the
/// body runs once per thread of every block.
void launchKernel(const char *name, const void *kernel, dim3 grid, dim3 block, size_t smemBytes,
                  cudaStream_t stream, std::function<void()> body);

/// `kernel<<<grid, block, smem, stream>>>(args...)` is rewritten to
/// `::cudasim::Launch("kernel", grid, block, smem, stream)(kernel, args...)`:
/// the arguments are evaluated and copied at the launch, as CUDA does.
struct Launch {
  const char *name;
  dim3 grid, block;
  size_t smemBytes;
  cudaStream_t stream;
  Launch(const char *name, dim3 grid, dim3 block, size_t smemBytes = 0,
         cudaStream_t stream = nullptr)
      : name(name), grid(grid), block(block), smemBytes(smemBytes), stream(stream) {}

  template <typename... P, typename... A> void operator()(void (*kernel)(P...), A &&...args) {
    static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong argument count");
    // Convert to the parameter types now: what the kernel sees is fixed here.
    std::tuple<std::decay_t<P>...> params(static_cast<std::decay_t<P>>(args)...);
    launchKernel(name, reinterpret_cast<const void *>(kernel), grid, block, smemBytes, stream,
                 [kernel, params]() { std::apply(kernel, params); });
  }
};

/// The launch's dynamic shared memory (`extern __shared__ T name[]`).
void *dynamicSharedMemory();
template <typename T> T *dynamicShared() { return static_cast<T *>(dynamicSharedMemory()); }

//===--- Fiber switches (barriers and warp exchange) -------------------------===//

void syncThreads();
void syncWarp();
/// Lane `src` of this warp's `value` (every lane of the warp calls it).
uint64_t exchange(uint64_t value, int srcLaneOf(int lane, void *), void *arg);
int laneId();
/// The warp's predicates as a bit mask (lanes that have returned count 0).
unsigned ballot(bool predicate);

template <typename T> uint64_t toBits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}
template <typename T> T fromBits(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}
} // namespace cudasim

inline void __syncthreads() { cudasim::syncThreads(); }
inline void __syncwarp(unsigned = 0xffffffffu) { cudasim::syncWarp(); }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}

namespace cudasim {
/// Each lane gets `value` of lane srcLane(lane) of its warp (every lane of
/// the warp calls it): the shuffles below.
template <typename T, typename SrcLane> T shuffle(T value, SrcLane srcLane) {
  auto call = +[](int lane, void *f) { return (*static_cast<SrcLane *>(f))(lane); };
  return fromBits<T>(exchange(toBits(value), call, &srcLane));
}
} // namespace cudasim

// Beyond a lane's segment of `width`, CUDA returns the lane's own value.
template <typename T> T __shfl_xor_sync(unsigned, T value, int laneMask, int width = 32) {
  return cudasim::shuffle(value, [=](int lane) {
    int s = lane ^ laneMask;
    return (s / width == lane / width) ? s : lane;
  });
}
template <typename T> T __shfl_sync(unsigned, T value, int srcLane, int width = 32) {
  return cudasim::shuffle(value,
                          [=](int lane) { return (lane / width) * width + (srcLane % width); });
}
template <typename T> T __shfl_down_sync(unsigned, T value, unsigned delta, int width = 32) {
  return cudasim::shuffle(value, [=](int lane) {
    int s = lane + static_cast<int>(delta);
    return (s / width == lane / width) ? s : lane;
  });
}
int __any_sync(unsigned mask, int predicate);
int __all_sync(unsigned mask, int predicate);
unsigned __ballot_sync(unsigned mask, int predicate);

//===--- min / max of device code ----------------------------------------------===//

template <typename A, typename B> constexpr std::common_type_t<A, B> min(A a, B b) {
  return b < a ? b : a;
}
template <typename A, typename B> constexpr std::common_type_t<A, B> max(A a, B b) {
  return a < b ? b : a;
}

//===--- Atomics (kernels on two streams can run at once) --------------------===//

namespace cudasim {
template <typename T> struct Same {
  using type = T;
};
} // namespace cudasim

template <typename T> T atomicAdd(T *address, typename cudasim::Same<T>::type value) {
  if constexpr (std::is_integral_v<T>) {
    return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
  } else {
    T old, desired;
    __atomic_load(address, &old, __ATOMIC_RELAXED);
    do {
      desired = static_cast<T>(old + value);
    } while (!__atomic_compare_exchange(address, &old, &desired, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
    return old;
  }
}
template <typename T>
T atomicCAS(T *address, typename cudasim::Same<T>::type compare,
            typename cudasim::Same<T>::type value) {
  __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  return compare; // the old value, whether or not it was swapped
}
template <typename T> T atomicMax(T *address, typename cudasim::Same<T>::type value) {
  T old = __atomic_load_n(address, __ATOMIC_RELAXED);
  while (old < value && !__atomic_compare_exchange_n(address, &old, value, false,
                                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
template <typename T> T atomicExch(T *address, typename cudasim::Same<T>::type value) {
  return __atomic_exchange_n(address, value, __ATOMIC_SEQ_CST);
}

//===--- Device math the kernels call that libm lacks ------------------------===//

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }

#endif // BRAID_CUDASIM_CUDASIM_H
