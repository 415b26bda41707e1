//===- sampling_parallel.h - sampling logits split by vocabulary -*- C++ -*-===//
//
// The ranks of a vocabulary-parallel LM head each hold a block of every row
// of the logits (a prefill or decode program partitioned with
// gather-logits=false). sampleTokensParallel chooses each row's token
// without gathering the logits, and chooses exactly the token sampleToken
// (sampling.h) chooses from the whole row, whatever the split, in the fixed
// schedule of sampling_rows.h (the braid.sample expansion's):
//   greedy: each rank's (max, lowest index) are all-gathered (1 exchange);
//   otherwise the global max, then each rank's offset, mass (its weights
//     summed exactly as integers) and first candidates in the order (k for
//     top-k, 16 for top-p alone), which decide a top-k and a nucleus that
//     ends among them; then for top-p alone 8 rounds of a 64-way search on
//     the integer weights for where the nucleus ends and each rank's share
//     of it; then the draw: the rank whose kept mass, in vocabulary order,
//     holds the target finds the token (3 exchanges; 12 for top-p alone).
// Every exchange is an all-gather of 64-bit words (at most 2 + 2k per row),
// the same count on every rank; every rank returns every row's token.
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
