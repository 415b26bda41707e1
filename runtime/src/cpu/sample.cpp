//===- sample.cpp - braid.sample and its split pieces on the CPU ----------===//
//
// runtime_inference.h's braid_k_sample*: each row through sampling_rows.h's
// phases (the one copy of the arithmetic, which the CUDA kernels share). The
// whole-row kernel is the split one over a single rank: its words are its
// own gather.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include "../sampling_rows.h"

#include <algorithm>
#include <vector>

namespace {

using namespace braid::rt::sampling;

template <typename E> struct RowOf {
  const E *row;
  float operator()(int64_t i) const { return braid::load(row, i); }
};

RowParams paramsOf(const float *temperature, const int32_t *topK, const float *topP,
                   int64_t r) {
  RowParams p;
  p.temperature = temperature[r];
  p.topK = topK[r];
  p.topP = topP[r];
  return p;
}

/// This rank's valid columns of a split row.
int64_t validColumns(int64_t vocab, int64_t offset, int64_t columns) {
  const int64_t count = vocab - offset;
  return count < 0 ? 0 : count > columns ? columns : count;
}

void checkProblem(Problem problem, int64_t row, const RowParams &p, int64_t cap) {
  if (problem == kTopKPastCap)
    braid::cpu::fail("sample", "row %lld: top_k %lld exceeds the %lld candidates per rank "
                               "that the program's top_k_cap sends",
                     (long long)row, (long long)p.topK, (long long)cap);
}

/// Row `row`'s token from its state.
int32_t tokenOf(const uint64_t *state, int64_t row) {
  if (state[kStage] != kDecided)
    braid::cpu::fail("sample", "row %lld was not drawn: %s", (long long)row,
                     undecidedReason(state[kStage]));
  return int32_t(state[kToken]);
}

} // namespace

extern "C" {

void braid_k_sample(braid_rt *, braid_dtype dt, const void *logits, const int64_t *seeds,
                    const int64_t *steps, const float *temperature, const int32_t *top_k,
                    const float *top_p, int32_t *ids, int64_t rows, int64_t columns,
                    int64_t vocab, int64_t mode, int64_t top_k_cap) {
  braid::cpu::withFloatType(dt, "sample", [&](auto tag) {
    using E = decltype(tag);
    const int64_t count = validColumns(vocab, 0, columns), cap = top_k_cap;
    std::vector<uint64_t> state(size_t(stateWords(1))), words;
    std::vector<Candidate> scratch(size_t(2 * cap));
    int32_t phases[kMaxPhases];
    const int scheduled = scheduleOf(mode, phases);
    for (int64_t r = 0; r < rows; ++r) {
      const RowParams p = paramsOf(temperature, top_k, top_p, r);
      const Block<RowOf<E>> block{{static_cast<const E *>(logits) + r * columns}, count, 0};
      for (int i = 0; i < scheduled; ++i) {
        const int32_t phase = phases[i];
        words.assign(size_t(wordsOf(phase, cap)), 0);
        localWords(phase, block, state.data(), 1, p, cap, words.data());
        auto own = [&](int64_t) { return words.data(); };
        checkProblem(mergeWords(phase, own, 1, p, cap, vocab, uint64_t(seeds[r]), steps[r],
                                state.data(), scratch.data()),
                     r, p, cap);
      }
      ids[r] = tokenOf(state.data(), r);
    }
  });
}

void braid_k_sample_local(braid_rt *, braid_dtype dt, const void *logits, const int64_t *state,
                          const float *temperature, const int32_t *top_k, const float *top_p,
                          int64_t *words, int64_t rows, int64_t columns, int64_t offset,
                          int64_t vocab, int64_t phase, int64_t top_k_cap, int64_t ranks) {
  braid::cpu::withFloatType(dt, "sample_local", [&](auto tag) {
    using E = decltype(tag);
    const int64_t count = validColumns(vocab, offset, columns);
    const int64_t perRow = wordsOf(int32_t(phase), top_k_cap), perState = stateWords(ranks);
    for (int64_t r = 0; r < rows; ++r) {
      const Block<RowOf<E>> block{{static_cast<const E *>(logits) + r * columns}, count, offset};
      const auto *s = state ? reinterpret_cast<const uint64_t *>(state + r * perState) : nullptr;
      localWords(int32_t(phase), block, s, ranks, paramsOf(temperature, top_k, top_p, r),
                 top_k_cap, reinterpret_cast<uint64_t *>(words + r * perRow));
    }
  });
}

void braid_k_sample_merge(braid_rt *, const int64_t *gathered, const int64_t *state,
                          const float *temperature, const int32_t *top_k, const float *top_p,
                          const int64_t *seeds, const int64_t *steps, int64_t *result,
                          int64_t rows, int64_t ranks, int64_t vocab, int64_t phase,
                          int64_t top_k_cap) {
  const int64_t perRow = wordsOf(int32_t(phase), top_k_cap), perState = stateWords(ranks);
  std::vector<Candidate> scratch(size_t(2 * ranks * top_k_cap));
  const auto *all = reinterpret_cast<const uint64_t *>(gathered);
  for (int64_t r = 0; r < rows; ++r) {
    auto *s = reinterpret_cast<uint64_t *>(result + r * perState);
    if (state)
      std::copy(state + r * perState, state + (r + 1) * perState, result + r * perState);
    auto of = [&](int64_t k) { return all + (k * rows + r) * perRow; };
    const RowParams p = paramsOf(temperature, top_k, top_p, r);
    checkProblem(mergeWords(int32_t(phase), of, ranks, p, top_k_cap, vocab, uint64_t(seeds[r]),
                            steps[r], s, scratch.data()),
                 r, p, top_k_cap);
  }
}

void braid_k_sample_ids(braid_rt *, const int64_t *state, int32_t *ids, int64_t rows,
                        int64_t ranks) {
  const int64_t words = stateWords(ranks);
  for (int64_t r = 0; r < rows; ++r)
    ids[r] = tokenOf(reinterpret_cast<const uint64_t *>(state + r * words), r);
}

} // extern "C"
