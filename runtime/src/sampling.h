//===- sampling.h - choosing the next token from logits ---------*- C++ -*-===//
//
// Host-side sampling of generation (driver_generate.cpp). Greedy (temperature
// 0) takes the lowest index among equal maxima. Otherwise each token weighs
// exp((logit - max) / T), computed in double and held as a fixed-point
// integer of kWeightBits fraction bits (weightOf), so that sums of weights do
// not depend on the order they are added in: a sampler whose ranks each hold
// a block of the vocabulary (sampling_parallel.h) sums them as one rank
// does. The candidates are ordered by weight, ties by index; the kept set is
// the top-k of that order (k > 0) and then its smallest prefix whose mass
// reaches top-p of the kept mass (p < 1). One token of the kept set is drawn
// with a uniform u from rng.h's counter-based generator keyed by (seed +
// request, "sample") at counter `step`: the first, in index order, whose
// running mass exceeds floor(u * kept mass). A request's sequence depends on
// the seed, its index and its logits only, not on the batch it shared, the
// thread count or how the vocabulary is split.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SAMPLING_H
#define BRAID_RUNTIME_SAMPLING_H

#include <cstddef>
#include <cstdint>
#include <optional>

namespace braid::rt {

struct SamplingOptions {
  double temperature = 0; ///< 0: greedy
  int64_t topK = 0;       ///< 0: every token
  double topP = 1;        ///< 1: every token
};

/// The token chosen from `logits` (`vocab` f32 values) for step `step` of
/// request `request` under the run's `seed`.
int32_t sampleToken(const float *logits, int64_t vocab, const SamplingOptions &options,
                    uint64_t seed, int64_t request, int64_t step);

namespace sampling {

/// Fraction bits of a weight: a weight is at most 1 << kWeightBits, so that
/// the sum over a vocabulary of up to 2^23 tokens fits 63 bits.
constexpr int kWeightBits = 40;

/// exp((logit - top) / temperature) in double, truncated to kWeightBits
/// fraction bits (`top` the largest logit: the weight is at most 1).
uint64_t weightOf(float logit, float top, double temperature);

/// A token and its weight. Candidates are ordered heavier first, ties by
/// the lower index.
struct Candidate {
  uint64_t weight;
  int64_t index;
};
inline bool comesBefore(const Candidate &a, const Candidate &b) {
  return a.weight != b.weight ? a.weight > b.weight : a.index < b.index;
}

/// The uniform in [0, 1) of step `step` of request `request`.
double uniformAt(uint64_t seed, int64_t request, int64_t step);

/// The top-p threshold of a kept mass `total`: the nucleus is the shortest
/// prefix of the order whose mass reaches it.
uint64_t nucleusNeed(uint64_t total, double topP);

/// The draw's target in a kept mass `total` (> 0): the token drawn is the
/// first kept one, in index order, whose running mass exceeds it.
uint64_t drawTarget(uint64_t total, double uniform);

/// The token drawn from the first `count` candidates of the order (`prefix`,
/// ordered by comesBefore) of a vocabulary of `vocab` tokens whose weights
/// sum to `allMass`, with `uniform` from uniformAt; `complete` when the
/// prefix holds every candidate. nullopt when the prefix does not hold the
/// kept set (the top-k or the nucleus reaches beyond it): the caller extends
/// the prefix and asks again. The arithmetic is on integers, so that the
/// answer does not depend on how the prefix was assembled.
std::optional<int64_t> chooseFromPrefix(const Candidate *prefix, size_t count, bool complete,
                                        int64_t vocab, uint64_t allMass,
                                        const SamplingOptions &options, double uniform);

} // namespace sampling

} // namespace braid::rt

#endif // BRAID_RUNTIME_SAMPLING_H
