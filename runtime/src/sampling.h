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
// thread count or how the vocabulary is split. The arithmetic is
// sampling_rows.h's, which the sampling kernels (braid.sample) share;
// sampleToken, which orders the whole row, is their reference.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SAMPLING_H
#define BRAID_RUNTIME_SAMPLING_H

#include "sampling_rows.h"

#include <cstddef>
#include <cstdint>

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

/// The uniform in [0, 1) of step `step` of request `request`
/// (sampling_rows.h: uniformOf of the stream seed + request).
inline double uniformAt(uint64_t seed, int64_t request, int64_t step) {
  return uniformOf(seed + uint64_t(request), step);
}

/// The per-row parameters of `options`.
inline RowParams rowParams(const SamplingOptions &options) {
  RowParams p;
  p.temperature = options.temperature;
  p.topK = options.topK;
  p.topP = options.topP;
  return p;
}

} // namespace sampling

} // namespace braid::rt

#endif // BRAID_RUNTIME_SAMPLING_H
