//===- sampling_parallel.cpp - sampling logits split by vocabulary --------===//
//
// What sampling_parallel.h specifies, as the fixed schedule of phases of
// sampling_rows.h (the braid.sample kernels' arithmetic): each phase's
// words of every row are all-gathered once and folded into each row's
// state, the same on every rank.
//
//===----------------------------------------------------------------------===//

#include "sampling_parallel.h"

#include "comm.h"
#include "rt_impl.h"

#include <algorithm>

namespace braid::rt {

namespace {

using namespace sampling;

/// A row of this rank's host block.
struct HostRow {
  const float *logits;
  float operator()(int64_t i) const { return logits[i]; }
};

/// Candidates per rank that a top-p without top-k tries before its search.
constexpr int64_t kNucleusCandidates = 16;

} // namespace

std::vector<int32_t> sampleTokensParallel(const VocabBlock &block, const WordGather &gather,
                                          const SamplingOptions &options, uint64_t seed,
                                          const std::vector<int64_t> &requests, int64_t step) {
  const auto rows = int64_t(requests.size());
  if (rows == 0)
    return {};
  const RowParams p = rowParams(options);
  const int64_t cap =
      options.topK > 0 ? options.topK : (options.topP < 1 ? kNucleusCandidates : 0);
  const bool greedy = options.temperature <= 0 || block.vocab <= 1;
  const Mode mode = greedy                                   ? kModeGreedy
                    : options.topK <= 0 && options.topP < 1 ? kModeNucleus
                                                             : kModeSample;
  int32_t phases[kMaxPhases];
  const int count = scheduleOf(mode, phases);
  std::vector<uint64_t> state;
  int64_t ranks = 1, words = 0;
  for (int i = 0; i < count; ++i) {
    const int32_t phase = phases[i];
    const int64_t perRow = wordsOf(phase, cap);
    std::vector<uint64_t> mine(size_t(rows * perRow));
    for (int64_t r = 0; r < rows; ++r)
      localWords(phase, Block<HostRow>{{block.logits + r * block.stride}, block.count, block.offset},
                 state.empty() ? nullptr : state.data() + r * words, ranks, p, cap,
                 mine.data() + r * perRow);
    std::vector<uint64_t> all = gather(mine);
    if (phase == kPhaseMax) {
      ranks = int64_t(all.size() / mine.size());
      words = stateWords(ranks);
      state.assign(size_t(rows * words), 0);
    }
    std::vector<Candidate> scratch(size_t(2 * ranks * cap));
    for (int64_t r = 0; r < rows; ++r) {
      auto of = [&](int64_t k) { return all.data() + (k * rows + r) * perRow; };
      mergeWords(phase, of, ranks, p, cap, block.vocab, seed + uint64_t(requests[size_t(r)]), step,
                 state.data() + r * words, scratch.data());
    }
  }
  std::vector<int32_t> tokens(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    tokens[size_t(r)] = int32_t(state[size_t(r * words + kToken)]);
  return tokens;
}

WordGather gatherOver(Communicator &comm, Backend &backend) {
  return [&comm, &backend](const std::vector<uint64_t> &mine) {
    const int64_t bytes = int64_t(mine.size() * sizeof(uint64_t));
    std::vector<uint64_t> all(mine.size() * size_t(comm.size()));
    if (bytes == 0)
      return all;
    void *send = backend.allocate(bytes);
    void *recv = backend.allocate(bytes * comm.size());
    backend.copyToDevice(send, mine.data(), bytes);
    backend.synchronize();
    comm.allGather(backend, send, recv, int64_t(mine.size()), BRAID_I64)->wait(backend);
    backend.synchronize();
    backend.copyToHost(all.data(), recv, bytes * comm.size());
    backend.release(recv);
    backend.release(send);
    return all;
  };
}

WordGather gatherAlone() {
  return [](const std::vector<uint64_t> &mine) { return mine; };
}

VocabBlock vocabBlockOf(const float *logits, int64_t rows, const ShardLayout &layout,
                        const Grid &grid, const std::vector<int32_t> &coords, int64_t vocab,
                        std::string *group) {
  const size_t d = layout.local.size() - 1;
  // The block index along the split axes, the first major (ShardLayout::block).
  int64_t index = 0;
  group->clear();
  for (int a : layout.axes[d]) {
    index = index * grid.sizes[size_t(a)] + coords[size_t(a)];
    *group += (group->empty() ? "" : ",") + grid.names[size_t(a)];
  }
  VocabBlock block;
  block.logits = logits;
  block.rows = rows;
  block.stride = layout.local[d];
  block.offset = index * layout.local[d];
  block.vocab = std::min(vocab, layout.global[d]);
  block.count = std::clamp<int64_t>(block.vocab - block.offset, 0, block.stride);
  return block;
}

std::vector<int32_t> sampleTokensParallel(const VocabBlock &block, Communicator &comm,
                                          Backend &backend, const SamplingOptions &options,
                                          uint64_t seed, const std::vector<int64_t> &requests,
                                          int64_t step) {
  return sampleTokensParallel(block, gatherOver(comm, backend), options, seed, requests, step);
}

} // namespace braid::rt
