//===- sampling_parallel.cpp - sampling logits split by vocabulary --------===//
//
// What sampling_parallel.h specifies. A candidate travels as two words
// (weight, global index); a rank whose candidates ran out fills its chunk
// with kNone. After each exchange every rank holds the same candidates, so
// every rank decides the same rows and takes part in the same exchanges.
//
//===----------------------------------------------------------------------===//

#include "sampling_parallel.h"

#include "comm.h"
#include "rt_impl.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace braid::rt {

namespace {

using sampling::Candidate;

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
/// Candidates per rank and row in the first exchange without top-k; each
/// further exchange doubles it.
constexpr int64_t kFirstChunk = 32;

uint64_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float bitsFloat(uint64_t word) {
  auto bits = uint32_t(word);
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// Each row's largest logit, the lowest global index among equal maxima
/// (sampleToken's greedy choice), from every rank's own.
std::vector<std::pair<float, int64_t>> globalMaxima(const VocabBlock &block, int64_t rows,
                                                    const WordGather &gather) {
  std::vector<uint64_t> mine;
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = block.logits + r * block.stride;
    int64_t best = 0;
    for (int64_t i = 1; i < block.count; ++i)
      if (row[i] > row[best])
        best = i;
    mine.push_back(block.count > 0 ? floatBits(row[best]) : 0);
    mine.push_back(block.count > 0 ? uint64_t(block.offset + best) : kNone);
  }
  std::vector<uint64_t> all = gather(mine);
  const size_t ranks = mine.empty() ? 0 : all.size() / mine.size();
  std::vector<std::pair<float, int64_t>> maxima(size_t(rows), {0.0f, -1});
  for (size_t k = 0; k < ranks; ++k)
    for (int64_t r = 0; r < rows; ++r) {
      const uint64_t *pair = all.data() + k * mine.size() + 2 * size_t(r);
      if (pair[1] == kNone)
        continue;
      float value = bitsFloat(pair[0]);
      auto index = int64_t(pair[1]);
      auto &best = maxima[size_t(r)];
      if (best.second < 0 || value > best.first ||
          (value == best.first && index < best.second))
        best = {value, index};
    }
  return maxima;
}

/// One row's state while its candidates are exchanged.
struct RowDraw {
  std::vector<Candidate> local;  ///< this rank's, in the order
  std::vector<Candidate> known;  ///< every rank's sent so far, in the order
  std::vector<Candidate> last;   ///< per rank, its last candidate sent
  std::vector<bool> exhausted;   ///< per rank, whether it has sent them all
  uint64_t allMass = 0;
  double uniform = 0;
  int64_t token = -1;
};

/// The number of leading `known` candidates certainly first in the global
/// order: those not after any unexhausted rank's last candidate sent (its
/// unsent ones all come after it).
size_t certainPrefix(const RowDraw &row) {
  const Candidate *bound = nullptr;
  for (size_t k = 0; k < row.last.size(); ++k)
    if (!row.exhausted[k] && (!bound || sampling::comesBefore(row.last[k], *bound)))
      bound = &row.last[k];
  if (!bound)
    return row.known.size();
  return size_t(std::upper_bound(row.known.begin(), row.known.end(), *bound,
                                 sampling::comesBefore) -
                row.known.begin());
}

/// Appends row `row`'s candidates [sent, sent + chunk) to `words` (kNone
/// pairs past its last).
void appendChunk(const RowDraw &row, int64_t sent, int64_t chunk, std::vector<uint64_t> &words) {
  for (int64_t i = sent; i < sent + chunk; ++i) {
    if (i < int64_t(row.local.size())) {
      words.push_back(row.local[size_t(i)].weight);
      words.push_back(uint64_t(row.local[size_t(i)].index));
    } else {
      words.push_back(kNone);
      words.push_back(kNone);
    }
  }
}

/// Reads rank k's chunk for `row` from `words` into its known candidates.
void takeChunk(RowDraw &row, size_t k, const uint64_t *words, int64_t chunk) {
  for (int64_t i = 0; i < chunk; ++i) {
    if (words[2 * i + 1] == kNone) {
      row.exhausted[k] = true;
      return;
    }
    Candidate c{words[2 * i], int64_t(words[2 * i + 1])};
    row.known.push_back(c);
    row.last[k] = c;
  }
}

} // namespace

