//===- sampling.h - choosing the next token from logits ---------*- C++ -*-===//
//
// Host-side sampling of generation (driver_generate.cpp). Greedy (temperature
// 0) takes the lowest index among equal maxima. Otherwise the logits are
// divided by the temperature, softmaxed in double, restricted to the top-k
// (k > 0) and then to the smallest prefix of the descending order whose mass
// reaches top-p (p < 1), renormalized, and one token is drawn with a uniform
// from rng.h's counter-based generator keyed by (seed + request, "sample")
// at counter `step`: a request's sequence depends on the seed, its index and
// its logits only, not on the batch it shared or the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SAMPLING_H
#define BRAID_RUNTIME_SAMPLING_H

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

} // namespace braid::rt

#endif // BRAID_RUNTIME_SAMPLING_H
