//===- PipelineLayout.cpp - a plan's layers on its pipeline stages --------===//
//
// Where PlanCost (PlanCost.h) puts a plan's layers: the contiguous chunks
// of layers a pipeline's stages (and virtual stages) hold, balanced on the
// layers' work when the plan does not give them, and each stage's and
// chunk's sums of its layers' costs, which PlanCost.cpp's step time,
// memory and schedule simulation take.
//
//===----------------------------------------------------------------------===//

#include "braid/Planner/PlanCost.h"

#include "llvm/ADT/Hashing.h"

#include <algorithm>

using namespace braid;
using namespace braid::plan;

namespace {
double work(const PlanCost::LayerCost &c) {
  double w = c.forward + c.backward + c.recompute;
  for (double e : c.exposedComm)
    w += e;
  return w;
}
} // namespace

std::vector<int64_t> PlanCost::balance(const Plan &p, const std::vector<LayerCost> &costs,
                                       const LayerCost &head, const LayerCost &tail) {
  int64_t chunks = p.pp * p.vpp, L = m.layers;
  std::vector<double> w(L);
  for (int64_t i = 0; i < L; ++i)
    w[i] = work(costs[shapeOf[i]]);
  double wHead = work(head), wTail = work(tail);
  // Contiguous chunks with the smallest largest one: bisect the limit,
  // filling chunks greedily (the first starts with the embedding, the last
  // ends with the head).
  auto fill = [&](double limit, std::vector<int64_t> *out) {
    std::vector<int64_t> layout;
    double load = wHead;
    int64_t count = 0;
    for (int64_t i = 0; i < L; ++i) {
      double extra = (i == L - 1 ? wTail : 0);
      // Close the chunk when the layers left are just enough for the
      // chunks left, one each.
      int64_t remainingLayers = L - i, remainingChunks = chunks - int64_t(layout.size());
      if (count > 0 && (load + w[i] + extra > limit ||
                        remainingLayers == remainingChunks - 1)) {
        layout.push_back(count);
        count = 0;
        load = 0;
      }
      load += w[i] + extra;
      ++count;
    }
    layout.push_back(count);
    if (out)
      *out = layout;
    return int64_t(layout.size()) <= chunks;
  };
  double lo = 0, hi = wHead + wTail;
  for (double x : w) {
    lo = std::max(lo, x);
    hi += x;
  }
  for (int iter = 0; iter < 40 && hi - lo > 1e-9 * hi; ++iter) {
    double mid = 0.5 * (lo + hi);
    (fill(mid, nullptr) ? hi : lo) = mid;
  }
  std::vector<int64_t> layout;
  fill(hi, &layout);
  // Fewer chunks than asked: split the largest until there are enough.
  while (int64_t(layout.size()) < chunks) {
    auto big = std::max_element(layout.begin(), layout.end());
    int64_t half = *big / 2;
    *big -= half;
    layout.insert(big + 1, half);
  }
  return layout;
}

const PlanCost::Pipeline &PlanCost::pipeline(const Plan &p) {
  uint64_t layoutHash = llvm::hash_combine_range(p.layout.begin(), p.layout.end());
  uint64_t key = llvm::hash_combine(p.tp, p.cp, p.ep, p.microBatch, int(p.recompute),
                                    p.sequenceParallel, p.pp, p.vpp, layoutHash);
  auto found = pipelineMemo.find(key);
  if (found != pipelineMemo.end())
    return found->second;
  const std::vector<LayerCost> &costs = layerCosts(p);
  const int64_t chunks = p.pp * p.vpp;
  LayerCost head = outerCost(p, true, chunks == 1), tail = outerCost(p, chunks == 1, true);
  if (chunks == 1)
    tail = LayerCost(); // both in `head`

  std::vector<int64_t> layout = p.layout;
  if (layout.empty()) {
    if (chunks == 1) {
      layout = {m.layers};
    } else {
      uint64_t key = llvm::hash_combine(p.tp, p.cp, p.ep, p.microBatch, int(p.recompute),
                                        p.sequenceParallel, p.pp, p.vpp);
      auto [it, inserted] = layoutMemo.try_emplace(key);
      if (inserted)
        it->second = balance(p, costs, head, tail);
      layout = it->second;
    }
  }

  Stage empty{};
  empty.kindCount.assign(shapes.size(), 0);
  std::vector<Stage> stages(p.pp, empty);
  int64_t layer = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    Stage &st = stages[c % p.pp];
    auto add = [&](const LayerCost &lc) {
      st.forward += lc.forward;
      st.backward += lc.backward;
      st.weight += lc.weight;
      st.recompute += lc.recompute;
      for (size_t k = 0; k < lc.comm.size(); ++k) {
        st.exposed[k] += lc.exposedComm[k];
        st.comm[k] += lc.comm[k];
      }
      st.params += lc.parameters;
      st.expertParams += lc.expertParameters;
      st.saved += lc.savedBytes;
      st.working = std::max(st.working, lc.workingBytes);
    };
    auto addOuter = [&](const LayerCost &lc) {
      add(lc);
      st.outerParams += lc.parameters + lc.expertParameters;
    };
    if (c == 0)
      addOuter(head);
    for (int64_t i = 0; i < layout[c]; ++i, ++layer) {
      const LayerCost &lc = costs[shapeOf[layer]];
      add(lc);
      st.largestLayerParams =
          std::max(st.largestLayerParams, lc.parameters + lc.expertParameters);
      ++st.layers;
      ++st.kindCount[shapeOf[layer]];
    }
    if (c == chunks - 1 && chunks > 1)
      addOuter(tail);
  }

  Pipeline &out = pipelineMemo[key];
  // The chunks one by one, for the schedule simulator.
  layer = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    LayerCost sum;
    auto add = [&](const LayerCost &lc) {
      sum.forward += lc.forward;
      sum.backward += lc.backward;
      sum.weight += lc.weight;
      sum.recompute += lc.recompute;
      for (size_t k = 0; k < lc.comm.size(); ++k)
        sum.exposedComm[k] += lc.exposedComm[k];
      sum.savedBytes += lc.savedBytes;
    };
    if (c == 0)
      add(head);
    for (int64_t i = 0; i < layout[c]; ++i, ++layer)
      add(costs[shapeOf[layer]]);
    if (c == chunks - 1 && chunks > 1)
      add(tail);
    double exposed = 0;
    for (double e : sum.exposedComm)
      exposed += e;
    double compute = sum.forward + sum.backward;
    double share = compute > 0 ? sum.forward / compute : 0.5;
    out.chunkForward.push_back(sum.forward + exposed * share);
    out.chunkBackward.push_back(sum.backward + sum.recompute + exposed * (1 - share));
    out.chunkSaved.push_back(sum.savedBytes);
    out.chunkWeight.push_back(sum.weight);
  }
  out.layout = std::move(layout);
  out.stages = std::move(stages);
  return out;
}
