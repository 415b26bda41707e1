//===- Search.h - the planner's search over parallel plans -------*- C++ -*-===//
//
// Every factorization of the GPUs into pp x dp x ep x cp x tp (tp within a
// node, every axis dividing what it shards), with virtual stages, the
// micro-batch, the ZeRO stage and the recompute policy, each evaluated by
// PlanCost. Memory first: a group of plans sharing their axes is dropped
// when even its most frugal member (ZeRO-3, full recompute, one sequence
// per micro-batch) does not fit, before any step time is computed. The best
// plans by step time are kept.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_PLANNER_SEARCH_H
#define BRAID_LIB_PLANNER_SEARCH_H

#include "braid/Planner/PlanCost.h"

#include <functional>

namespace braid::plan {

struct SearchOptions {
  int64_t gpus = 8;
  /// Sequences per step.
  int64_t globalBatch = 0;
  std::vector<int> zeroStages = {0, 1, 2, 3};
  std::vector<Recompute> recomputes = {Recompute::None, Recompute::Selective,
                                       Recompute::Full};
  int64_t maxVirtualStages = 8;
  int64_t maxMicroBatch = 16;
  size_t top = 10;
  /// Called now and then with the fraction of the space visited.
  std::function<void(double, uint64_t evaluated, uint64_t fitting)> progress;
};

struct RankedPlan {
  Plan plan;
  Estimate estimate;
};

struct SearchResult {
  std::vector<RankedPlan> best; ///< fastest first
  uint64_t evaluated = 0;       ///< plans whose step time was computed
  uint64_t memoryChecked = 0;   ///< plans (or groups) tested for memory only
  uint64_t fitting = 0;
  double seconds = 0;
  /// The plan needing the least memory per GPU, fitting or not (for the
  /// message when nothing fits).
  RankedPlan leanest;
};

SearchResult searchPlans(PlanCost &cost, const SearchOptions &options);

/// The plan of `cost`'s model needing the least memory per GPU on `gpus`
/// GPUs (any batch): the memory-first test of a cluster size.
RankedPlan leanestPlan(PlanCost &cost, int64_t gpus);

/// The fewest GPUs (a multiple of a node, or fewer than one node) on which
/// some plan of the model fits, or 0 when none up to 2^24 does.
int64_t smallestCluster(PlanCost &cost, RankedPlan *plan);

} // namespace braid::plan

#endif // BRAID_LIB_PLANNER_SEARCH_H
