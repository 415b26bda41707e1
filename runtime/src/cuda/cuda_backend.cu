//===- cuda_backend.cu - the CUDA device backend of the Braid runtime -----===//
//
// Device memory from cudaMalloc, copies on the compute stream, one compute and
// one communication stream (both cudaStreamNonBlocking, so nothing on the
// legacy default stream orders them), kernel timing with CUDA events.
//
// Device: the backend uses the device current when it is created (the driver
// or launcher selects it, e.g. cudaSetDevice(local_rank)); one backend per
// process and device.
//
// Timing: markBegin/markEnd record an event pair per kernel id on the compute
// stream; the pool grows on demand and is reused across steps (ids restart).
// resolveTimings reports the times relative to a base event recorded when the
// backend was created, plus the host's steady-clock time of that event (read
// right after waiting for it: backend.h wants the host clock, shared by the
// ranks of a machine), in microseconds.
//
// Also here: the device error record and the scratch buffer of common.cuh.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace braid::cuda {

namespace {

std::mutex &resourceMutex() {
  static std::mutex m;
  return m;
}

DeviceError *hostErrorRecord = nullptr;   // host view (pinned, mapped)
DeviceError *deviceErrorPointer = nullptr; // device view of the same memory

void *scratchPointer = nullptr;
int64_t scratchBytes = 0;

/// What a device error record's code names: the kernel and its index, and
/// what its `where` counts.
struct ErrorText {
  const char *what, *where;
};
ErrorText errorText(int code) {
  switch (code) {
  case kTokenOutOfRange:
    return {"embedding: token", "at flat position"};
  case kLabelOutOfRange:
    return {"cross_entropy: label", "at flat position"};
  case kExpertOutOfRange:
    return {"dispatch/combine: expert index", "at flat position"};
  case kCacheWritePosition:
    return {"cache_write: position", "of sequence"};
  case kCacheAttentionPosition:
    return {"cache_attention: position", "of sequence"};
  case kTakeRowsIndex:
    return {"take_rows: index", "of sequence"};
  case kAddPositionsRow:
    return {"add_positions: position", "of sequence"};
  case kMambaStepLastRow:
    return {"conv_step/scan_step: last row", "of sequence"};
  case kMambaStepSlot:
    return {"conv_step/scan_step: slot", "of sequence"};
  case kPagedWritePage:
    return {"paged_cache_write: page", "of sequence"};
  case kPagedWritePosition:
    return {"paged_cache_write: position", "of sequence"};
  case kPagedAttentionPage:
    return {"paged_cache_attention: page", "of sequence"};
  case kPagedAttentionPosition:
    return {"paged_cache_attention: position", "of sequence"};
  case kPagedLastRow:
    return {"paged_cache: last row", "of sequence"};
  case kSampleTopK:
    return {"sample: top_k (past the program's top_k_cap)", "of row"};
  case kSampleUndrawn:
    return {"sample: stage (a sampling the program's mode does not draw)", "of row"};
  default:
    return {"kernel: index", "at flat position"};
  }
}

} // namespace

DeviceError *deviceErrorRecord() {
  std::lock_guard<std::mutex> lock(resourceMutex());
  if (!deviceErrorPointer) {
    void *host = nullptr;
    BRAID_CUDA_CHECK(cudaHostAlloc(&host, sizeof(DeviceError), cudaHostAllocMapped));
    hostErrorRecord = static_cast<DeviceError *>(host);
    *hostErrorRecord = DeviceError{kNoError, 0, 0, 0, 0};
    void *device = nullptr;
    BRAID_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
    deviceErrorPointer = static_cast<DeviceError *>(device);
  }
  return deviceErrorPointer;
}

