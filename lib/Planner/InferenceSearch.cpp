//===- InferenceSearch.cpp - choosing serving layouts ---------------------===//
//
// Enumerates the colocated layouts of the cluster and the pairs of prefill
// and decode layouts with the split of GPUs between them, each evaluated at
// the batch its objective asks for (the largest that fits for throughput,
// the largest within the latency targets, the smallest that sustains a
// rate, one sequence a replica for latency). Layouts are evaluated once and
// pairs combined by arithmetic, so that a search over a thousand GPUs takes
// milliseconds.
//
//===----------------------------------------------------------------------===//

#include "braid/Planner/InferenceSearch.h"

#include "llvm/ADT/StringSwitch.h"

#include <chrono>
#include <cmath>

using namespace braid;
using namespace braid::plan;

llvm::Expected<ServeObjective> plan::parseServeObjective(llvm::StringRef name) {
  std::optional<ServeObjective> o = llvm::StringSwitch<std::optional<ServeObjective>>(name)
                                        .Case("latency", ServeObjective::Latency)
                                        .Case("throughput", ServeObjective::Throughput)
                                        .Case("targets", ServeObjective::Targets)
                                        .Default(std::nullopt);
  if (!o)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--objective is latency, throughput or targets, not '" +
                                       name + "'");
  return *o;
}

const char *plan::serveObjectiveName(ServeObjective objective) {
  switch (objective) {
  case ServeObjective::Latency:
    return "latency";
  case ServeObjective::Throughput:
    return "throughput";
  case ServeObjective::Targets:
    return "targets";
  }
  return "?";
}

std::string ServeChoice::str() const {
  if (!disaggregated)
    return decode.str();
  return "prefill " + prefill.str() + " x" + std::to_string(prefillInstances) + " + decode " +
         decode.str() + " x" + std::to_string(decodeInstances);
}

static double endToEnd(const ServeEstimate &e, int64_t output) {
  return e.ttftSeconds + (output - 1) * e.tpotSeconds;
}

bool plan::servesBetter(const ServeChoice &a, const ServeChoice &b,
                        const ServeSearchOptions &options, int64_t output) {
  if (options.objective == ServeObjective::Latency || options.rate > 0) {
    double la = endToEnd(a.est, output), lb = endToEnd(b.est, output);
    if (la != lb)
      return la < lb;
  }
  if (a.est.tokensPerSecondPerGpu != b.est.tokensPerSecondPerGpu)
    return a.est.tokensPerSecondPerGpu > b.est.tokensPerSecondPerGpu;
  return a.gpus() < b.gpus();
}

namespace {
/// Evaluates one layout at a batch, by the options' batching.
struct Evaluator {
  const InferenceCost &cost;
  const ServeSearchOptions &options;
  bool refill; ///< false: a decode instance of a disaggregated layout

  ServeEstimate at(const ServeLayout &l, int64_t batch) const {
    return options.staticBatching ? cost.staticBatch(l, batch)
                                  : cost.continuous(l, batch, refill);
  }
  bool withinTargets(const ServeEstimate &e) const {
    return (options.ttftTarget <= 0 || e.ttftSeconds <= options.ttftTarget) &&
           (options.tpotTarget <= 0 || e.tpotSeconds <= options.tpotTarget);
  }
  /// The largest batch in [lo, hi] (multiples of `step`) for which `ok`
  /// holds, given that it holds at lo and fails from some point on.
  template <typename Ok>
  int64_t largest(int64_t lo, int64_t hi, int64_t step, Ok ok) const {
    while (hi - lo >= step) {
      int64_t mid = lo + (hi - lo) / step / 2 * step;
      if (mid == lo)
        mid = lo + step;
      if (ok(mid))
        lo = mid;
      else
        hi = mid - step;
    }
    return lo;
  }

