//===- PipelineSchedule.cpp - stages, pipeline schedules, simulation ------===//

#include "dialects/braid/Analysis/PipelineSchedule.h"

#include "dialects/braid/Analysis/ModelStats.h"
#include "dialects/braid/Analysis/OpCost.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <deque>
#include <numeric>

using namespace mlir;
using namespace mlir::braid;

//===----------------------------------------------------------------------===//
// Layer costs
//===----------------------------------------------------------------------===//

/// Forward FLOPs of one execution of `func` and what it calls. The module
/// was checked by computeModelStats, so every callee has a body and there is
/// no recursion.
static int64_t functionCost(func::FuncOp func, SymbolTable &symbols,
                            DenseMap<Operation *, int64_t> &memo) {
  auto [it, inserted] = memo.try_emplace(func, 0);
  if (!inserted)
    return it->second;
  int64_t total = 0;
  func.walk([&](Operation *op) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      total += functionCost(symbols.lookup<func::FuncOp>(call.getCallee()),
                            symbols, memo);
      return;
    }
    OpCost cost = getForwardCost(op);
    total += cost.matmulFlops + cost.otherFlops;
  });
  memo[func] = total;
  return total;
}

FailureOr<SmallVector<int64_t>>
mlir::braid::computeLayerCosts(ModuleOp module, func::FuncOp step) {
  // Reuse the model walker's checks (bodies, recursion, tokens).
  if (failed(computeModelStats(module, step)))
    return failure();
  SymbolTable symbols(module);
  DenseMap<Operation *, int64_t> memo;
  SmallVector<int64_t> layers;
  int64_t prefix = 0, pending = 0;
  step.walk([&](Operation *op) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      // Ops between two layers (parameter reads) go with the one before.
      if (layers.empty())
        prefix += pending;
      else
        layers.back() += pending;
      pending = 0;
      layers.push_back(functionCost(
          symbols.lookup<func::FuncOp>(call.getCallee()), symbols, memo));
      return;
    }
    OpCost cost = getForwardCost(op);
    pending += cost.matmulFlops + cost.otherFlops;
  });
  if (layers.empty())
    return step.emitError("the step function '@")
           << step.getSymName() << "' calls no layer function, so it has no layers to "
           << "split into pipeline stages";
  layers.front() += prefix;
  layers.back() += pending;
  return layers;
}

//===----------------------------------------------------------------------===//
// Stage assignment
//===----------------------------------------------------------------------===//

/// Packs layers front to back into at most `bound` per chunk, leaving at
/// least one layer for every later chunk. Packing as far as possible is
/// optimal (exchange argument), so this fails only if `bound` is infeasible.
static std::optional<SmallVector<LayerChunk>>
packLayers(ArrayRef<int64_t> costs, int64_t chunks, int64_t bound) {
  SmallVector<LayerChunk> result;
  int64_t layers = costs.size(), next = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    LayerChunk chunk{next, next, 0};
    int64_t laterChunks = chunks - c - 1;
    while (chunk.end < layers && layers - chunk.end > laterChunks &&
           (chunk.end == chunk.begin || c == chunks - 1 ||
            chunk.cost + costs[chunk.end] <= bound)) {
      chunk.cost += costs[chunk.end];
      ++chunk.end;
    }
    if (chunk.cost > bound)
      return std::nullopt;
    next = chunk.end;
    result.push_back(chunk);
  }
  return result;
}

FailureOr<SmallVector<LayerChunk>>
mlir::braid::balanceLayers(ArrayRef<int64_t> costs, int64_t chunks,
                           Location loc) {
  if (chunks < 1 || int64_t(costs.size()) < chunks)
    return emitError(loc, "cannot split ")
           << costs.size() << " layers into " << chunks
           << " pipeline chunks: every chunk needs at least one layer";
  // Binary search on the largest chunk cost; costs are integers, so exact.
  int64_t low = *std::max_element(costs.begin(), costs.end());
  int64_t high = std::accumulate(costs.begin(), costs.end(), int64_t(0));
  while (low < high) {
    int64_t mid = low + (high - low) / 2;
    if (packLayers(costs, chunks, mid))
      high = mid;
    else
      low = mid + 1;
  }
  return *packLayers(costs, chunks, low);
}

FailureOr<SmallVector<LayerChunk>>
mlir::braid::layoutLayers(ArrayRef<int64_t> costs, ArrayRef<int64_t> counts,
                          int64_t chunks, Location loc) {
  if (int64_t(counts.size()) != chunks)
    return emitError(loc, "pipeline layout has ")
           << counts.size() << " entries but the pipeline has " << chunks
           << " chunks (pp x virtual-stages)";
  int64_t next = 0;
  SmallVector<LayerChunk> result;
  for (auto [index, count] : llvm::enumerate(counts)) {
    if (count < 1)
      return emitError(loc, "pipeline layout entry ")
             << index << " is " << count
             << "; every chunk needs at least one layer";
    LayerChunk chunk{next, next + count, 0};
    for (int64_t l = chunk.begin; l < std::min<int64_t>(chunk.end, costs.size());
         ++l)
      chunk.cost += costs[l];
    next = chunk.end;
    result.push_back(chunk);
  }
  if (next != int64_t(costs.size()))
    return emitError(loc, "pipeline layout covers ")
           << next << " layers but the model has " << costs.size();
  return result;
}

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