void checkDeviceError() {
  DeviceError *record = hostErrorRecord;
  if (!record)
    return;
  volatile DeviceError *v = record;
  if (v->code == kMambaStepSlotShared)
    BRAID_CUDA_FATAL("conv_step/scan_step: slot %lld of sequence %lld is also sequence %lld's",
                     static_cast<long long>(v->value), static_cast<long long>(v->where),
                     static_cast<long long>(v->bound));
  if (v->code != kNoError) {
    const ErrorText text = errorText(v->code);
    BRAID_CUDA_FATAL("%s %lld %s %lld is out of range [0, %lld)", text.what,
                     static_cast<long long>(v->value), text.where,
                     static_cast<long long>(v->where), static_cast<long long>(v->bound));
  }
}

void *scratch(cudaStream_t stream, int64_t bytes) {
  std::lock_guard<std::mutex> lock(resourceMutex());
  if (bytes < 256)
    bytes = 256;
  if (bytes > scratchBytes) {
    // The old buffer may still be read by work in flight on the stream.
    BRAID_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (scratchPointer)
      BRAID_CUDA_CHECK(cudaFree(scratchPointer));
    int64_t grown = scratchBytes * 2 > bytes ? scratchBytes * 2 : bytes;
    BRAID_CUDA_CHECK(cudaMalloc(&scratchPointer, static_cast<size_t>(grown)));
    scratchBytes = grown;
  }
  return scratchPointer;
}

} // namespace braid::cuda

namespace braid::rt {

namespace {

using braid::cuda::checkDeviceError;

class CudaBackend final : public Backend {
public:
  CudaBackend() {
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess || count == 0)
      BRAID_CUDA_FATAL("no CUDA device available (%s)",
                       error == cudaSuccess ? "0 devices" : cudaGetErrorString(error));
    BRAID_CUDA_CHECK(cudaGetDevice(&device_));
    BRAID_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    BRAID_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
    BRAID_CUDA_CHECK(cudaEventCreate(&base_));
    BRAID_CUDA_CHECK(cudaEventRecord(base_, compute_));
    BRAID_CUDA_CHECK(cudaEventSynchronize(base_));
    baseUs_ = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now().time_since_epoch())
                  .count();
    (void)braid::cuda::deviceErrorRecord(); // allocate before the first kernel
  }

  ~CudaBackend() override {
    // Best effort: no aborts while tearing down.
    cudaStreamSynchronize(compute_);
    cudaStreamSynchronize(comm_);
    for (auto &[group, stream] : groupStreams_) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
    for (cudaEvent_t e : begin_)
      cudaEventDestroy(e);
    for (cudaEvent_t e : end_)
      cudaEventDestroy(e);
    cudaEventDestroy(base_);
    cudaStreamDestroy(compute_);
    cudaStreamDestroy(comm_);
  }

  const char *name() const override { return "cuda"; }

  void *allocate(int64_t bytes) override {
    void *p = nullptr;
    if (bytes <= 0)
      bytes = 1;
    cudaError_t error = cudaMalloc(&p, static_cast<size_t>(bytes));
    if (error != cudaSuccess) {
      size_t freeBytes = 0, totalBytes = 0;
      cudaGetLastError();
      cudaMemGetInfo(&freeBytes, &totalBytes);
      BRAID_CUDA_FATAL("cudaMalloc of %lld bytes on device %d failed: %s (%zu of %zu bytes free)",
                       static_cast<long long>(bytes), device_, cudaGetErrorString(error),
                       freeBytes, totalBytes);
    }
    return p;
  }

  void release(void *pointer) override {
    if (pointer) {
      BRAID_CUDA_CHECK(cudaStreamSynchronize(compute_));
      BRAID_CUDA_CHECK(cudaFree(pointer));
    }
  }

  void copyToDevice(void *dst, const void *src, int64_t bytes) override {
    if (bytes > 0)
      copyWithHost(dst, src, bytes, cudaMemcpyHostToDevice);
  }

  void copyToHost(void *dst, const void *src, int64_t bytes) override {
    if (bytes <= 0)
      return;
    copyWithHost(dst, src, bytes, cudaMemcpyDeviceToHost);
    checkDeviceError();
  }

