// A hand-written "generated program" for the progress thread and the link
// emulator of the CPU ranks (test/Runtime/link-emulator.py), on 2 ranks of
// --grid dp=2. Each step, with `elements` f32 values per transfer (the
// environment's OVERLAP_ELEMENTS, default 262144: 1 MiB):
//   "hidden":  an all-reduce over dp is started, the rank computes (spins)
//              for OVERLAP_COMPUTE_MS milliseconds, then waits for it;
//   "exposed": an all-reduce over dp is started and waited for at once;
//   "message": dp rank 0 sends a buffer to dp rank 1, which waits for it.
// With OVERLAP_STALL_RANK set, that dp rank computes OVERLAP_STALL_MS
// milliseconds (default 5000) before the "exposed" all-reduce of step
// OVERLAP_STALL_STEP (default 2): a stuck rank, for the transfer watchdog
// (test/Runtime/watchdog.py).
// Every result is checked (the sum of the ranks' values, the message's
// content); the loss is the number of failures over both ranks. The test reads
// the trace: the waits on the compute lane, the transfers on the dp lane.
// Arena: [0, 4) loss f32.
#include "braid/runtime.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

int64_t envInt(const char *name, int64_t fallback) {
  const char *text = std::getenv(name);
  return text && *text ? std::atoll(text) : fallback;
}

// Busy for `ms` milliseconds (compute that makes no MPI call, as a long kernel).
double spin(double ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
  volatile double x = 1;
  while (std::chrono::steady_clock::now() < until)
    for (int i = 0; i < 1000; ++i)
      x = x * 1.0000001 + 1e-9;
  return x;
}

void step(braid_rt *rt, char *arena) {
  static int64_t stepNumber = 0;
  ++stepNumber;
  braid_comm *dp = braid_rt_comm(rt, "dp");
  const int rank = braid_comm_rank(dp);
  const int64_t n = envInt("OVERLAP_ELEMENTS", 262144);
  const double computeMs = double(envInt("OVERLAP_COMPUTE_MS", 60));
  int failures = 0;
  std::vector<float> a(size_t(n), float(rank + 1)), b(size_t(n), float(rank + 1));
  std::vector<float> message(size_t(n), rank == 0 ? 7.0f : 0.0f);

  braid_rt_op_begin(rt, "hidden", "a");
  braid_event *e = braid_all_reduce(rt, dp, a.data(), a.data(), n, BRAID_F32, BRAID_RED_SUM);
  braid_rt_op_begin(rt, "compute", "spin");
  spin(computeMs);
  braid_rt_op_end(rt);
  braid_event_wait(rt, e);
  braid_rt_op_end(rt);

  if (rank == envInt("OVERLAP_STALL_RANK", -1) && stepNumber == envInt("OVERLAP_STALL_STEP", 2))
    spin(double(envInt("OVERLAP_STALL_MS", 5000)));
  if (rank == envInt("OVERLAP_KILL_RANK", -1) && stepNumber == envInt("OVERLAP_STALL_STEP", 2))
    std::raise(SIGKILL);
  braid_rt_op_begin(rt, "exposed", "b");
  braid_event_wait(rt, braid_all_reduce(rt, dp, b.data(), b.data(), n, BRAID_F32, BRAID_RED_SUM));
  braid_rt_op_end(rt);

  braid_rt_op_begin(rt, "message", "m");
  if (rank == 0)
    braid_event_wait(rt, braid_send_tagged(rt, dp, message.data(), n, BRAID_F32, 1, 3));
  else
    braid_event_wait(rt, braid_recv_tagged(rt, dp, message.data(), n, BRAID_F32, 0, 3));
  braid_rt_op_end(rt);

  for (int64_t i = 0; i < n; ++i)
    failures += (a[size_t(i)] != 3.0f) + (b[size_t(i)] != 3.0f) + (message[size_t(i)] != 7.0f);
  if (failures)
    std::fprintf(stderr, "rank %d: FAIL %d wrong elements\n", rank, failures);
  int32_t total = failures;
  braid_event_wait(rt, braid_all_reduce(rt, dp, &total, &total, 1, BRAID_I32, BRAID_RED_SUM));
  *reinterpret_cast<float *>(arena) = float(total);
}

const char *const kGroups[] = {"dp"};
const braid_program kProgram = {"overlap", 4, 0, nullptr, 0, nullptr, 0, step,
                                "dp=2", 1, kGroups, nullptr, 0};

} // namespace

extern "C" const braid_program *braid_program_get(void) { return &kProgram; }
