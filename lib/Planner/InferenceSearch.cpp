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

#include <array>
#include <chrono>
#include <map>
#include <optional>
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

namespace {
/// A prefill instance's figures, which no split changes.
struct PrefillSide {
  double promptRate = 0; ///< prompts per second
  PhaseTime time;        ///< a prompt's prefill
  MemoryUse memory;
};
} // namespace

static PrefillSide prefillSide(const InferenceCost &cost, const ServeLayout &prefill) {
  return {cost.prefillRate(prefill, 1), cost.prefill(prefill, 1, cost.workload().prompt),
          cost.memory(prefill, 1)};
}

static ServeEstimate decodeSideAt(const InferenceCost &cost, const ServeLayout &decode,
                                  const ServeSearchOptions &options, int64_t instances) {
  ServeSearchOptions perInstance = options;
  if (options.batch > 0)
    perInstance.batch = std::max<int64_t>(1, options.batch / instances);
  Evaluator one{cost, perInstance, false};
  return one.choose(decode, options.rate * cost.workload().output / instances);
}

/// Decode sides already evaluated, by layout and number of instances (a
/// search meets the same ones for many prefill layouts).
using DecodeMemo = std::map<std::array<int64_t, 6>, ServeEstimate>;

/// A decode instance at the batch the options ask for, with the cluster's
/// batch or rate shared by `instances` of them.
static ServeEstimate decodeSide(const InferenceCost &cost, const ServeLayout &decode,
                                const ServeSearchOptions &options, int64_t instances,
                                DecodeMemo *memo = nullptr) {
  instances = std::max<int64_t>(1, instances);
  std::array<int64_t, 6> key{decode.tp, decode.pp, decode.ep, decode.dp, decode.cp, instances};
  if (memo)
    if (auto it = memo->find(key); it != memo->end())
      return it->second;
  ServeEstimate e = decodeSideAt(cost, decode, options, instances);
  if (memo)
    (*memo)[key] = e;
  return e;
}

/// The two sides combined on `np` prefill instances and the decode
/// instances the rest of the cluster holds; `shared`: the decode side when
/// it does not depend on their number (no batch or rate to share).
static ServeChoice combine(const InferenceCost &cost, const ServeLayout &prefill,
                           const ServeLayout &decode, const ServeSearchOptions &options,
                           const PrefillSide &p, const ServeEstimate *shared, int64_t np,
                           DecodeMemo *memo = nullptr) {
  ServeChoice s;
  s.disaggregated = true;
  s.prefill = prefill;
  s.decode = decode;
  s.prefillInstances = np;
  s.decodeInstances = (options.gpus - np * prefill.gpus()) / decode.gpus();
  s.est = shared ? *shared : decodeSide(cost, decode, options, s.decodeInstances, memo);
  if (s.decodeInstances < 1) {
    s.est.valid = false;
    s.est.invalidReason = "no GPUs left for decode";
    return s;
  }
  int64_t output = cost.workload().output;
  double tokens =
      std::min(np * p.promptRate * output, s.decodeInstances * s.est.tokensPerSecond);
  s.est.batch *= s.decodeInstances;
  s.est.tokensPerSecond = tokens;
  s.est.tokensPerSecondPerGpu = tokens / options.gpus;
  s.transferSeconds = transferSeconds(cost, prefill, decode, options.gpus);
  s.est.prefill = p.time;
  s.est.ttftSeconds = p.time.total() + s.transferSeconds;
  if (p.memory.total() > s.est.memory.total())
    s.est.memory = p.memory;
  if (p.memory.total() > cost.hardware().memoryBytes) {
    s.est.valid = false;
    s.est.invalidReason = "the prefill layout does not fit";
  }
  if (options.rate > 0 && np * p.promptRate < options.rate) {
    s.est.valid = false;
    s.est.invalidReason = "its prefill instances do not keep up with the rate";
  }
  Evaluator ev{cost, options, false};
  if (s.est.valid && options.objective == ServeObjective::Targets && !ev.withinTargets(s.est)) {
    s.est.valid = false;
    s.est.invalidReason = "misses the latency targets";
  }
  return s;
}

