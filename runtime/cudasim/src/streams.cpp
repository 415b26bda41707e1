//===- streams.cpp - cudasim: streams and events ----------------------------===//
//
// A created stream is a worker thread draining a queue (the legacy default
// stream runs its work at the call, in order with the host). Events carry a
// record count, so that cudaStreamWaitEvent waits for the record that was
// last issued when it was called, as CUDA specifies.
//
//===----------------------------------------------------------------------===//

#include "cudasim/cudasim.h"
#include "internal.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace cudasim {

namespace {
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

bool knownStream(cudaStream_t s) {
  if (!s)
    return true;
  std::lock_guard<std::mutex> lock(streamsMutex);
  return streams().count(s) != 0;
}


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

} // namespace cudasim

using cudasim::Event;
using cudasim::Stream;

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
  if (!stream || !cudasim::knownStream(stream))
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
  if (!cudasim::knownStream(stream))
    return cudaErrorInvalidResourceHandle;
  if (stream)
    stream->synchronize();
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (!event || !cudasim::knownStream(stream))
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
  if (!event || !cudasim::knownStream(stream))
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
