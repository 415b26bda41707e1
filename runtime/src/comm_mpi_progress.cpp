//===- comm_mpi_progress.cpp - the MPI provider's transfers in flight -----===//
//
// See comm_mpi_progress.h: posting and releasing the sends, testing the
// transfers in flight, and the progress thread.
//
//===----------------------------------------------------------------------===//

#include "comm_mpi_progress.h"

#include "braid/numeric.h"

#include <algorithm>

namespace braid::rt::mpi {

std::string errorString(int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error code " + std::to_string(code);
  return std::string(text, size_t(length));
}

void check(int code, const char *what, const std::string &axes) {
  if (code != MPI_SUCCESS)
    fatal("%s on '%s': MPI error: %s", what, axes.c_str(), errorString(code).c_str());
}

namespace {
/// fn(T()) with T the storage type of the 16-bit float dtype (bf16 or f16).
template <typename Fn> void withFloat16(braid_dtype dtype, Fn &&fn) {
  if (dtype == BRAID_BF16)
    fn(braid::bf16());
  else
    fn(braid::f16());
}
} // namespace

void toF32(braid_dtype dtype, const void *src, float *dst, int64_t n) {
  withFloat16(dtype, [&](auto t) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = braid::load(static_cast<const decltype(t) *>(src), i);
  });
}

void fromF32(braid_dtype dtype, const float *src, void *dst, int64_t n) {
  withFloat16(dtype, [&](auto t) {
    for (int64_t i = 0; i < n; ++i)
      braid::store(static_cast<decltype(t) *>(dst), i, src[i]);
  });
}

using Clock = std::chrono::steady_clock;

double nowSeconds() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

void sleepUntil(double seconds) {
  double left = seconds - nowSeconds();
  if (left > 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(left));
}

int firstError(int code, const std::vector<MPI_Status> &statuses) {
  if (code == MPI_ERR_IN_STATUS)
    for (const MPI_Status &status : statuses)
      if (status.MPI_ERROR != MPI_SUCCESS && status.MPI_ERROR != MPI_ERR_PENDING)
        return status.MPI_ERROR;
  return code;
}

// Posts a send, an emulated one after its stamp (the receive posts its own
// receive of the stamp first: MPI's non-overtaking order pairs them).
void Shared::postSend(PendingSend &send) {
  if (send.stamped) {
    send.requests.push_back(MPI_REQUEST_NULL);
    check(MPI_Isend(&send.arrival, 1, MPI_DOUBLE, send.peer, send.tag, send.handle->comm,
                    &send.requests.back()),
          "braid_send", send.axes);
  }
  for (int64_t at = 0; at < send.count || at == 0; at += kChunk) {
    int64_t n = std::min(send.count - at, kChunk);
    send.requests.push_back(MPI_REQUEST_NULL);
    check(MPI_Isend(send.data.data() + at * send.elementBytes, int(n), send.type, send.peer,
                    send.tag, send.handle->comm, &send.requests.back()),
          "braid_send", send.axes);
  }
}

// Releases the sends MPI has completed; testing also lets MPI progress.
void Shared::reapSends() {
  for (auto it = sends.begin(); it != sends.end();) {
    int done = 0;
    check(MPI_Testall(int(it->requests.size()), it->requests.data(), &done,
                      MPI_STATUSES_IGNORE),
          "braid_send", it->axes);
    it = done ? sends.erase(it) : std::next(it);
  }
}

void Shared::testEvents(double now) {
  bool any = false;
  for (MpiEvent *event : events)
    any |= event->test(now);
  if (any)
    finished.notify_all();
}

// The progress thread: while anything is in flight it tests the requests
// (Open MPI, like most implementations, advances nonblocking collectives only
// inside MPI calls), releases the completed sends and records when each
// transfer completed. It polls every 20 us while the program waits for a
// transfer and every 100 us while it computes: ranks that share cores keep
// their cycles for computing. A transfer MPI has completed is not in flight,
// though the program has not waited for it yet (a gradient bucket reduced
// during the backward, waited for at its end; what is left of its emulated
// link the wait sleeps out): the thread sleeps until work arrives.
void Shared::run() {
  std::unique_lock<std::mutex> lock(mpi);
  while (!stop) {
    if (sends.empty() && std::all_of(events.begin(), events.end(),
                                     [](MpiEvent *e) { return e->mpiDone(); })) {
      wake.wait(lock);
      continue;
    }
    testEvents(nowSeconds());
    reapSends();
    double pause = waiting > 0 ? 20e-6 : 100e-6;
    wake.wait_for(lock, std::chrono::duration<double>(pause));
  }
}

} // namespace braid::rt::mpi
