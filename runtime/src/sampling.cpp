//===- sampling.cpp - choosing the next token from logits -----------------===//
//
// What sampling.h specifies. The order of the candidates is by probability,
// ties by index, so that the draw is a function of the logits alone.
//
//===----------------------------------------------------------------------===//

#include "sampling.h"

#include "rng.h"

#include <algorithm>
#include <cmath>
#include <numeric>
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

/// A uniform in [0, 1) from the 53 high bits of two Philox words.
double uniformAt(uint64_t seed, int64_t request, int64_t step) {
  rng::Key key = rng::keyOf(seed + uint64_t(request), "sample");
  std::array<uint32_t, 4> bits = rng::bitsAt(key, uint64_t(step));
  uint64_t word = (uint64_t(bits[0]) << 32) | bits[1];
  return double(word >> 11) * 0x1.0p-53;
}

} // namespace

int32_t sampleToken(const float *logits, int64_t vocab, const SamplingOptions &options,
                    uint64_t seed, int64_t request, int64_t step) {
  if (options.temperature <= 0 || vocab <= 1)
    return greedy(logits, vocab);
  // Softmax of logits / T in double, from the largest logit.
  double top = logits[greedy(logits, vocab)];
  std::vector<double> p(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    p[size_t(i)] = std::exp((double(logits[i]) - top) / options.temperature);
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return p[size_t(a)] != p[size_t(b)] ? p[size_t(a)] > p[size_t(b)] : a < b;
  });
  size_t kept = order.size();
  if (options.topK > 0)
    kept = std::min(kept, size_t(options.topK));
  double total = 0;
  for (size_t i = 0; i < kept; ++i)
    total += p[size_t(order[i])];
  if (options.topP < 1) {
    // The smallest prefix whose share of the kept mass reaches top-p.
    double mass = 0;
    for (size_t i = 0; i < kept; ++i) {
      mass += p[size_t(order[i])];
      if (mass >= options.topP * total) {
        kept = i + 1;
        total = mass;
        break;
      }
    }
  }
  double target = uniformAt(seed, request, step) * total;
  double mass = 0;
  for (size_t i = 0; i < kept; ++i) {
    mass += p[size_t(order[i])];
    if (target < mass)
      return order[i];
  }
  return order[kept - 1];
}

} // namespace braid::rt
