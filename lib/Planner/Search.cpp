//===- Search.cpp - the planner's search over parallel plans -------------===//

#include "braid/Planner/Search.h"

#include <algorithm>
#include <chrono>

using namespace braid::plan;

namespace {
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      small.push_back(d);
      if (d != n / d)
        large.push_back(n / d);
    }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

bool hasExperts(const ModelShape &m) {
  for (LayerShape s : m.layerShapes)
    if (s.ffn == Ffn::MoE)
      return true;
  return false;
}

/// Calls `visit(grid)` for every factorization of `gpus` whose axes can
/// shard `model` at all: a plan with its dp, ep, cp, tp and pp set, the rest
/// default.
template <typename Visit>
void forEachGrid(PlanCost &cost, int64_t gpus, Visit visit) {
  const ModelShape &m = cost.model();
  bool experts = hasExperts(m);
  for (int64_t tp : divisors(gpus)) {
    if (tp > cost.hardware().devicesPerNode)
      break;
    for (int64_t cp : divisors(gpus / tp))
      for (int64_t pp : divisors(gpus / tp / cp)) {
        if (pp > m.layers)
          break;
        for (int64_t ep : divisors(gpus / tp / cp / pp)) {
          if (ep > 1 && (!experts || m.experts % ep))
            continue;
          Plan grid;
          grid.tp = tp;
          grid.cp = cp;
          grid.pp = pp;
          grid.ep = ep;
          grid.dp = gpus / tp / cp / pp / ep;
          visit(grid);
        }
      }
  }
}
} // namespace

RankedPlan braid::plan::leanestPlan(PlanCost &cost, int64_t gpus) {
  RankedPlan best;
  double bestBytes = -1;
  forEachGrid(cost, gpus, [&](const Plan &grid) {
    Plan p = grid;
    p.microbatches = p.pp;
    p.zero = 3;
    p.recompute = Recompute::Full;
    Estimate e = cost.memory(p);
    if (e.valid && (bestBytes < 0 || e.memoryBytes() < bestBytes)) {
      bestBytes = e.memoryBytes();
      best = {p, e};
    }
  });
  return best;
}

int64_t braid::plan::smallestCluster(PlanCost &cost, RankedPlan *plan) {
  auto fits = [&](int64_t gpus) {
    RankedPlan r = leanestPlan(cost, gpus);
    if (r.estimate.valid && r.estimate.fits) {
      if (plan)
        *plan = r;
      return true;
    }
    return false;
  };
  int64_t node = cost.hardware().devicesPerNode;
  for (int64_t g = 1; g < node; g *= 2)
    if (fits(g))
      return g;
  // Doubling to a size that fits, then the fewest nodes below it (in at
  // most 64 probes).
  int64_t hi = node;
  while (hi <= (int64_t(1) << 24) && !fits(hi))
    hi *= 2;
  if (hi > (int64_t(1) << 24))
    return 0;
  int64_t lo = hi / 2, step = std::max(node, (hi - lo) / 64 / node * node);
  for (int64_t g = lo + step; g < hi; g += step)
    if (fits(g))
      return g;
  fits(hi);
  return hi;
}

namespace {
/// One search: the grids in turn, each with its virtual stages; a group of
/// plans sharing them is tried when its most frugal member fits.
class Search {
public:
  Search(PlanCost &cost, const SearchOptions &o) : cost(cost), o(o), m(cost.model()) {
    maxZero = *std::max_element(o.zeroStages.begin(), o.zeroStages.end());
    for (Recompute r : o.recomputes)
      frugalRecompute = std::max(frugalRecompute, r);
  }

  SearchResult run();

private:
  PlanCost &cost;
  const SearchOptions &o;
  const ModelShape &m;
  int maxZero;
  Recompute frugalRecompute = Recompute::None;
  double leanestBytes = -1;
  SearchResult result;

