//===- driver_teardown.cpp - the closing report and the exit status -------===//
//
// At the end of a run the talking ranks print on stdout
//   planned_peak_bytes: P
//   measured_peak_bytes: M
//   collective KIND: C per step, B bytes sent per rank   (the last step's,
//   collective_bytes_per_step: T                          ring model; rt_impl.h)
// and each pipeline stage's leader
//   stage S: planned_peak_bytes: P measured_peak_bytes: M
// (rank 0's lines are its own stage's). Every rank checks its own peak
// against its program's plan and exits with status 1 when they differ.
//
//===----------------------------------------------------------------------===//

#include "driver.h"

#include <chrono>
#include <cstdio>
#include <thread>

namespace braid::rt::driver {

namespace {

/// The peaks and what the last step's collectives moved (the plan
/// printer's model).
void reportPeaks(const Session &s, int64_t planned, int64_t measured, bool stepRan) {
  const char *prefix = s.prefix.c_str();
  // Without a step (training's --steps 0: initialize, and dump with --dump)
  // nothing reached the plan's peak: there is no measurement to print.
  if (s.talks && !stepRan) {
    std::printf("%splanned_peak_bytes: %lld\n%smeasured_peak_bytes: none (no step ran)\n",
                prefix, (long long)planned, prefix);
    std::fflush(stdout);
    return;
  }
  if (s.talks) {
    std::printf("%splanned_peak_bytes: %lld\n%smeasured_peak_bytes: %lld\n", prefix,
                (long long)planned, prefix, (long long)measured);
    double total = 0;
    for (const auto &[kind, stat] : s.rt->collectives) {
      std::printf("%scollective %s: %lld per step, %.0f bytes sent per rank\n", prefix,
                  kind.c_str(), (long long)stat.first, stat.second);
      total += stat.second;
    }
    if (!s.rt->collectives.empty())
      std::printf("%scollective_bytes_per_step: %.0f\n", prefix, total);
    std::fflush(stdout);
  }
  // Rank 0's lines are its stage's: each stage's leader reports its program.
  if (s.stageAxis >= 0 && s.leader) {
    std::printf("%sstage %d: planned_peak_bytes: %lld measured_peak_bytes: %lld\n", prefix,
                int(s.program->stage), (long long)planned, (long long)measured);
    std::fflush(stdout);
  }
}

} // namespace

int tearDown(Session &s, bool peakIsPlanned) {
  if (!s.args.traceFile.empty()) {
    std::string error;
    if (!s.rt->trace.write(*s.rt->backend, s.args.traceFile, s.ranks.rank, &error))
      fatal("trace: %s", error.c_str());
  }
  const int64_t planned = s.program->arena_bytes, measured = s.rt->peakBytes;
  reportPeaks(s, planned, measured, /*stepRan=*/s.args.steps > 0);
  s.stop(0);
  if (planned != measured && peakIsPlanned) {
    std::fprintf(stderr,
                 "braid runtime: %smeasured peak %lld bytes differs from the planned %lld bytes\n",
                 s.multi ? ("rank " + std::to_string(s.ranks.rank) + ": ").c_str() : "",
                 (long long)measured, (long long)planned);
    return 1;
  }
  return 0;
}

int exitStatus(const Session &s, int status, int verdict) {
  if (s.ranks.rank != 0)
    return status;
  // Several ranks: of the launch (MPI groups), or of the store (NCCL).
  if (verdict != 0 && std::max(s.ranks.size, s.ranks.launchSize) > 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  return verdict;
}

} // namespace braid::rt::driver
