//===- sampling_parallel.h - sampling logits split by vocabulary -*- C++ -*-===//
//
// The ranks of a vocabulary-parallel LM head each hold a block of every row
// of the logits (a prefill or decode program partitioned with
// gather-logits=false). sampleTokensParallel chooses each row's token
// without gathering the logits, and chooses exactly the token sampleToken
// (sampling.h) chooses from the whole row, whatever the split:
//   greedy: each rank's (max, lowest index) are all-gathered (1 exchange);
//   otherwise the global max comes first, then each rank's offset and mass
//   (its weights, sampling::weightOf, summed exactly as integers), and
//     temperature alone: the rank whose mass, in vocabulary order, holds
//       the draw's target finds the token in its block (3 exchanges);
//     top-k: each rank's first k candidates (weight, index) in the order
//       are gathered, which always holds the kept set (3 exchanges);
//     top-p: the weight where the nucleus ends is found by a 64-way search
//       on the integer weights (each step gathers each rank's mass above 63
//       thresholds, about 7 steps), then the ranks' masses above it and
//       their ties at it, and the draw as for temperature alone (about 12).
// Every exchange is an all-gather of 64-bit words (a few per row, at most
// 64 per row for top-p, 2k for top-k), the same count on every rank; every
// rank returns every row's token.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SAMPLING_PARALLEL_H
#define BRAID_RUNTIME_SAMPLING_PARALLEL_H

#include "sampling.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace braid::rt {

class Backend;
class Communicator;

/// This rank's block of a batch of logits split by vocabulary: host f32,
/// `rows` rows of `stride` values, of which the first `count` are the
/// tokens [offset, offset + count) of a vocabulary of `vocab` tokens (the
/// rest of a row is padding, which is never sampled). Over the ranks, the
/// blocks' counts add up to `vocab` and their ranges do not overlap.
struct VocabBlock {
  const float *logits = nullptr;
  int64_t rows = 0;
  int64_t stride = 0;
  int64_t offset = 0;
  int64_t count = 0;
  int64_t vocab = 0;
};

/// An all-gather of 64-bit words over the ranks that split the vocabulary:
/// every rank passes the same number of words and receives every rank's, in
/// rank order.
using WordGather = std::function<std::vector<uint64_t>(const std::vector<uint64_t> &)>;

/// Row r's token, sampleToken(whole row r, vocab, options, seed,
/// requests[r], step), for every row of `block` (requests.size() rows, at
/// most block.rows), on every rank.
std::vector<int32_t> sampleTokensParallel(const VocabBlock &block, const WordGather &gather,
                                          const SamplingOptions &options, uint64_t seed,
                                          const std::vector<int64_t> &requests, int64_t step);

/// The all-gather of `comm` (the communicator of the group that splits the
/// logits' vocabulary: "tp" under the megatron plan), through buffers of
/// `backend` (device memory on GPU ranks).
WordGather gatherOver(Communicator &comm, Backend &backend);

/// The all-gather of a group of one rank (logits that are not split).
WordGather gatherAlone();

struct ShardLayout;
struct Grid;

/// This rank's block of host logits [rows, layout.local.back()] laid out by
/// `layout` (a program's output under gather-logits=false: the last,
/// vocabulary dimension split, every row whole) for the rank at grid
/// coordinates `coords`, sampling from the first `vocab` tokens (the model's
/// vocabulary: columns past it, and a split's padding, are never drawn).
/// `group` receives the communicator group of the split ("tp": its axes'
/// names, comma-separated), empty when the layout splits it over no axis.
VocabBlock vocabBlockOf(const float *logits, int64_t rows, const ShardLayout &layout,
                        const Grid &grid, const std::vector<int32_t> &coords, int64_t vocab,
                        std::string *group);

/// sampleTokensParallel over `comm`.
std::vector<int32_t> sampleTokensParallel(const VocabBlock &block, Communicator &comm,
                                          Backend &backend, const SamplingOptions &options,
                                          uint64_t seed, const std::vector<int64_t> &requests,
                                          int64_t step);

} // namespace braid::rt

#endif // BRAID_RUNTIME_SAMPLING_PARALLEL_H
