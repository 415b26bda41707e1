//===- runtime_api.cpp - cudasim: memory, streams, events, errors ----------===//
//
// The CUDA runtime API calls of the Braid runtime. Device memory is host
// memory registered in a table, so that copies can check their kind and
// stream-ordered frees can free when the stream reaches them. A created
// stream is a worker thread draining a queue; events carry a record count so
// that cudaStreamWaitEvent waits for the record that was last issued when it
// was called, as CUDA specifies.
//
//===----------------------------------------------------------------------===//

#include "cudasim/cudasim.h"
#include "internal.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace cudasim {

void fail(const char *format, ...) {
  std::fflush(stdout);
  std::fprintf(stderr, "cudasim: ");
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

namespace {
thread_local cudaError_t lastError = cudaSuccess;

/// An H200's memory, which cudaMemGetInfo reports (less what is allocated).
constexpr size_t kDeviceMemoryBytes = size_t(141) << 30;

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

//===--- Streams --------------------------------------------------------------===//

std::mutex streamsMutex;
std::set<Stream *> &streams() {
  static auto *s = new std::set<Stream *>;
  return *s;
}

} // namespace

/// A created stream: a worker thread that runs the stream's work in order.
struct Stream {
  std::mutex mutex;
  std::condition_variable wake, idle;
  std::deque<std::function<void()>> queue;
  bool busy = false, stopping = false;
  std::thread worker;

  Stream() : worker([this] { run(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    worker.join();
  }
  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return;
      std::function<void()> work = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      work();
      lock.lock();
      busy = false;
      if (queue.empty())
        idle.notify_all();
    }
  }
  void push(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(work));
    }
    wake.notify_one();
  }
  void synchronize() {
    std::unique_lock<std::mutex> lock(mutex);
    idle.wait(lock, [&] { return queue.empty() && !busy; });
  }
};

struct Event {
  std::mutex mutex;
  std::condition_variable done;
  uint64_t issued = 0, completed = 0; // records issued, and run by their stream
  std::chrono::steady_clock::time_point time;
  unsigned flags = 0;

  void waitFor(uint64_t record) {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return completed >= record; });
  }
};

namespace {
bool known(Stream *s) {
  if (!s)
    return true;
  std::lock_guard<std::mutex> lock(streamsMutex);
  return streams().count(s) != 0;
}
} // namespace

void enqueue(cudaStream_t stream, std::function<void()> work) {
  // BRAID_CUDASIM_SYNC=1: every stream runs its work at the call (to tell an
  // ordering problem from a kernel's).
  static const bool synchronous = [] {
    const char *sync = std::getenv("BRAID_CUDASIM_SYNC");
    return sync && std::string(sync) == "1";
  }();
  if (!stream || synchronous) {
    work(); // the legacy default stream: in order with the host here
    return;
  }
  stream->push(std::move(work));
}

bool isDevicePointer(const void *ptr, size_t bytes) { return onDevice(ptr, bytes); }

void setLastError(cudaError_t error) { lastError = error; }

} // namespace cudasim

using cudasim::Event;
using cudasim::Stream;

//===--- Errors and device ----------------------------------------------------===//

const char *cudaGetErrorName(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "cudaSuccess";
  case cudaErrorInvalidValue:
    return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation:
    return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidConfiguration:
    return "cudaErrorInvalidConfiguration";
  case cudaErrorInvalidDevice:
    return "cudaErrorInvalidDevice";
  case cudaErrorInvalidDevicePointer:
    return "cudaErrorInvalidDevicePointer";
  case cudaErrorInvalidMemcpyDirection:
    return "cudaErrorInvalidMemcpyDirection";
  case cudaErrorInvalidResourceHandle:
    return "cudaErrorInvalidResourceHandle";
  case cudaErrorNotReady:
    return "cudaErrorNotReady";
  }
  return "cudaErrorUnknown";
}
const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration argument";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  case cudaErrorInvalidDevicePointer:
    return "invalid device pointer";
  case cudaErrorInvalidMemcpyDirection:
    return "invalid copy direction for memcpy";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle";
  case cudaErrorNotReady:
    return "device not ready";
  }
  return "unknown error";
}
cudaError_t cudaGetLastError() {
  cudaError_t e = cudasim::lastError;
  cudasim::lastError = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return cudasim::lastError; }

namespace {
/// An HGX H200 node has 8 GPUs: GPU ranks choose theirs by local rank.
constexpr int kDevices = 8;
thread_local int currentDevice = 0; // per host thread, as CUDA's
} // namespace

