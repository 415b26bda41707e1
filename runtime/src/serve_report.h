//===- serve_report.h - what serving prints and writes ----------*- C++ -*-===//
//
// The serving driver's reports (driver_serve.cpp): each request's line on
// stdout and in --output as it completes or is refused, the summary over
// every replica, the trace's words for an iteration, and how --replicas
// shares the requests and the output file.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SERVE_REPORT_H
#define BRAID_RUNTIME_SERVE_REPORT_H

#include "driver.h"
#include "serve_requests.h"
#include "serve_scheduler.h"

#include <cstdio>
#include <string>
#include <vector>

namespace braid::rt::driver {

/// What the summary counts, of one replica or of all.
struct ServeTotals {
  double endMs = 0;
  int64_t requests = 0, refused = 0, completed = 0, tokens = 0;
  int64_t peakPages = 0, preemptions = 0, sharedPages = 0, iterations = 0;
  std::vector<double> ttft, tpot; ///< per completed request; tpot -1: one token

  /// As doubles, for the gather over replicas: the counts, then each
  /// completed request's TTFT and TPOT.
  std::vector<double> flatten() const;
  /// Adds the replicas' flattened totals, concatenated.
  void addFlattened(const std::vector<double> &all);
};

/// The summary line over every replica, printed by the launch's first rank
/// (collective over the launch with --replicas; --disaggregate: the decode
/// group's, which knows every request's tokens).
void summarizeServing(const Session &s, const ServeTotals &local, int64_t poolPages);

/// A refused request on stdout (and stderr) and in --output.
void reportRefusal(const Session &s, const serve::ServeRequest &request, std::FILE *output);

/// A completed request: its ids on stdout (when the rank talks) and its
/// JSON line in --output (when given).
void reportCompletion(const Session &s, const serve::ServeRequest &request,
                      const serve::Finished &finished, double ttftMs, double tpotMs,
                      std::FILE *output);

/// --replicas R: keeps the requests replica r serves (index r modulo R).
void keepReplicaShare(const Session &s, std::vector<serve::ServeRequest> &requests);

/// --output opened for appending on each replica's first rank (the decode
/// group's, disaggregated), emptied first by the first of them; null
/// elsewhere or without --output. Collective over the launch: `failed` is
/// the same on every rank (the file could not be made).
std::FILE *openServeOutput(const Session &s, bool *failed);

/// The trace's words for an iteration and its calls.
std::string describePrefill(const std::vector<serve::PrefillChunk> &chunks);
std::string describeDecode(const std::vector<serve::DecodeRow> &rows);
std::string describeIteration(const serve::Iteration &iteration);

} // namespace braid::rt::driver

#endif // BRAID_RUNTIME_SERVE_REPORT_H
