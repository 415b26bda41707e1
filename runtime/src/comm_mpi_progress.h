//===- comm_mpi_progress.h - the MPI provider's transfers in flight -*- C++ -*-===//
//
// What comm_mpi.cpp's communicators share (comm_mpi.h): the lock around
// every MPI call, the collectives and receives in flight (MpiEvent), the
// sends the program no longer waits for (PendingSend), the emulated links'
// clocks, and the progress thread that completes transfers while the
// program computes (comm_mpi_progress.cpp). Internal to braid_runtime_mpi.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COMM_MPI_PROGRESS_H
#define BRAID_RUNTIME_COMM_MPI_PROGRESS_H

#include "comm_mpi.h"

#include "braid/link_model.h"
#include "rt_impl.h"

// The C API only: no C++ bindings (so no libmpi_cxx at link time).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace braid::rt::mpi {

/// Elements per MPI call of the transfers that can be cut into pieces
/// (all_reduce, broadcast, send/recv): MPI counts are ints.
constexpr int64_t kChunk = int64_t(1) << 30;

/// MPI_Error_string's text for `code`.
std::string errorString(int code);
/// Aborts with "<what> on '<axes>': MPI error: <MPI_Error_string>" unless
/// `code` is MPI_SUCCESS.
void check(int code, const char *what, const std::string &axes);

/// bf16/f16 elements to f32 and back (round to nearest even): MPI reduces
/// them in f32.
void toF32(braid_dtype dtype, const void *src, float *dst, int64_t n);
void fromF32(braid_dtype dtype, const float *src, void *dst, int64_t n);

/// Steady-clock seconds: one clock for the ranks of a machine.
double nowSeconds();
void sleepUntil(double seconds);

/// The first error of a completed request list (MPI_ERR_IN_STATUS: the
/// failed status's own code).
int firstError(int code, const std::vector<MPI_Status> &statuses);

class MpiEvent;

/// A send the program no longer waits for (see comm_mpi.h): it owns a copy of
/// its data and keeps its communicator alive until MPI completes it. Under
/// the link emulator it goes at once, after a message of its own: the time
/// its link will have carried it, which the receive waits for.
struct PendingSend {
  std::vector<MPI_Request> requests;
  std::vector<char> data;
  std::shared_ptr<struct Handle> handle;
  std::string axes;
  int64_t count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int elementBytes = 1, peer = 0, tag = 0;
  /// Under the link emulator: when the sender's link has carried it
  /// (steady-clock seconds, one clock for the ranks of a machine).
  double arrival = 0;
  bool stamped = false;
};

/// What the provider's communicators share: one lock around every MPI call
/// (the progress thread calls MPI too: MPI_THREAD_SERIALIZED), the
/// collectives in flight, the pending sends, the emulated links and the
/// progress thread that completes transfers while the program computes.
struct Shared {
  std::mutex mpi;
  std::condition_variable wake;     ///< the progress thread: work arrived
  std::condition_variable finished; ///< waiters: an event completed
  std::list<MpiEvent *> events;     ///< collectives and receives in flight
  std::list<PendingSend> sends;
  int waiting = 0; ///< threads blocked in an event's wait
  bool threaded = false, stop = false;
  std::thread progress;

  /// BRAID_LINK (link_model.h); empty: no emulation.
  link::Links links;
  /// Per group (canonical axes): when its emulated link is next free.
  std::map<std::string, double> linkFree;

  void postSend(PendingSend &send);
  void reapSends();
  void testEvents(double now);
  void run();
};

/// One collective or receive in flight: its requests, the staging buffers
/// they use and what to do after they complete (bf16/f16: convert the f32
/// result back). Created and issued under Shared::mpi; the progress thread
/// (or, without one, the wait) completes the requests.
class MpiEvent final : public Event {
public:
  MpiEvent(const char *what, std::string axes, std::shared_ptr<Shared> shared)
      : what_(what), axes_(std::move(axes)), shared_(std::move(shared)) {
    issuedAt = start = nowSeconds();
    shared_->events.push_back(this);
    shared_->wake.notify_one();
  }
  ~MpiEvent() override { complete(); }
  void wait(Backend &) override { complete(); }
  bool interval(double *begin, double *end, double *linkEnd) const override {
    *begin = start;
    *end = std::max(doneAt, notBefore);
    *linkEnd = notBefore;
    return done_;
  }