std::string PipelineSchedule::label(const PipelineAction &action) const {
  const char *kinds = "FBW";
  std::string text =
      kinds[int(action.kind)] + std::to_string(action.microbatch);
  if (virtualStages > 1)
    text += "c" + std::to_string(action.chunk / stages);
  return text;
}

/// GPipe: every forward, then every backward.
static void buildGPipe(PipelineSchedule &s, int64_t rank) {
  for (int64_t i = 0; i < s.microbatches; ++i)
    s.ranks[rank].push_back({ActionKind::Forward, rank, i});
  for (int64_t i = 0; i < s.microbatches; ++i)
    s.ranks[rank].push_back({ActionKind::Backward, rank, i});
}

/// 1F1B (PipeDream-flush): p-1-r warm-up forwards, then one forward and one
/// backward in turn, then the remaining backwards. For ZB-H1 the backward is
/// split and rank r holds back its last r weight gradients (W), so that every
/// rank has p microbatches in flight (F done, W not), 1F1B's peak on rank 0;
/// the held-back W fill the cool-down bubbles (Qi et al. 2023, figure 3).
static void buildOneFOneB(PipelineSchedule &s, int64_t rank) {
  SmallVector<PipelineAction> &out = s.ranks[rank];
  int64_t m = s.microbatches;
  int64_t warmup = std::min(s.stages - 1 - rank, m);
  int64_t lag = rank;
  std::deque<int64_t> pendingWeights;
  auto backward = [&](int64_t i) {
    out.push_back({ActionKind::Backward, rank, i});
    if (!s.splitBackward)
      return;
    pendingWeights.push_back(i);
    while (int64_t(pendingWeights.size()) > lag) {
      out.push_back({ActionKind::Weight, rank, pendingWeights.front()});
      pendingWeights.pop_front();
    }
  };
  for (int64_t i = 0; i < warmup; ++i)
    out.push_back({ActionKind::Forward, rank, i});
  for (int64_t i = 0; i < m - warmup; ++i) {
    out.push_back({ActionKind::Forward, rank, warmup + i});
    backward(i);
  }
  for (int64_t i = m - warmup; i < m; ++i)
    backward(i);
  for (int64_t i : pendingWeights)
    out.push_back({ActionKind::Weight, rank, i});
}

/// Megatron-LM's interleaved 1F1B: microbatches go through the rank's v
/// chunks in groups of p; warm-up is 2(p-1-r) + (v-1)p forwards.
static void buildInterleaved(PipelineSchedule &s, int64_t rank) {
  int64_t p = s.stages, v = s.virtualStages;
  int64_t total = s.microbatches * v;
  int64_t warmup = std::min(2 * (p - 1 - rank) + (v - 1) * p, total);
  auto at = [&](int64_t k, ActionKind kind) -> PipelineAction {
    int64_t local = (k % (p * v)) / p;
    if (kind == ActionKind::Backward)
      local = v - 1 - local;
    return {kind, local * p + rank, (k / (p * v)) * p + k % p};
  };
  SmallVector<PipelineAction> &out = s.ranks[rank];
  for (int64_t k = 0; k < warmup; ++k)
    out.push_back(at(k, ActionKind::Forward));
  for (int64_t k = 0; k < total - warmup; ++k) {
    out.push_back(at(warmup + k, ActionKind::Forward));
    out.push_back(at(k, ActionKind::Backward));
  }
  for (int64_t k = total - warmup; k < total; ++k)
    out.push_back(at(k, ActionKind::Backward));
}

FailureOr<PipelineSchedule>
mlir::braid::buildSchedule(ScheduleKind kind, int64_t stages,
                           int64_t virtualStages, int64_t microbatches,
                           Location loc) {
  if (stages < 1)
    return emitError(loc, "pipeline stages (pp) must be at least 1, got ")
           << stages;
  if (microbatches < 1)
    return emitError(loc, "microbatches must be at least 1, got ")
           << microbatches;
  if (virtualStages < 1)
    return emitError(loc, "virtual-stages must be at least 1, got ")
           << virtualStages;
  if (kind != ScheduleKind::Interleaved && virtualStages != 1)
    return emitError(loc, "virtual-stages=")
           << virtualStages << " needs schedule=interleaved, got schedule="
           << stringifyScheduleKind(kind);
  if (kind == ScheduleKind::Interleaved && microbatches % stages != 0)
    return emitError(loc, "the interleaved schedule needs microbatches "
                          "divisible by pp, got microbatches=")
           << microbatches << " and pp=" << stages;

  PipelineSchedule s;
  s.kind = kind;
  s.stages = stages;
  s.virtualStages = virtualStages;
  s.microbatches = microbatches;
  s.splitBackward = kind == ScheduleKind::ZeroBubbleH1;
  s.ranks.resize(stages);
  for (int64_t rank = 0; rank < stages; ++rank) {
    switch (kind) {
    case ScheduleKind::GPipe:
      buildGPipe(s, rank);
      break;
    case ScheduleKind::OneFOneB:
    case ScheduleKind::ZeroBubbleH1:
      buildOneFOneB(s, rank);
      break;
    case ScheduleKind::Interleaved:
      buildInterleaved(s, rank);
      break;
    }
  }
  return s;
}