std::vector<int32_t> sampleTokensParallel(const VocabBlock &block, const WordGather &gather,
                                          const SamplingOptions &options, uint64_t seed,
                                          const std::vector<int64_t> &requests, int64_t step) {
  const auto rows = int64_t(requests.size());
  std::vector<std::pair<float, int64_t>> maxima = globalMaxima(block, rows, gather);
  std::vector<int32_t> tokens(size_t(rows), 0);
  if (options.temperature <= 0 || block.vocab <= 1) {
    for (int64_t r = 0; r < rows; ++r)
      tokens[size_t(r)] = int32_t(std::max<int64_t>(maxima[size_t(r)].second, 0));
    return tokens;
  }
  std::vector<RowDraw> draws(static_cast<size_t>(rows));
  std::vector<uint64_t> masses;
  for (int64_t r = 0; r < rows; ++r) {
    RowDraw &row = draws[size_t(r)];
    const float *logits = block.logits + r * block.stride;
    uint64_t mass = 0;
    for (int64_t i = 0; i < block.count; ++i) {
      uint64_t w = sampling::weightOf(logits[i], maxima[size_t(r)].first, options.temperature);
      row.local.push_back({w, block.offset + i});
      mass += w;
    }
    std::sort(row.local.begin(), row.local.end(), sampling::comesBefore);
    row.uniform = sampling::uniformAt(seed, requests[size_t(r)], step);
    masses.push_back(mass);
  }
  // The total weight, summed exactly in any order.
  std::vector<uint64_t> allMasses = gather(masses);
  const size_t ranks = masses.empty() ? 0 : allMasses.size() / masses.size();
  for (int64_t r = 0; r < rows; ++r) {
    RowDraw &row = draws[size_t(r)];
    for (size_t k = 0; k < ranks; ++k)
      row.allMass += allMasses[k * size_t(rows) + size_t(r)];
    row.last.assign(ranks, Candidate{0, 0});
    row.exhausted.assign(ranks, false);
  }
  // Chunks of candidates until every row is decided (top-k: the first).
  int64_t chunk = options.topK > 0 ? std::min(options.topK, block.vocab) : kFirstChunk;
  int64_t sent = 0;
  std::vector<size_t> open(static_cast<size_t>(rows));
  for (size_t r = 0; r < open.size(); ++r)
    open[r] = r;
  while (!open.empty()) {
    std::vector<uint64_t> words;
    for (size_t r : open)
      appendChunk(draws[r], sent, chunk, words);
    std::vector<uint64_t> all = gather(words);
    std::vector<size_t> still;
    for (size_t j = 0; j < open.size(); ++j) {
      RowDraw &row = draws[open[j]];
      for (size_t k = 0; k < ranks; ++k)
        takeChunk(row, k, all.data() + k * words.size() + j * 2 * size_t(chunk), chunk);
      std::sort(row.known.begin(), row.known.end(), sampling::comesBefore);
      const bool complete = std::all_of(row.exhausted.begin(), row.exhausted.end(),
                                        [](bool e) { return e; });
      std::optional<int64_t> token =
          sampling::chooseFromPrefix(row.known.data(), certainPrefix(row), complete,
                                     block.vocab, row.allMass, options, row.uniform);
      if (token)
        row.token = *token;
      else
        still.push_back(open[j]);
    }
    open = std::move(still);
    sent += chunk;
    chunk *= 2;
  }
  for (int64_t r = 0; r < rows; ++r)
    tokens[size_t(r)] = int32_t(draws[size_t(r)].token);
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
