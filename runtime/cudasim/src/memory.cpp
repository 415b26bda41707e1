//===- memory.cpp - cudasim: device and pinned memory, copies ---------------===//
//
// Device memory is host memory registered in a table, so that copies can
// check their kind, stream-ordered frees can free when the stream reaches
// them, and cudaMemGetInfo counts what is allocated against an H200's memory.
//
//===----------------------------------------------------------------------===//

#include "cudasim/cudasim.h"
#include "internal.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace cudasim {
namespace {

//===--- Allocations ---------------------------------------------------------===//

enum class Space { Device, PinnedHost };
struct Allocation {
  size_t bytes;
  Space space;
};
struct Allocations {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> byBase;
  size_t deviceBytes = 0;
};
Allocations &allocations() {
  static Allocations *a = new Allocations; // outlives static destructors
  return *a;
}

/// The allocation that holds [p, p + bytes), if any.
const Allocation *find(Allocations &a, const void *p, size_t bytes, uintptr_t *base = nullptr) {
  auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = a.byBase.upper_bound(addr);
  if (it == a.byBase.begin())
    return nullptr;
  --it;
  if (addr + bytes > it->first + std::max<size_t>(it->second.bytes, 1))
    return nullptr;
  if (base)
    *base = it->first;
  return &it->second;
}

void *allocate(size_t bytes, Space space) {
  if (bytes == 0)
    return nullptr;
  void *p = nullptr;
  if (posix_memalign(&p, 256, bytes) != 0)
    return nullptr;
  // A GPU's fresh memory holds whatever was there: 0xff bytes (NaN in f32,
  // bf16 and f16) make a read of memory that nothing wrote show.
  if (space == Space::Device)
    std::memset(p, 0xff, bytes);
  Allocations &a = allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  a.byBase[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, space};
  if (space == Space::Device)
    a.deviceBytes += bytes;
  return p;
}

cudaError_t release(void *p, Space space) {
  if (!p)
    return cudaSuccess;
  Allocations &a = allocations();
  {
    std::lock_guard<std::mutex> lock(a.mutex);
    auto it = a.byBase.find(reinterpret_cast<uintptr_t>(p));
    if (it == a.byBase.end() || it->second.space != space) {
      std::fprintf(stderr, "cudasim: %s of %p, which is not the base of a %s allocation\n",
                   space == Space::Device ? "cudaFree" : "cudaFreeHost", p,
                   space == Space::Device ? "device" : "pinned host");
      return cudaErrorInvalidValue;
    }
    if (space == Space::Device)
      a.deviceBytes -= it->second.bytes;
    a.byBase.erase(it);
  }
  std::free(p);
  return cudaSuccess;
}

bool onDevice(const void *p, size_t bytes) {
  Allocations &a = allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  const Allocation *found = find(a, p, bytes);
  return found && found->space == Space::Device;
}

/// Whether a copy of `bytes` between `dst` and `src` is of the kind it says;
/// prints why not.
bool copyMatchesKind(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                     const char *call) {
  if (bytes == 0 || kind == cudaMemcpyDefault)
    return true;
  bool dstDevice = onDevice(dst, bytes), srcDevice = onDevice(src, bytes);
  bool wantDst = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool wantSrc = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (dstDevice == wantDst && srcDevice == wantSrc)
    return true;
  static const char *kinds[] = {"HostToHost", "HostToDevice", "DeviceToHost", "DeviceToDevice"};
  std::fprintf(stderr,
               "cudasim: %s(%p <- %p, %zu bytes, cudaMemcpy%s): the destination is %s and the "
               "source %s\n",
               call, dst, src, bytes, kinds[kind], dstDevice ? "in a device allocation" : "not",
               srcDevice ? "in a device allocation" : "not");
  return false;
}

} // namespace

bool isDevicePointer(const void *ptr, size_t bytes) { return onDevice(ptr, bytes); }

} // namespace cudasim

cudaError_t cudaMemGetInfo(size_t *freeBytes, size_t *totalBytes) {
  cudasim::Allocations &a = cudasim::allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  *totalBytes = cudasim::kDeviceMemoryBytes;
  *freeBytes = a.deviceBytes < *totalBytes ? *totalBytes - a.deviceBytes : 0;
  return cudaSuccess;
}