  std::vector<MPI_Request> requests;
  std::vector<char> staging;    ///< a copy of an aliased send buffer
  std::vector<float> sendF32, recvF32;
  void *convertTo = nullptr;    ///< recvF32 -> convertTo (dtype) after the wait
  braid_dtype convertDtype = BRAID_F32;
  /// The emulated link: when the transfer starts on it and when it ends (the
  /// wait returns no earlier); 0 without emulation.
  double issuedAt = 0, start = 0, notBefore = 0;
  /// An emulated receive: the sender's stamp, received before the data, is
  /// when its link has carried the message (notBefore once it arrived).
  double arrival = 0;
  bool stamped = false;

  /// Tests the requests (under Shared::mpi); true when they have just
  /// completed.
  bool test(double now) {
    if (mpiDone_)
      return false;
    int flag = 0;
    std::vector<MPI_Status> statuses(requests.size());
    int code = requests.empty()
                   ? MPI_SUCCESS
                   : MPI_Testall(int(requests.size()), requests.data(), &flag, statuses.data());
    if (requests.empty())
      flag = 1;
    if (code != MPI_SUCCESS || flag) {
      code_ = firstError(code, statuses);
      mpiDone_ = true;
      doneAt = now;
      if (stamped && code_ == MPI_SUCCESS)
        notBefore = std::max(notBefore, arrival);
    }
    return mpiDone_;
  }
  bool mpiDone() const { return mpiDone_; }

private:
  void complete() {
    if (done_)
      return;
    {
      std::unique_lock<std::mutex> lock(shared_->mpi);
      const double limit = collectiveTimeout(), began = nowSeconds();
      if (shared_->threaded) {
        // A short poll of its own first (yielding the core between tests):
        // a decode step's all-reduces are a few KB, done within microseconds
        // of the last rank's arrival, and the progress thread's 20 us polls
        // and the wake-ups after them were a tenth of a tp=2 step.
        for (int i = 0; i < 200 && !mpiDone_ && !test(nowSeconds()); ++i) {
          lock.unlock();
          std::this_thread::yield();
          lock.lock();
        }
        ++shared_->waiting;
        shared_->wake.notify_one();
        auto done = [&] { return mpiDone_; };
        if (limit > 0) {
          if (!shared_->finished.wait_for(lock, std::chrono::duration<double>(limit), done))
            stuck(limit);
        } else {
          shared_->finished.wait(lock, done);
        }
        --shared_->waiting;
      } else {
        // Waiting sleeps between polls instead of spinning in MPI_Testall:
        // CPU ranks often share cores (a pipeline of 4 ranks on a 2-core
        // machine), and a rank spinning on its receive takes the core from a
        // rank that computes. The sleep grows to 200 us, which bounds the
        // latency it adds.
        for (int64_t sleepUs = 1;; sleepUs = std::min<int64_t>(2 * sleepUs, 200)) {
          if (test(nowSeconds()) || mpiDone_)
            break;
          if (limit > 0 && nowSeconds() - began > limit)
            stuck(limit);
          lock.unlock();
          std::this_thread::sleep_for(std::chrono::microseconds(sleepUs));
          lock.lock();
        }
      }
      shared_->events.remove(this);
    }
    done_ = true;
    check(code_, what_, axes_);
    sleepUntil(notBefore);
    if (convertTo)
      fromF32(convertDtype, recvF32.data(), convertTo, int64_t(recvF32.size()));
  }

  /// The watchdog: the wait has blocked `limit` seconds. Every rank ends
  /// (fatal's MPI_Abort) with the transfer, its group and the step named,
  /// instead of hanging until the job's own limit.
  [[noreturn]] void stuck(double limit) {
    fatal("%s over '%s' at step %lld has not completed after %g s (BRAID_COLLECTIVE_TIMEOUT): "
          "a rank of its group is stuck or was lost",
          what_, axes_.c_str(), (long long)currentStep(), limit);
  }

  const char *what_;
  std::string axes_;
  std::shared_ptr<Shared> shared_;
  bool mpiDone_ = false, done_ = false;
  int code_ = MPI_SUCCESS;
  double doneAt = 0;
};

/// A send, complete for the program at once; its interval is its emulated
/// link's (for the trace's communication lanes).
class SentEvent final : public Event {
public:
  SentEvent(double begin, double end, bool emulated)
      : begin_(begin), end_(end), emulated_(emulated) {}
  void wait(Backend &) override {}
  bool interval(double *begin, double *end, double *linkEnd) const override {
    *begin = begin_;
    *end = end_;
    *linkEnd = emulated_ ? end_ : 0;
    return true;
  }

private:
  double begin_, end_;
  bool emulated_;
};

/// An MPI communicator, freed when the last Communicator using it goes.
struct Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  ~Handle() {
    if (comm != MPI_COMM_NULL) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        MPI_Comm_free(&comm);
    }
  }
};

} // namespace braid::rt::mpi

#endif // BRAID_RUNTIME_COMM_MPI_PROGRESS_H