  /// The estimate at the batch the options ask for; `needTokens`: the output
  /// tokens per second this layout must sustain (a rate's share).
  ServeEstimate choose(const ServeLayout &l, double needTokens) const {
    int64_t step = l.dp * l.pp, maxBatch = cost.maxBatch(l);
    ServeEstimate e;
    if (options.batch > 0) {
      e = at(l, options.batch);
    } else if (needTokens > 0) {
      if (maxBatch < step)
        return invalid(l, maxBatch);
      ServeEstimate most = at(l, maxBatch);
      if (most.tokensPerSecond < needTokens) {
        most.valid = false;
        most.invalidReason = "at its largest batch (" + std::to_string(maxBatch) +
                             ") it sustains " + std::to_string(int64_t(most.tokensPerSecond)) +
                             " output tokens/s, not the rate's " +
                             std::to_string(int64_t(needTokens));
        return most;
      }
      // The smallest batch that sustains the rate: the largest that does not.
      int64_t below = largest(0, maxBatch, step, [&](int64_t b) {
        return b == 0 || at(l, b).tokensPerSecond < needTokens;
      });
      e = at(l, std::min(maxBatch, below + step));
    } else if (options.objective == ServeObjective::Latency) {
      e = at(l, l.dp);
    } else if (options.objective == ServeObjective::Targets) {
      if (maxBatch < step)
        return invalid(l, maxBatch);
      if (!withinTargets(at(l, step))) {
        e = at(l, step);
        e.valid = false;
        e.invalidReason = "misses the latency targets even at batch " + std::to_string(step);
        return e;
      }
      e = at(l, largest(step, maxBatch, step, [&](int64_t b) { return withinTargets(at(l, b)); }));
    } else {
      if (maxBatch < step)
        return invalid(l, maxBatch);
      e = at(l, maxBatch);
    }
    if (e.valid && !e.fits) {
      e.valid = false;
      e.invalidReason = "does not fit at batch " + std::to_string(e.batch) + ": needs " +
                        std::to_string(int64_t(e.memory.total() / (1ull << 30) + 0.5)) +
                        " GiB per GPU; the largest batch that fits is " +
                        std::to_string(maxBatch);
    }
    if (e.valid && options.objective == ServeObjective::Targets && !withinTargets(e)) {
      e.valid = false;
      e.invalidReason = "misses the latency targets";
    }
    return e;
  }

  ServeEstimate invalid(const ServeLayout &l, int64_t maxBatch) const {
    ServeEstimate e = at(l, l.dp * l.pp);
    e.valid = false;
    e.maxBatch = maxBatch;
    e.invalidReason = "does not fit: the weights and workspace alone need " +
                      std::to_string(int64_t(
                          (e.memory.weights + e.memory.activations + e.memory.workspace) /
                              (1ull << 30) +
                          0.5)) +
                      " GiB per GPU";
    return e;
  }
};
} // namespace

ServeChoice plan::evaluateColocated(const InferenceCost &cost, const ServeLayout &layout,
                                    const ServeSearchOptions &options) {
  ServeChoice c;
  c.decode = layout;
  if (std::string why = cost.check(layout); !why.empty()) {
    c.est.invalidReason = why;
    return c;
  }
  Evaluator ev{cost, options, true};
  c.est = ev.choose(layout, options.rate * cost.workload().output);
  return c;
}

/// The KV cache of a prompt sent from a prefill instance to a decode one:
/// over NVLink within a node, else over the network, each GPU of the
/// smaller instance sending its share.
static double transferSeconds(const InferenceCost &cost, const ServeLayout &prefill,
                              const ServeLayout &decode, int64_t gpus) {
  const cost::Hardware &hw = cost.hardware();
  ServeLayout whole;
  double bytes = cost.workload().prompt * cost.cacheBytesPerToken(whole) +
                 cost.stateBytesPerSequence(whole);
  const cost::LinkClass &link = gpus <= hw.devicesPerNode ? hw.intraNode : hw.interNode;
  double senders = std::min(prefill.tp * prefill.pp * prefill.cp, decode.tp * decode.pp);
  return hw.collectiveLatency + link.stepLatency + bytes / (link.bytesPerSecond * senders);
}