/// The split of the cluster between the two sides: the given count of
/// prefill instances, the fewest that keep up with a rate, or the count
/// that gives the most output tokens (the prompts prefilled against the
/// tokens decoded).
static ServeChoice split(const InferenceCost &cost, const ServeLayout &prefill,
                         const ServeLayout &decode, const ServeSearchOptions &options,
                         const PrefillSide &p, const ServeEstimate *shared,
                         int64_t prefillInstances, DecodeMemo *memo = nullptr) {
  int64_t pg = prefill.gpus(), dg = decode.gpus();
  if (prefillInstances > 0)
    return combine(cost, prefill, decode, options, p, shared, prefillInstances);
  int64_t most = (options.gpus - dg) / pg;
  if (most < 1) {
    ServeChoice c;
    c.disaggregated = true;
    c.prefill = prefill;
    c.decode = decode;
    c.est.invalidReason = "the cluster holds no prefill instance beside a decode instance";
    return c;
  }
  if (options.rate > 0)
    return combine(cost, prefill, decode, options, p, shared,
                   std::min<int64_t>(most, std::max<int64_t>(
                                               1, std::ceil(options.rate / p.promptRate))),
                   memo);
  // With the decode side shared, the output for each count is arithmetic
  // (with a batch shared among the decode instances, the count is chosen
  // at one instance's rate, then the batch shared).
  ServeEstimate once = shared ? *shared : decodeSide(cost, decode, options, 1, memo);
  int64_t best = 1;
  double bestTokens = -1, output = cost.workload().output;
  for (int64_t np = 1; np <= most; ++np) {
    double tokens = std::min(np * p.promptRate * output,
                             double((options.gpus - np * pg) / dg) * once.tokensPerSecond);
    if (tokens > bestTokens)
      best = np, bestTokens = tokens;
  }
  return combine(cost, prefill, decode, options, p, shared, best, memo);
}

ServeChoice plan::evaluateDisaggregated(const InferenceCost &cost, const ServeLayout &prefill,
                                        const ServeLayout &decode,
                                        const ServeSearchOptions &options,
                                        int64_t prefillInstances) {
  for (const ServeLayout *l : {&prefill, &decode})
    if (std::string why = cost.check(*l); !why.empty()) {
      ServeChoice c;
      c.disaggregated = true;
      c.prefill = prefill;
      c.decode = decode;
      c.est.invalidReason = why;
      return c;
    }
  std::optional<ServeEstimate> shared;
  if (options.batch == 0 && options.rate == 0)
    shared = decodeSide(cost, decode, options, 1);
  return split(cost, prefill, decode, options, prefillSide(cost, prefill),
               shared ? &*shared : nullptr, prefillInstances);
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
    // Each side evaluated once; the pairs and their splits are arithmetic
    // (but where a batch or a rate is shared among the decode instances).
    std::vector<PrefillSide> prefillSides;
    for (const ServeLayout &p : prefills)
      prefillSides.push_back(prefillSide(cost, p));
    bool sharedDecode = options.batch == 0 && options.rate == 0;
    DecodeMemo memo;
    std::vector<ServeEstimate> decodeSides;
    for (const ServeLayout &d : decodes)
      decodeSides.push_back(sharedDecode ? decodeSide(cost, d, options, 1) : ServeEstimate());
    for (auto [p, ps] : llvm::zip_equal(prefills, prefillSides))
      for (auto [d, ds] : llvm::zip_equal(decodes, decodeSides)) {
        if (p.gpus() + d.gpus() > g)
          continue;
        if (sharedDecode && !ds.valid) {
          ++result.evaluated;
          continue;
        }
        keep(split(cost, p, d, options, ps, sharedDecode ? &ds : nullptr, 0, &memo));
      }
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