  void searchGroup(const Plan &base, int64_t perReplica);
  void keep(const Plan &p, const Estimate &e);
  void rankBySimulation();
};

SearchResult Search::run() {
  auto start = std::chrono::steady_clock::now();
  // The grids first, to report progress as a fraction of them.
  std::vector<Plan> grids;
  forEachGrid(cost, o.gpus, [&](const Plan &grid) { grids.push_back(grid); });

  for (size_t gi = 0; gi < grids.size(); ++gi) {
    const Plan &g = grids[gi];
    if (o.progress)
      o.progress(double(gi) / grids.size(), result.evaluated, result.fitting);
    int64_t replicas = g.dp * g.ep;
    if (o.globalBatch % replicas)
      continue;
    int64_t perReplica = o.globalBatch / replicas;
    for (int64_t vpp = 1; vpp <= (g.pp > 1 ? o.maxVirtualStages : 1); ++vpp) {
      if (g.pp * vpp > m.layers)
        break;
      Plan base = g;
      base.vpp = vpp;
      searchGroup(base, perReplica);
    }
  }
  rankBySimulation();
  if (o.progress)
    o.progress(1.0, result.evaluated, result.fitting);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::move(result);
}

// The plans of `base`'s axes and virtual stages, `perReplica` sequences per
// data-parallel replica: every micro-batch size, ZeRO stage, recompute
// policy and (with a pipeline) schedule.
void Search::searchGroup(const Plan &base, int64_t perReplica) {
  // The most frugal member of the group: if it does not fit, none does.
  Plan frugal = base;
  frugal.microbatches = perReplica;
  frugal.zero = maxZero;
  frugal.recompute = frugalRecompute;
  ++result.memoryChecked;
  Estimate fe = cost.memory(frugal);
  if (!fe.valid)
    return;
  if (leanestBytes < 0 || fe.memoryBytes() < leanestBytes) {
    leanestBytes = fe.memoryBytes();
    result.leanest = {frugal, fe};
  }
  if (!fe.fits)
    return;
  for (int64_t mb : divisors(perReplica)) {
    if (mb > o.maxMicroBatch)
      break;
    for (int zero : o.zeroStages) {
      if (zero > 0 && base.dp * base.ep * base.cp == 1)
        continue; // nothing to shard over
      for (Recompute rc : o.recomputes)
        // A pipeline without virtual stages: 1F1B, and ZB-H1.
        for (bool zb : {false, true}) {
          if (zb && (base.pp == 1 || base.vpp > 1 || !cost.runtime().zeroBubbleSchedule))
            continue;
          Plan p = base;
          p.microBatch = mb;
          p.microbatches = perReplica / mb;
          p.zero = zero;
          p.recompute = rc;
          p.zeroBubble = zb;
          Estimate e = cost.estimate(p);
          if (!e.valid)
            continue;
          ++result.evaluated;
          if (!e.fits)
            continue;
          ++result.fitting;
          keep(p, e);
        }
    }
  }
}

// The closed form ranks; the schedule simulator then re-times the first
// few (four times as many as asked), which may reorder them.
void Search::keep(const Plan &p, const Estimate &e) {
  const size_t kept = std::max<size_t>(4 * o.top, 16);
  auto pos = std::upper_bound(result.best.begin(), result.best.end(), e.stepSeconds,
                              [](double t, const RankedPlan &r) {
                                return t < r.estimate.stepSeconds;
                              });
  if (size_t(pos - result.best.begin()) >= kept)
    return;
  result.best.insert(pos, {p, e});
  if (result.best.size() > kept)
    result.best.pop_back();
}

void Search::rankBySimulation() {
  std::vector<RankedPlan> simulated;
  for (RankedPlan &r : result.best) {
    Estimate e = cost.simulate(r.plan);
    if (e.valid && e.fits)
      simulated.push_back({r.plan, e});
  }
  std::stable_sort(simulated.begin(), simulated.end(),
                   [](const RankedPlan &a, const RankedPlan &b) {
                     return a.estimate.stepSeconds < b.estimate.stepSeconds;
                   });
  if (simulated.size() > o.top)
    simulated.resize(o.top);
  result.best = std::move(simulated);
}
} // namespace

SearchResult braid::plan::searchPlans(PlanCost &cost, const SearchOptions &o) {
  return Search(cost, o).run();
}