ServeChoice plan::evaluateDisaggregated(const InferenceCost &cost, const ServeLayout &prefill,
                                        const ServeLayout &decode,
                                        const ServeSearchOptions &options,
                                        int64_t prefillInstances) {
  ServeChoice c;
  c.disaggregated = true;
  c.prefill = prefill;
  c.decode = decode;
  for (const ServeLayout *l : {&prefill, &decode})
    if (std::string why = cost.check(*l); !why.empty()) {
      c.est.invalidReason = why;
      return c;
    }
  int64_t output = cost.workload().output;
  double promptRate = cost.prefillRate(prefill, 1);
  int64_t pg = prefill.gpus(), dg = decode.gpus();
  // The split: the given count of prefill instances, or the one that
  // balances the prompts prefilled with the tokens decoded (with a rate:
  // the fewest prefill instances that keep up with it).
  Evaluator ev{cost, options, false};
  auto at = [&](int64_t np) {
    ServeChoice s = c;
    s.prefillInstances = np;
    s.decodeInstances = (options.gpus - np * pg) / dg;
    // The batch and the rate are the cluster's: each decode instance takes
    // its share.
    int64_t instances = std::max<int64_t>(1, s.decodeInstances);
    ServeSearchOptions perInstance = options;
    if (options.batch > 0)
      perInstance.batch = std::max<int64_t>(1, options.batch / instances);
    Evaluator one{cost, perInstance, false};
    double need = options.rate * output / instances;
    ServeEstimate d = one.choose(decode, need);
    s.est = d;
    if (s.decodeInstances < 1) {
      s.est.valid = false;
      s.est.invalidReason = "no GPUs left for decode";
      return s;
    }
    double tokens = std::min(np * promptRate * output, s.decodeInstances * d.tokensPerSecond);
    s.est.batch = d.batch * s.decodeInstances;
    s.est.tokensPerSecond = tokens;
    s.est.tokensPerSecondPerGpu = tokens / options.gpus;
    s.transferSeconds = transferSeconds(cost, prefill, decode, options.gpus);
    PhaseTime p = cost.prefill(prefill, 1, cost.workload().prompt);
    s.est.prefill = p;
    s.est.ttftSeconds = p.total() + s.transferSeconds;
    MemoryUse pm = cost.memory(prefill, 1);
    if (pm.total() > d.memory.total())
      s.est.memory = pm;
    if (pm.total() > cost.hardware().memoryBytes) {
      s.est.valid = false;
      s.est.invalidReason = "the prefill layout does not fit";
    }
    if (options.rate > 0 && np * promptRate < options.rate) {
      s.est.valid = false;
      s.est.invalidReason = "its prefill instances do not keep up with the rate";
    }
    if (s.est.valid && options.objective == ServeObjective::Targets && !ev.withinTargets(s.est)) {
      s.est.valid = false;
      s.est.invalidReason = "misses the latency targets";
    }
    return s;
  };
  if (prefillInstances > 0)
    return at(prefillInstances);
  int64_t most = (options.gpus - dg) / pg;
  if (most < 1) {
    c.est.invalidReason = "the cluster holds no prefill instance beside a decode instance";
    return c;
  }
  if (options.rate > 0)
    return at(std::min<int64_t>(most, std::max<int64_t>(1, std::ceil(options.rate / promptRate))));
  ServeChoice first = at(1);
  if (!first.est.valid)
    return first;
  ServeChoice best = first;
  int64_t lo = 1, hi = most;
  // Output rate rises with np while prefill limits it, then falls: a
  // ternary search over the integers, then the neighbours.
  while (hi - lo > 2) {
    int64_t m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
    if (at(m1).est.tokensPerSecond < at(m2).est.tokensPerSecond)
      lo = m1 + 1;
    else
      hi = m2 - 1;
  }
  for (int64_t np = std::max<int64_t>(1, lo - 1); np <= std::min(most, hi + 1); ++np) {
    ServeChoice s = at(np);
    if (s.est.valid && (!best.est.valid || s.est.tokensPerSecond > best.est.tokensPerSecond))
      best = s;
  }
  return best;
}

