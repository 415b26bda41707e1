//===- serve_fake_model.h - a fake model for the serving scheduler -*- C++ -*-===//
//
// The fake model stands for the prefill and decode programs: it keeps a
// pool of pages of K/V rows, a row being a hash of the token at its
// position and the row before it (read through the table, as attention
// makes a real row depend on the whole prefix). It writes each planned
// row's position through the row's page table and reads back, through the
// same table, every position the row attends to. Each read must be the row
// of the sequence's own tokens up to that position (so no page holds
// another sequence's rows where this one reads, and a shared page holds
// the same prefix), no write may reach a page another row's table holds
// (a shared page), and the token drawn at step t is a hash of (sequence,
// t, the last row read), so a wrong table also changes the ids. A run's
// ids must equal those of each request generated alone from its tokens.
//
// serve-scheduler-check.cpp runs its scenarios with it.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_SERVE_FAKE_MODEL_H
#define BRAID_RUNTIME_TOOLS_SERVE_FAKE_MODEL_H

#include "serve_scheduler.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace braid::rt::serve::fake {

/// A 64-bit mix of a hash and a value (the fake's K/V rows and draws).
uint64_t mix(uint64_t h, uint64_t v);

/// A request as the fake serves it.
struct Request {
  int64_t index = 0;
  std::vector<int32_t> prompt;
  int64_t maxNew = 0;
  int64_t arriveAt = 0; ///< the iteration before which it arrives
};

/// One iteration as the scheduler planned it and what finished.
struct Logged {
  Iteration plan;
  std::vector<Finished> finished;
};

/// What a run served and whether every check held.
struct RunResult {
  std::map<int64_t, std::vector<int32_t>> ids;
  std::map<int64_t, bool> endedByToken;
  std::vector<Logged> log;
  std::vector<std::string> refused;
  int64_t preemptions = 0, shared = 0, peakPages = 0;
  std::string problem; ///< the first failed check; empty: all passed
};

/// A fault the fake model can be told to make, to show that its checks
/// catch what the real programs must not do.
enum class Fault {
  None,
  ForeignPage,   ///< attention reads page 0 of another row's table
  ShortChunk,    ///< a chunk's last row is not written to the cache
};

/// Serves `requests` (in any order: they arrive by arriveAt, then index)
/// with the fake model; the first failed check in RunResult::problem.
RunResult serveFake(const SchedulerConfig &config, int64_t vocab, std::vector<Request> requests,
                    Fault fault = Fault::None);

} // namespace braid::rt::serve::fake

#endif // BRAID_RUNTIME_TOOLS_SERVE_FAKE_MODEL_H