//===--- Memory ----------------------------------------------------------------===//

cudaError_t cudaMalloc(void **ptr, size_t bytes) {
  *ptr = cudasim::allocate(bytes, cudasim::Space::Device);
  return *ptr || bytes == 0 ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *ptr) {
  cudaDeviceSynchronize(); // cudaFree synchronizes the device
  return cudasim::release(ptr, cudasim::Space::Device);
}
cudaError_t cudaMallocAsync(void **ptr, size_t bytes, cudaStream_t stream) {
  if (!cudasim::knownStream(stream))
    return cudaErrorInvalidResourceHandle;
  return cudaMalloc(ptr, bytes);
}
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream) {
  if (!cudasim::knownStream(stream))
    return cudaErrorInvalidResourceHandle;
  if (ptr && !cudasim::onDevice(ptr, 1))
    return cudaErrorInvalidValue;
  cudasim::enqueue(stream, [ptr] { cudasim::release(ptr, cudasim::Space::Device); });
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **ptr, size_t bytes, unsigned) {
  *ptr = cudasim::allocate(bytes, cudasim::Space::PinnedHost);
  return *ptr || bytes == 0 ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaMallocHost(void **ptr, size_t bytes) { return cudaHostAlloc(ptr, bytes, 0); }
cudaError_t cudaFreeHost(void *ptr) { return cudasim::release(ptr, cudasim::Space::PinnedHost); }
cudaError_t cudaHostGetDevicePointer(void **device, void *host, unsigned) {
  cudasim::Allocations &a = cudasim::allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  const cudasim::Allocation *found = cudasim::find(a, host, 1);
  if (!found || found->space != cudasim::Space::PinnedHost)
    return cudaErrorInvalidValue;
  *device = host; // mapped pinned memory: one address on both sides here
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
  if (!cudasim::copyMatchesKind(dst, src, bytes, kind, "cudaMemcpy"))
    return cudaErrorInvalidValue;
  if (bytes)
    std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (!cudasim::knownStream(stream))
    return cudaErrorInvalidResourceHandle;
  if (!cudasim::copyMatchesKind(dst, src, bytes, kind, "cudaMemcpyAsync"))
    return cudaErrorInvalidValue;
  if (bytes == 0)
    return cudaSuccess;
  cudasim::Allocations &a = cudasim::allocations();
  bool dstPageable, srcPageable;
  {
    std::lock_guard<std::mutex> lock(a.mutex);
    dstPageable = !cudasim::find(a, dst, bytes);
    srcPageable = !cudasim::find(a, src, bytes);
  }
  if (dstPageable) {
    // To pageable host memory the call returns once the copy is done.
    cudasim::enqueue(stream, [=] { std::memmove(dst, src, bytes); });
    return cudaStreamSynchronize(stream);
  }
  if (srcPageable) {
    // From pageable host memory the source is staged before the call returns.
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char *>(src),
                                                      static_cast<const char *>(src) + bytes);
    cudasim::enqueue(stream, [=] { std::memcpy(dst, staged->data(), bytes); });
    return cudaSuccess;
  }
  cudasim::enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemset(void *dst, int value, size_t bytes) {
  if (bytes && !cudasim::onDevice(dst, bytes)) {
    std::fprintf(stderr, "cudasim: cudaMemset of %zu bytes at %p, outside device memory\n", bytes,
                 dst);
    return cudaErrorInvalidValue;
  }
  if (bytes)
    std::memset(dst, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream) {
  if (!cudasim::knownStream(stream))
    return cudaErrorInvalidResourceHandle;
  if (bytes && !cudasim::onDevice(dst, bytes)) {
    std::fprintf(stderr, "cudasim: cudaMemsetAsync of %zu bytes at %p, outside device memory\n",
                 bytes, dst);
    return cudaErrorInvalidValue;
  }
  cudasim::enqueue(stream, [=] {
    if (bytes)
      std::memset(dst, value, bytes);
  });
  return cudaSuccess;
}