/// Divisors of n up to `most`.
static std::vector<int64_t> divisors(int64_t n, int64_t most) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= std::min(n, most); ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

/// The tensor-parallel sizes: powers of two within a node.
static std::vector<int64_t> tpSizes(const InferenceCost &cost, int64_t gpus) {
  std::vector<int64_t> sizes;
  for (int64_t tp = 1; tp <= std::min(gpus, cost.hardware().devicesPerNode); tp *= 2)
    sizes.push_back(tp);
  return sizes;
}

/// Expert parallelism over a stage's `ranks` (dp x tp): none, or all of them.
static std::vector<int64_t> epSizes(const InferenceCost &cost, int64_t ranks) {
  std::vector<int64_t> sizes{1};
  if (cost.model().experts > 1 && ranks > 1 && cost.model().experts % ranks == 0)
    sizes.push_back(ranks);
  return sizes;
}

ServeSearchResult plan::searchServing(const InferenceCost &cost,
                                      const ServeSearchOptions &options) {
  auto start = std::chrono::steady_clock::now();
  ServeSearchResult result;
  const ModelShape &m = cost.model();
  int64_t g = options.gpus;
  std::vector<ServeChoice> all;
  auto keep = [&](ServeChoice c) {
    ++result.evaluated;
    if (c.est.valid)
      all.push_back(std::move(c));
  };
  // Colocated: dp replicas of pp x tp; experts over a divisor of dp x tp.
  for (int64_t tp : tpSizes(cost, g))
    for (int64_t pp : divisors(g / tp, m.layers)) {
      ServeLayout l;
      l.tp = tp;
      l.pp = pp;
      l.dp = g / (tp * pp);
      if (g % (tp * pp))
        continue;
      for (int64_t ep : epSizes(cost, l.dp * tp)) {
        l.ep = ep;
        if (cost.check(l).empty())
          keep(evaluateColocated(cost, l, options));
      }
    }
  // Disaggregated: prefill instances of pp x cp x tp, decode instances of
  // pp x dp x tp with ep over dp x tp (dp > 1 only with ep: data-parallel
  // attention; plain replicas are more instances).
  if (options.disaggregate && g >= 2) {
    std::vector<ServeLayout> prefills, decodes;
    for (int64_t tp : tpSizes(cost, g))
      for (int64_t pp = 1; pp <= m.layers && tp * pp < g; pp *= 2) {
        for (int64_t cp = 1; cp <= 16 && tp * pp * cp < g; cp *= 2) {
          ServeLayout l;
          l.tp = tp, l.pp = pp, l.cp = cp;
          if (cost.check(l).empty() && cost.memory(l, 1).total() <= cost.hardware().memoryBytes)
            prefills.push_back(l);
        }
        for (int64_t dp = 1; tp * pp * dp < g; dp *= 2)
          for (int64_t ep : epSizes(cost, dp * tp)) {
            if (dp > 1 && ep == 1)
              continue;
            ServeLayout l;
            l.tp = tp, l.pp = pp, l.dp = dp, l.ep = ep;
            if (cost.check(l).empty() && cost.maxBatch(l) >= l.dp * l.pp)
              decodes.push_back(l);
          }
      }
    for (const ServeLayout &p : prefills)
      for (const ServeLayout &d : decodes)
        if (p.gpus() + d.gpus() <= g)
          keep(evaluateDisaggregated(cost, p, d, options));
  }
  int64_t output = cost.workload().output;
  llvm::stable_sort(all, [&](const ServeChoice &a, const ServeChoice &b) {
    return servesBetter(a, b, options, output);
  });
  if (all.size() > options.top)
    all.resize(options.top);
  result.best = std::move(all);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}
