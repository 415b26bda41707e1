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
  std::vector<sampling::Candidate> scratch(order.size());
  return int32_t(sampling::chooseFromPrefix(order.data(), order.size(), /*complete=*/true, vocab,
                                            allMass, sampling::rowParams(options),
                                            sampling::uniformAt(seed, request, step),
                                            scratch.data()));
}

} // namespace braid::rt