  void copy(void *dst, const void *src, int64_t bytes) override {
    if (bytes > 0)
      BRAID_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes),
                                       cudaMemcpyDeviceToDevice, compute_));
  }

  void synchronize() override {
    BRAID_CUDA_CHECK(cudaStreamSynchronize(comm_));
    for (auto &[group, stream] : groupStreams_)
      BRAID_CUDA_CHECK(cudaStreamSynchronize(stream));
    BRAID_CUDA_CHECK(cudaStreamSynchronize(compute_));
    checkDeviceError();
  }

  void markBegin(int64_t id) override {
    ensureEvents(id);
    BRAID_CUDA_CHECK(cudaEventRecord(begin_[static_cast<size_t>(id)], compute_));
  }

  void markEnd(int64_t id) override {
    ensureEvents(id);
    BRAID_CUDA_CHECK(cudaEventRecord(end_[static_cast<size_t>(id)], compute_));
  }

  std::vector<OpTiming> resolveTimings(int64_t count) override {
    if (count < 0 || count > static_cast<int64_t>(begin_.size()))
      BRAID_CUDA_FATAL("resolveTimings(%lld): only %zu kernels were marked",
                       static_cast<long long>(count), begin_.size());
    std::vector<OpTiming> timings(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      float beginMs = 0, endMs = 0;
      BRAID_CUDA_CHECK(cudaEventElapsedTime(&beginMs, base_, begin_[static_cast<size_t>(i)]));
      BRAID_CUDA_CHECK(cudaEventElapsedTime(&endMs, base_, end_[static_cast<size_t>(i)]));
      timings[static_cast<size_t>(i)].beginUs = baseUs_ + 1000.0 * beginMs;
      timings[static_cast<size_t>(i)].endUs = baseUs_ + 1000.0 * endMs;
    }
    return timings;
  }

  bool eventMicros(void *event, double *us) override {
    float ms = 0;
    if (!event || cudaEventElapsedTime(&ms, base_, static_cast<cudaEvent_t>(event)) != cudaSuccess)
      return false;
    *us = baseUs_ + 1000.0 * ms;
    return true;
  }

  void *computeStream() override { return compute_; }
  void *commStream() override { return comm_; }
  // A group's stream at the device's highest priority, so that its
  // transfers' kernels are scheduled ahead of the compute kernels they hide
  // behind (as Megatron's and NCCL's own guidance has it), made on first use.
  void *commStream(const std::string &group) override {
    cudaStream_t &stream = groupStreams_[group];
    if (!stream) {
      int least = 0, greatest = 0;
      BRAID_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      BRAID_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
    }
    return stream;
  }

private:
  /// A copy between a host buffer and the device on the compute stream,
  /// complete when it returns: host buffers may be pageable and reused by
  /// the caller right after the call.
  void copyWithHost(void *dst, const void *src, int64_t bytes, cudaMemcpyKind kind) {
    BRAID_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), kind, compute_));
    BRAID_CUDA_CHECK(cudaStreamSynchronize(compute_));
  }

  void ensureEvents(int64_t id) {
    if (id < 0)
      BRAID_CUDA_FATAL("negative kernel id %lld", static_cast<long long>(id));
    while (static_cast<int64_t>(begin_.size()) <= id) {
      cudaEvent_t b, e;
      BRAID_CUDA_CHECK(cudaEventCreate(&b));
      BRAID_CUDA_CHECK(cudaEventCreate(&e));
      begin_.push_back(b);
      end_.push_back(e);
    }
  }

  int device_ = 0;
  cudaStream_t compute_ = nullptr;
  cudaStream_t comm_ = nullptr;
  std::map<std::string, cudaStream_t> groupStreams_;
  cudaEvent_t base_ = nullptr;
  double baseUs_ = 0; ///< base_ on the host's steady clock
  std::vector<cudaEvent_t> begin_, end_;
};

} // namespace

std::unique_ptr<Backend> makeCudaBackend() { return std::make_unique<CudaBackend>(); }

} // namespace braid::rt
