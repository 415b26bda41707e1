//===- InferenceSearch.h - choosing serving layouts -------------*- C++ -*-===//
//
// The search of `braid-plan --inference`: every serving layout of a cluster,
// colocated (dp replicas of pp x tp, experts over ep = a divisor of dp x tp:
// data-parallel attention) or disaggregated (prefill instances of
// pp x cp x tp beside decode instances of pp x dp x tp with their ep, and
// the number of each), each at the batch its objective asks for, ranked.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_PLANNER_INFERENCESEARCH_H
#define BRAID_LIB_PLANNER_INFERENCESEARCH_H

#include "braid/Planner/InferenceCost.h"

#include <vector>

namespace braid::plan {

enum class ServeObjective { Latency, Throughput, Targets };
llvm::Expected<ServeObjective> parseServeObjective(llvm::StringRef name);
const char *serveObjectiveName(ServeObjective objective);

struct ServeSearchOptions {
  int64_t gpus = 0;
  /// Concurrent sequences on the cluster (0: the objective chooses).
  int64_t batch = 0;
  /// Requests per second on the cluster (0: none; the batch then is the
  /// smallest that sustains it).
  double rate = 0;
  ServeObjective objective = ServeObjective::Throughput;
  /// Latency targets in seconds (0: none), for ServeObjective::Targets.
  double ttftTarget = 0, tpotTarget = 0;
  /// Static batching (a batch prefilled together and decoded to the end)
  /// rather than continuous batching.
  bool staticBatching = false;
  /// Whether separate prefill and decode layouts are searched too.
  bool disaggregate = true;
  unsigned top = 10;
};

/// A serving layout of the cluster with its figures.
struct ServeChoice {
  bool disaggregated = false;
  /// Colocated: `decode` is the layout. Disaggregated: prefillInstances of
  /// `prefill` beside decodeInstances of `decode`.
  ServeLayout prefill, decode;
  int64_t prefillInstances = 0, decodeInstances = 1;
  /// The whole cluster's figures: batch on all decode GPUs, output tokens/s
  /// over all GPUs of the cluster, memory the busiest GPU's.
  ServeEstimate est;
  /// Disaggregated: a prompt's KV cache sent from prefill to decode.
  double transferSeconds = 0;
  int64_t gpus() const {
    return disaggregated ? prefillInstances * prefill.gpus() + decodeInstances * decode.gpus()
                         : decode.gpus();
  }
  /// "tp=8,pp=2" or "prefill tp=8,cp=2 x3 + decode tp=4 x5".
  std::string str() const;
};

struct ServeSearchResult {
  std::vector<ServeChoice> best; ///< best first
  uint64_t evaluated = 0;
  double seconds = 0;
};

ServeSearchResult searchServing(const InferenceCost &cost, const ServeSearchOptions &options);

/// One colocated layout at the options' batch (or the batch the objective
/// chooses); invalid with the reason when it cannot serve.
ServeChoice evaluateColocated(const InferenceCost &cost, const ServeLayout &layout,
                              const ServeSearchOptions &options);
/// Separate layouts on the options' GPUs: as many prefill instances as
/// `prefillInstances` (0: the count the objective chooses), the rest decode.
ServeChoice evaluateDisaggregated(const InferenceCost &cost, const ServeLayout &prefill,
                                  const ServeLayout &decode, const ServeSearchOptions &options,
                                  int64_t prefillInstances = 0);

/// Whether `a` ranks before `b` under `options`' objective.
bool servesBetter(const ServeChoice &a, const ServeChoice &b, const ServeSearchOptions &options,
                  int64_t output);

} // namespace braid::plan

#endif // BRAID_LIB_PLANNER_INFERENCESEARCH_H
