//===- generate_ranks.h - generation's exchanges between ranks --*- C++ -*-===//
//
// What the generation driver (driver_generate.cpp) exchanges between ranks
// outside the programs: the sizes each pipeline stage's programs know part
// of (prefill's tokens on the first stage, its logits on the last), and the
// logits the last stage computed, which every rank samples from. Collective
// over the ranks named; every rank calls them at the same points.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_GENERATE_RANKS_H
#define BRAID_RUNTIME_GENERATE_RANKS_H

#include "rt_impl.h"

#include <cstdint>
#include <vector>

namespace braid::rt {

/// Each entry of `values` replaced by its maximum over every rank.
void maxOverRanks(braid_rt *rt, std::vector<int32_t> &values);

/// The sum of `value` over the ranks of the pipeline's stage axis (one per
/// stage, this rank's coordinates on the other axes); `value` itself when
/// the program is not pipelined.
int64_t sumOverStages(braid_rt *rt, int64_t value);

/// `values` (`count` logits on the last stage, empty elsewhere) on every rank:
/// the last stage broadcasts them along the stage axis. Nothing to do when
/// the program is not pipelined.
void shareFromLastStage(braid_rt *rt, std::vector<float> &values, int64_t count);
/// The same for the ids the last stage sampled.
void shareFromLastStage(braid_rt *rt, std::vector<int32_t> &values, int64_t count);

} // namespace braid::rt

#endif // BRAID_RUNTIME_GENERATE_RANKS_H
