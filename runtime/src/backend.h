//===- backend.h - what the runtime needs from a device backend -*- C++ -*-===//
//
// The runtime core (arena checks, initialization, dumps, trace, driver) is
// device independent; a Backend provides memory, copies, synchronization and
// kernel timing. CPU: host memory and wall clock. CUDA: device memory, one
// compute stream and one communication stream, CUDA events for timing.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_BACKEND_H
#define BRAID_RUNTIME_BACKEND_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct braid_rt;

namespace braid::rt {

/// One kernel's interval, in microseconds on the host's steady clock since
/// its epoch (std::chrono::steady_clock, CLOCK_MONOTONIC on Linux): shared by
/// every process of a machine, so that the ranks' traces line up.
struct OpTiming {
  double beginUs = 0;
  double endUs = 0;
};

/// Two device events (timing enabled) that bracket work on a stream other
/// than the compute stream, such as a transfer on a communication stream;
/// owned by whoever recorded them, and placed on the steady clock by
/// Backend::eventMicros once they have completed.
class DeviceSpan {
public:
  virtual ~DeviceSpan() = default;
  virtual void *beginEvent() const = 0;
  virtual void *endEvent() const = 0;
};

class Backend {
public:
  virtual ~Backend() = default;
  /// "cpu" or "cuda".
  virtual const char *name() const = 0;
  /// Device memory for the arena; never fails silently (aborts with a message).
  virtual void *allocate(int64_t bytes) = 0;
  virtual void release(void *pointer) = 0;
  virtual void copyToDevice(void *dst, const void *src, int64_t bytes) = 0;
  virtual void copyToHost(void *dst, const void *src, int64_t bytes) = 0;
  /// Whether the host may write the arena directly (the cpu backend): a
  /// loader then skips staging and copyToDevice.
  virtual bool hostAddressable() const { return false; }
  /// Device to device, ordered with the kernels (not overlapping).
  virtual void copy(void *dst, const void *src, int64_t bytes) = 0;
  /// Waits for all work issued so far.
  virtual void synchronize() = 0;
  /// Marks the start / end of kernel `id` on the compute timeline.
  virtual void markBegin(int64_t id) = 0;
  virtual void markEnd(int64_t id) = 0;
  /// After synchronize(): the timings of kernels [0, count) marked so far.
  virtual std::vector<OpTiming> resolveTimings(int64_t count) = 0;
  /// After synchronize(): when device event `event` (a cudaEvent_t recorded
  /// with timing) completed, in microseconds on the steady clock, as the
  /// kernels' timings are; false on the CPU.
  virtual bool eventMicros(void *event, double *us) {
    (void)event;
    (void)us;
    return false;
  }
  /// The stream kernels are issued on (a cudaStream_t), or null on the CPU.
  virtual void *computeStream() { return nullptr; }
  /// The stream collectives are issued on, or null on the CPU.
  virtual void *commStream() { return nullptr; }
  /// The stream of the collectives of one group (its canonical axes, "dp"):
  /// each group's transfers run in turn on a stream of their own and the
  /// groups' at once, as the overlap scheduler's timing model runs each
  /// group's on a link of its own; null on the CPU. synchronize() waits for
  /// these too.
  virtual void *commStream(const std::string &group) {
    (void)group;
    return commStream();
  }
};

/// The backend of a runtime context; kernels use it to find their stream.
/// A null context (kernel tests) has no backend: returns null.
Backend *backendOf(struct ::braid_rt *rt);

std::unique_ptr<Backend> makeCpuBackend();
#ifdef BRAID_RUNTIME_CUDA
std::unique_ptr<Backend> makeCudaBackend();
#endif

} // namespace braid::rt

#endif // BRAID_RUNTIME_BACKEND_H