cudaError_t cudaGetDeviceCount(int *count) {
  *count = kDevices;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int *device) {
  *device = currentDevice;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= kDevices)
    return cudaErrorInvalidDevice;
  currentDevice = device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
  if (device < 0 || device >= kDevices)
    return cudaErrorInvalidDevice;
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof(prop->name), "cudasim (CPU emulation of an H200)");
  prop->totalGlobalMem = cudasim::kDeviceMemoryBytes;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->sharedMemPerBlockOptin = 227 * 1024;
  prop->multiProcessorCount = 132;
  prop->major = 9;
  prop->minor = 0;
  prop->clockRate = 1980000;
  prop->memoryClockRate = 2619000;
  prop->memoryBusWidth = 6144;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  std::vector<Stream *> all;
  {
    std::lock_guard<std::mutex> lock(cudasim::streamsMutex);
    all.assign(cudasim::streams().begin(), cudasim::streams().end());
  }
  for (Stream *s : all)
    s->synchronize();
  return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
  *least = 0;
  *greatest = -5;
  return cudaSuccess;
}
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
  if (!cudasim::known(stream))
    return cudaErrorInvalidResourceHandle;
  return cudaMalloc(ptr, bytes);
}
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream) {
  if (!cudasim::known(stream))
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
  if (!cudasim::known(stream))
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
  if (!cudasim::known(stream))
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

//===--- Streams and events -----------------------------------------------------===//

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned) {
  auto *s = new Stream;
  std::lock_guard<std::mutex> lock(cudasim::streamsMutex);
  cudasim::streams().insert(s);
  *stream = s;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned flags, int) {
  return cudaStreamCreateWithFlags(stream, flags);
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!stream || !cudasim::known(stream))
    return cudaErrorInvalidResourceHandle;
  {
    std::lock_guard<std::mutex> lock(cudasim::streamsMutex);
    cudasim::streams().erase(stream);
  }
  stream->synchronize(); // its work still runs, as CUDA's does
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!cudasim::known(stream))
    return cudaErrorInvalidResourceHandle;
  if (stream)
    stream->synchronize();
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (!event || !cudasim::known(stream))
    return cudaErrorInvalidResourceHandle;
  uint64_t record;
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    record = event->issued; // the last record issued before this call
  }
  if (record == 0)
    return cudaSuccess; // never recorded: nothing to wait for
  cudasim::enqueue(stream, [event, record] { event->waitFor(record); });
  return cudaSuccess;
}

namespace {
std::mutex eventsMutex;
// Events live until exit: a destroyed event's pending record still runs.
std::vector<std::unique_ptr<Event>> &events() {
  static auto *e = new std::vector<std::unique_ptr<Event>>;
  return *e;
}
} // namespace

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags) {
  std::lock_guard<std::mutex> lock(eventsMutex);
  events().push_back(std::make_unique<Event>());
  events().back()->flags = flags;
  *event = events().back().get();
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return event ? cudaSuccess : cudaErrorInvalidResourceHandle;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!event || !cudasim::known(stream))
    return cudaErrorInvalidResourceHandle;
  uint64_t record;
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    record = ++event->issued;
  }
  cudasim::enqueue(stream, [event, record] {
    {
      std::lock_guard<std::mutex> lock(event->mutex);
      event->completed = std::max(event->completed, record);
      event->time = std::chrono::steady_clock::now();
    }
    event->done.notify_all();
  });
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!event)
    return cudaErrorInvalidResourceHandle;
  uint64_t record;
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    record = event->issued;
  }
  event->waitFor(record);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!event)
    return cudaErrorInvalidResourceHandle;
  std::lock_guard<std::mutex> lock(event->mutex);
  return event->completed >= event->issued ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end)
    return cudaErrorInvalidResourceHandle;
  std::lock_guard<std::mutex> lockStart(start->mutex);
  if (start != end)
    end->mutex.lock();
  cudaError_t result = cudaSuccess;
  if ((start->flags | end->flags) & cudaEventDisableTiming)
    result = cudaErrorInvalidResourceHandle;
  else if (start->issued == 0 || end->issued == 0 || start->completed < start->issued ||
           end->completed < end->issued)
    result = cudaErrorNotReady;
  else
    *ms = std::chrono::duration<float, std::milli>(end->time - start->time).count();
  if (start != end)
    end->mutex.unlock();
  return result;
}

//===--- f16 ----------------------------------------------------------------------===//

float __half2float(__half h) {
  uint32_t sign = uint32_t(h.bits & 0x8000) << 16, exp = (h.bits >> 10) & 0x1f,
           man = h.bits & 0x3ff;
  if (exp == 0x1f)
    return cudasimBitsToFloat(sign | 0x7f800000 | (man << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return cudasimBitsToFloat(sign | ((exp + 112) << 23) | (man << 13));
}

__half __float2half_rn(float f) {
  uint32_t u = cudasimFloatToBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  if (std::isnan(f))
    return __half{static_cast<uint16_t>(sign | 0x7e00)};
  float a = std::fabs(f);
  if (a >= 65520.0f) // rounds to infinity
    return __half{static_cast<uint16_t>(sign | 0x7c00)};
  if (a < 6.103515625e-05f) { // subnormal: a multiple of 2^-24, rounded to nearest even
    float scaled = a * 16777216.0f;
    auto m = static_cast<uint32_t>(std::nearbyint(scaled)); // default mode: to nearest even
    return __half{static_cast<uint16_t>(sign | m)};
  }
  uint32_t exp = ((u >> 23) & 0xff) - 112, man = u & 0x7fffff;
  uint32_t h = (exp << 10) | (man >> 13);
  uint32_t rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // a carry into the exponent is the right result
  return __half{static_cast<uint16_t>(sign | h)};
}
