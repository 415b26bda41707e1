//===- sampling.cpp - choosing the next token from logits -----------------===//
//
// What sampling.h specifies. The order of the candidates is by weight, ties
// by index, and every sum is of fixed-point integers, so that the draw is a
// function of the logits alone (not of the order of a sum, nor of how a
// parallel sampler assembled the candidates). The draw walks the kept set in
// index order, which a parallel sampler can do without the set's order.
//
//===----------------------------------------------------------------------===//

#include "sampling.h"

#include "rng.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace braid::rt {

namespace {

int32_t greedy(const float *logits, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best])
      best = i;
  return int32_t(best);
}

} // namespace

namespace sampling {

uint64_t weightOf(float logit, float top, double temperature) {
  double p = std::exp((double(logit) - double(top)) / temperature);
  return uint64_t(std::ldexp(std::min(p, 1.0), kWeightBits));
}

/// A uniform in [0, 1) from the 53 high bits of two Philox words.
double uniformAt(uint64_t seed, int64_t request, int64_t step) {
  rng::Key key = rng::keyOf(seed + uint64_t(request), "sample");
  std::array<uint32_t, 4> bits = rng::bitsAt(key, uint64_t(step));
  uint64_t word = (uint64_t(bits[0]) << 32) | bits[1];
  return double(word >> 11) * 0x1.0p-53;
}

uint64_t nucleusNeed(uint64_t total, double topP) {
  return uint64_t(std::ceil(topP * double(total)));
}

uint64_t drawTarget(uint64_t total, double uniform) {
  return std::min(uint64_t(uniform * double(total)), total - 1);
}

std::optional<int64_t> chooseFromPrefix(const Candidate *prefix, size_t count, bool complete,
                                        int64_t vocab, uint64_t allMass,
                                        const SamplingOptions &options, double uniform) {
  size_t kept = size_t(vocab);
  if (options.topK > 0)
    kept = std::min(kept, size_t(options.topK));
  if (kept > count && !complete && (kept < size_t(vocab) || options.topP >= 1))
    return std::nullopt;
  // The kept mass: every weight, or the top-k's.
  uint64_t total = allMass;
  if (kept < size_t(vocab)) {
    total = 0;
    for (size_t i = 0; i < kept; ++i)
      total += prefix[i].weight;
  }
  if (options.topP < 1) {
    // The smallest prefix whose share of the kept mass reaches top-p (all
    // of them when rounding puts the threshold past the kept mass).
    const uint64_t need = nucleusNeed(total, options.topP);
    uint64_t mass = 0;
    size_t i = 0;
    for (; i < std::min(kept, count); ++i) {
      mass += prefix[i].weight;
      if (mass >= need)
        break;
    }
    if (i < std::min(kept, count)) {
      kept = i + 1;
      total = mass;
    } else if (kept > count && !complete) {
      return std::nullopt;
    }
  }
  // The draw, in index order among the kept.
  std::vector<Candidate> byIndex(prefix, prefix + std::min(kept, count));
  std::sort(byIndex.begin(), byIndex.end(),
            [](const Candidate &a, const Candidate &b) { return a.index < b.index; });
  const uint64_t target = drawTarget(total, uniform);
  uint64_t mass = 0;
  for (const Candidate &c : byIndex) {
    mass += c.weight;
    if (target < mass)
      return c.index;
  }
  return byIndex.back().index; // unreachable: the kept mass exceeds the target
}

} // namespace sampling

int32_t sampleToken(const float *logits, int64_t vocab, const SamplingOptions &options,
                    uint64_t seed, int64_t request, int64_t step) {
  if (options.temperature <= 0 || vocab <= 1)
    return greedy(logits, vocab);
  const float top = logits[greedy(logits, vocab)];
  std::vector<sampling::Candidate> order(static_cast<size_t>(vocab));
  uint64_t allMass = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    order[size_t(i)] = {sampling::weightOf(logits[i], top, options.temperature), i};
    allMass += order[size_t(i)].weight;
  }
  // Every token kept: no order needed, the draw is in index order.
  if (options.topK <= 0 && options.topP >= 1) {
    const uint64_t target =
        sampling::drawTarget(allMass, sampling::uniformAt(seed, request, step));
    uint64_t mass = 0;
    for (const sampling::Candidate &c : order)
      if (target < (mass += c.weight))
        return int32_t(c.index);
  }
  // Top-k keeps a prefix of at most k: only it needs the order.
  const size_t ordered = options.topK > 0 ? std::min(size_t(options.topK), order.size())
                                          : order.size();
  if (ordered < order.size())
    std::partial_sort(order.begin(), order.begin() + ptrdiff_t(ordered), order.end(),
                      sampling::comesBefore);
  else
    std::sort(order.begin(), order.end(), sampling::comesBefore);
  return int32_t(*sampling::chooseFromPrefix(order.data(), order.size(), /*complete=*/true,
                                             vocab, allMass, options,
                                             sampling::uniformAt(seed, request, step)));
}

} // namespace braid::rt