//===----------------------------------------------------------------------===//
// Simulation
//===----------------------------------------------------------------------===//

FailureOr<PipelineSimulation>
mlir::braid::simulateSchedule(const PipelineSchedule &schedule,
                              const ChunkTimes &times, Location loc,
                              bool keepTimelines) {
  // Whether and when each (kind, chunk, micro-batch) action finished: flat
  // tables, as a search times schedules of millions of actions (89 stages x
  // 28,533 micro-batches).
  const int64_t chunks = schedule.numChunks(), mbs = schedule.microbatches;
  using Key = int64_t;
  auto key = [&](ActionKind kind, int64_t chunk, int64_t mb) -> Key {
    return (int64_t(kind) * chunks + chunk) * mbs + mb;
  };
  std::vector<double> finished(size_t(3 * chunks * mbs), 0.0);
  std::vector<bool> done(finished.size(), false);
  int64_t ranks = schedule.stages, last = schedule.numChunks() - 1;
  PipelineSimulation sim;
  sim.timelines.resize(ranks);
  sim.peakLive.assign(ranks, 0);
  SmallVector<double> free(ranks, 0);
  SmallVector<size_t> next(ranks, 0);
  SmallVector<int64_t> live(ranks, 0);

  // Each action's start depends only on finished actions, so running ranks
  // in any order until none can advance gives the same times.
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t r = 0; r < ranks; ++r) {
      while (next[r] < schedule.ranks[r].size()) {
        const PipelineAction &a = schedule.ranks[r][next[r]];
        assert(a.chunk >= 0 && a.chunk < chunks && a.microbatch >= 0 && a.microbatch < mbs &&
               "buildSchedule's actions lie inside its chunks and micro-batches");
        SmallVector<std::pair<Key, bool>> deps; // (action, crosses ranks)
        switch (a.kind) {
        case ActionKind::Forward:
          if (a.chunk > 0)
            deps.push_back({key(ActionKind::Forward, a.chunk - 1, a.microbatch),
                            schedule.stages > 1});
          break;
        case ActionKind::Backward:
          deps.push_back(
              {key(ActionKind::Forward, a.chunk, a.microbatch), false});
          if (a.chunk < last)
            deps.push_back(
                {key(ActionKind::Backward, a.chunk + 1, a.microbatch),
                 schedule.stages > 1});
          break;
        case ActionKind::Weight:
          deps.push_back(
              {key(ActionKind::Backward, a.chunk, a.microbatch), false});
          break;
        }
        double start = free[r];
        bool ready = true;
        for (auto [dep, remote] : deps) {
          if (!done[size_t(dep)]) {
            ready = false;
            break;
          }
          start = std::max(start, finished[size_t(dep)] + (remote ? times.comm : 0));
        }
        if (!ready)
          break;
        double duration = times.forward[a.chunk];
        if (a.kind == ActionKind::Backward)
          duration = times.backward[a.chunk] +
                     (schedule.splitBackward ? 0 : times.weight[a.chunk]);
        else if (a.kind == ActionKind::Weight)
          duration = times.weight[a.chunk];
        double end = start + duration;
        finished[size_t(key(a.kind, a.chunk, a.microbatch))] = end;
        done[size_t(key(a.kind, a.chunk, a.microbatch))] = true;
        if (keepTimelines)
          sim.timelines[r].push_back({start, end, a});
        sim.busy += duration;
        free[r] = end;
        if (a.kind == ActionKind::Forward)
          sim.peakLive[r] = std::max(sim.peakLive[r], ++live[r]);
        else if (a.kind == ActionKind::Backward)
          --live[r];
        ++next[r];
        progress = true;
      }
    }
  }
  for (int64_t r = 0; r < ranks; ++r)
    if (next[r] < schedule.ranks[r].size())
      return emitError(loc, "pipeline schedule deadlocks: rank ")
             << r << " waits forever at "
             << schedule.label(schedule.ranks[r][next[r]]);
  sim.makespan = *std::max_element(free.begin(), free.end());
  sim.bubbleFraction =
      sim.makespan > 0 ? 1.0 - sim.busy / (ranks * sim.makespan) : 0.0;
  return sim;
}

double mlir::braid::textbookBubbleFraction(ScheduleKind kind, int64_t stages,
                                           int64_t virtualStages,
                                           int64_t microbatches, double forward,
                                           double backward, double weight) {
  double p = stages, m = microbatches, v = virtualStages;
  switch (kind) {
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB:
    return (p - 1) / (m + p - 1);
  case ScheduleKind::Interleaved:
    return (p - 1) / (v * m + p - 1);
  case ScheduleKind::ZeroBubbleH1: {
    double bubble = (p - 1) * (forward + backward - weight);
    return bubble / (m * (forward + backward + weight) + bubble);
  }
  }
  return 0;
}
