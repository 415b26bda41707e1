//===- Search.cpp - the planner's search over parallel plans -------------===//

#include "Search.h"

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

/// Calls `visit(tp, cp, pp, ep, dp)` for every factorization of `gpus` whose
/// axes can shard `model` at all.
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
          visit(tp, cp, pp, ep, gpus / tp / cp / pp / ep);
        }
      }
  }
}
} // namespace

RankedPlan braid::plan::leanestPlan(PlanCost &cost, int64_t gpus) {
  RankedPlan best;
  double bestBytes = -1;
  forEachGrid(cost, gpus, [&](int64_t tp, int64_t cp, int64_t pp, int64_t ep, int64_t dp) {
    Plan p;
    p.tp = tp;
    p.cp = cp;
    p.pp = pp;
    p.ep = ep;
    p.dp = dp;
    p.microbatches = pp;
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

SearchResult braid::plan::searchPlans(PlanCost &cost, const SearchOptions &o) {
  auto start = std::chrono::steady_clock::now();
  SearchResult result;
  const ModelShape &m = cost.model();
  int maxZero = *std::max_element(o.zeroStages.begin(), o.zeroStages.end());
  Recompute frugalRecompute = Recompute::None;
  for (Recompute r : o.recomputes)
    frugalRecompute = std::max(frugalRecompute, r);
  double leanestBytes = -1;

  // The grids first, to report progress as a fraction of them.
  struct Grid {
    int64_t tp, cp, pp, ep, dp;
  };
  std::vector<Grid> grids;
  forEachGrid(cost, o.gpus, [&](int64_t tp, int64_t cp, int64_t pp, int64_t ep, int64_t dp) {
    grids.push_back({tp, cp, pp, ep, dp});
  });

  // The closed form ranks; the schedule simulator then re-times the first
  // few (four times as many as asked), which may reorder them.
  const size_t kept = std::max<size_t>(4 * o.top, 16);
  auto keep = [&](const Plan &p, const Estimate &e) {
    auto pos = std::upper_bound(result.best.begin(), result.best.end(), e.stepSeconds,
                                [](double t, const RankedPlan &r) {
                                  return t < r.estimate.stepSeconds;
                                });
    if (size_t(pos - result.best.begin()) >= kept)
      return;
    result.best.insert(pos, {p, e});
    if (result.best.size() > kept)
      result.best.pop_back();
  };

  for (size_t gi = 0; gi < grids.size(); ++gi) {
    const Grid &g = grids[gi];
    if (o.progress)
      o.progress(double(gi) / grids.size(), result.evaluated, result.fitting);
    int64_t replicas = g.dp * g.ep;
    if (o.globalBatch % replicas)
      continue;
    int64_t perReplica = o.globalBatch / replicas;
    for (int64_t vpp = 1; vpp <= (g.pp > 1 ? o.maxVirtualStages : 1); ++vpp) {
      if (g.pp * vpp > m.layers)
        break;
      Plan base;
      base.tp = g.tp;
      base.cp = g.cp;
      base.pp = g.pp;
      base.ep = g.ep;
      base.dp = g.dp;
      base.vpp = vpp;
      // The most frugal member of the group: if it does not fit, none does.
      Plan frugal = base;
      frugal.microbatches = perReplica;
      frugal.zero = maxZero;
      frugal.recompute = frugalRecompute;
      ++result.memoryChecked;
      Estimate fe = cost.memory(frugal);
      if (!fe.valid)
        continue;
      if (leanestBytes < 0 || fe.memoryBytes() < leanestBytes) {
        leanestBytes = fe.memoryBytes();
        result.leanest = {frugal, fe};
      }
      if (!fe.fits)
        continue;
      for (int64_t mb : divisors(perReplica)) {
        if (mb > o.maxMicroBatch)
          break;
        for (int zero : o.zeroStages) {
          if (zero > 0 && g.dp * g.ep * g.cp == 1)
            continue; // nothing to shard over
          for (Recompute rc : o.recomputes)
            // A pipeline without virtual stages: 1F1B, and ZB-H1.
            for (bool zb : {false, true}) {
              if (zb && (g.pp == 1 || vpp > 1 || !cost.runtime().zeroBubbleSchedule))
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
  }
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
  if (o.progress)
    o.progress(1.0, result.evaluated, result.fitting);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}
