//===- SampleSchedule.h - the split sampler's phases and words --*- C++ -*-===//
//
// The numbers of runtime/src/sampling_rows.h that the compiler states in
// types and op sequences: the phases each mode runs (a program is a fixed
// sequence of exchanges), the words per row each phase sends, the words of
// a row's state. The kernels check nothing of these beyond the shapes the
// ops' verifiers guarantee.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_SAMPLESCHEDULE_H
#define BRAID_DIALECT_BRAID_IR_SAMPLESCHEDULE_H

#include "dialects/braid/IR/BraidEnums.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace mlir::braid {

/// Rounds of the top-p search (sampling_rows.h's kSearchRounds, which a
/// static_assert there ties to this number).
inline constexpr int64_t kSampleSearchRounds = 8;
/// Thresholds per search round.
inline constexpr int64_t kSampleProbes = 63;
/// Words of a row's state before its per-rank words.
inline constexpr int64_t kSampleStateHeader = 10;

/// Words per row a rank sends in `phase`, `topKCap` candidates in Mass.
inline int64_t getSampleWords(SamplePhase phase, int64_t topKCap) {
  switch (phase) {
  case SamplePhase::Max:
  case SamplePhase::Shares:
    return 2;
  case SamplePhase::Mass:
    return 2 + 2 * topKCap;
  case SamplePhase::Search:
    return kSampleProbes;
  case SamplePhase::Draw:
    return 1;
  }
  return 0;
}

/// Words of a row's state over `ranks` ranks.
inline int64_t getSampleStateWords(int64_t ranks) {
  return kSampleStateHeader + 3 * ranks;
}

/// The phases `mode` runs, in order: each one exchange.
inline llvm::SmallVector<SamplePhase> getSampleSchedule(SampleMode mode) {
  llvm::SmallVector<SamplePhase> phases = {SamplePhase::Max};
  if (mode == SampleMode::Greedy)
    return phases;
  phases.push_back(SamplePhase::Mass);
  if (mode == SampleMode::Nucleus) {
    phases.append(kSampleSearchRounds, SamplePhase::Search);
    phases.push_back(SamplePhase::Shares);
  }
  phases.push_back(SamplePhase::Draw);
  return phases;
}

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_IR_SAMPLESCHEDULE_H
