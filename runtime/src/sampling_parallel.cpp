//===- sampling_parallel.cpp - sampling logits split by vocabulary --------===//
//
// What sampling_parallel.h specifies. Each exchange sends this rank's
// offset (kNone when it holds no token) and its words for each row still
// open; a candidate travels as two words (weight, global index), a rank
// whose candidates ran out fills its chunk with kNone. After each exchange
// every rank holds the same words, so every rank decides the same rows and
// takes part in the same exchanges.
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

/// One row's state while it is sampled.
struct RowDraw {
  std::vector<uint64_t> weights; ///< this rank's, in index order
  double uniform = 0;
  uint64_t mass = 0, allMass = 0; ///< this rank's, every rank's
  int64_t token = -1;
  // Top-k: candidates exchanged in chunks.
  std::vector<Candidate> local; ///< this rank's, in the order
  std::vector<Candidate> known; ///< every rank's sent so far, in the order
  std::vector<Candidate> last;  ///< per rank, its last candidate sent
  std::vector<bool> exhausted;  ///< per rank, whether it has sent them all
  // Otherwise: the kept set is every token of weight above `cut` and the
  // first `ties` of weight `cut` (by index); keepAll: every token.
  bool keepAll = true;
  uint64_t need = 0, lo = 0, hi = 0, cut = 0;
  std::vector<uint64_t> descending, prefixMass; ///< this rank's weights, heaviest first
  std::vector<uint64_t> keptMass, ties;         ///< per rank
  uint64_t total = 0;

  /// This rank's mass of the weights >= t.
  uint64_t massFrom(uint64_t t) const { return prefixMass[countFrom(t)]; }
  size_t countFrom(uint64_t t) const {
    return size_t(std::partition_point(descending.begin(), descending.end(),
                                       [t](uint64_t w) { return w >= t; }) -
                  descending.begin());
  }
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

/// The rows sampled together: this rank's block, the ranks' offsets (the
/// order of their blocks in the vocabulary) and each row's state.
struct Batch {
  Batch(const VocabBlock &block, const WordGather &gather, const SamplingOptions &options,
        size_t rows)
      : block(block), gather(gather), options(options), rows(rows) {}

  const VocabBlock &block;
  const WordGather &gather;
  const SamplingOptions &options;
  std::vector<RowDraw> rows;
  size_t ranks = 0;
  std::vector<size_t> byOffset; ///< the ranks with tokens, in vocabulary order

  /// Each rank's words for each of `open` rows (`perRow` words each, after a
  /// header word), gathered: words(k, j) points at rank k's for open row j.
  struct Gathered {
    std::vector<uint64_t> all;
    size_t stride, perRow;
    const uint64_t *at(size_t k, size_t j) const { return all.data() + k * stride + 1 + j * perRow; }
  };
  Gathered exchange(const std::vector<size_t> &open, size_t perRow,
                    const std::function<void(const RowDraw &, uint64_t *)> &fill) {
    std::vector<uint64_t> mine(1 + open.size() * perRow, 0);
    mine[0] = block.count > 0 ? uint64_t(block.offset) : kNone;
    for (size_t j = 0; j < open.size(); ++j)
      fill(rows[open[j]], mine.data() + 1 + j * perRow);
    Gathered g{gather(mine), mine.size(), perRow};
    return g;
  }
};

/// Top-k: chunks of candidates in each rank's order until the candidates
/// certainly first decide every row (the first chunk, k per rank, does).
void exchangeCandidates(Batch &batch) {
  int64_t chunk = std::min(batch.options.topK, batch.block.vocab), sent = 0;
  std::vector<size_t> open;
  for (size_t r = 0; r < batch.rows.size(); ++r) {
    RowDraw &row = batch.rows[r];
    for (size_t i = 0; i < row.weights.size(); ++i)
      row.local.push_back({row.weights[i], batch.block.offset + int64_t(i)});
    // The first chunk decides (the kept set is among every rank's top k):
    // only it needs the order; a further chunk would sort the rest.
    const auto first = std::min(row.local.size(), size_t(chunk));
    std::partial_sort(row.local.begin(), row.local.begin() + first, row.local.end(),
                      sampling::comesBefore);
    row.last.assign(batch.ranks, Candidate{0, 0});
    row.exhausted.assign(batch.ranks, false);
    open.push_back(r);
  }
  while (!open.empty()) {
    if (sent > 0)
      for (size_t r : open)
        std::sort(batch.rows[r].local.begin(), batch.rows[r].local.end(), sampling::comesBefore);
    Batch::Gathered g = batch.exchange(open, 2 * size_t(chunk), [&](const RowDraw &row,
                                                                   uint64_t *out) {
      std::vector<uint64_t> words;
      appendChunk(row, sent, chunk, words);
      std::copy(words.begin(), words.end(), out);
    });
    std::vector<size_t> still;
    for (size_t j = 0; j < open.size(); ++j) {
      RowDraw &row = batch.rows[open[j]];
      for (size_t k = 0; k < batch.ranks; ++k)
        takeChunk(row, k, g.at(k, j), chunk);
      std::sort(row.known.begin(), row.known.end(), sampling::comesBefore);
      const bool complete = std::all_of(row.exhausted.begin(), row.exhausted.end(),
                                        [](bool e) { return e; });
      std::optional<int64_t> token =
          sampling::chooseFromPrefix(row.known.data(), certainPrefix(row), complete,
                                     batch.block.vocab, row.allMass, batch.options, row.uniform);
      if (token)
        row.token = *token;
      else
        still.push_back(open[j]);
    }
    open = std::move(still);
    sent += chunk;
    chunk *= 2;
  }
}

/// Top-p without top-k: the weight of the nucleus's last token (`cut`, the
/// largest weight w whose tokens of weight >= w reach the threshold), found
/// by a 64-way search on the integer weights, each step all-gathering each
/// rank's mass above 63 thresholds.
void findCuts(Batch &batch, std::vector<size_t> open) {
  constexpr size_t kProbes = 63;
  auto probes = [](const RowDraw &row) {
    std::vector<uint64_t> t;
    const uint64_t span = row.hi - row.lo;
    const uint64_t step = span <= kProbes ? 1 : span / (kProbes + 1);
    for (size_t i = 1; i <= kProbes && i * step <= span; ++i)
      t.push_back(row.lo + i * step);
    return t;
  };
  while (!open.empty()) {
    Batch::Gathered g = batch.exchange(open, kProbes, [&](const RowDraw &row, uint64_t *out) {
      std::vector<uint64_t> t = probes(row);
      for (size_t i = 0; i < t.size(); ++i)
        out[i] = row.massFrom(t[i]);
    });
    std::vector<size_t> still;
    for (size_t j = 0; j < open.size(); ++j) {
      RowDraw &row = batch.rows[open[j]];
      std::vector<uint64_t> t = probes(row);
      // The mass from each threshold on falls as the threshold rises.
      size_t above = 0;
      for (size_t i = 0; i < t.size(); ++i) {
        uint64_t mass = 0;
        for (size_t k = 0; k < batch.ranks; ++k)
          mass += g.at(k, j)[i];
        if (mass >= row.need)
          above = i + 1;
      }
      if (above > 0)
        row.lo = t[above - 1];
      row.hi = above < t.size() ? t[above] - 1 : row.hi;
      if (row.lo < row.hi)
        still.push_back(open[j]);
      else
        row.cut = row.lo;
    }
    open = std::move(still);
  }
}

/// The kept set's share of each rank: with a cut, the mass above it and the
/// first ties at it in vocabulary order (the nucleus ends at the first tie
/// that reaches the threshold).
void keptShares(Batch &batch, const std::vector<size_t> &cut) {
  Batch::Gathered g = batch.exchange(cut, 2, [](const RowDraw &row, uint64_t *out) {
    out[0] = row.massFrom(row.cut + 1);
    out[1] = row.countFrom(row.cut) - row.countFrom(row.cut + 1);
  });
  for (size_t j = 0; j < cut.size(); ++j) {
    RowDraw &row = batch.rows[cut[j]];
    uint64_t above = 0;
    for (size_t k = 0; k < batch.ranks; ++k)
      above += g.at(k, j)[0];
    // row.cut > 0; with a threshold of 0, the first tie alone.
    uint64_t ties = row.need > above ? (row.need - above + row.cut - 1) / row.cut : 1;
    row.total = above + ties * row.cut;
    row.ties.assign(batch.ranks, 0);
    for (size_t k : batch.byOffset) {
      row.ties[k] = std::min(ties, g.at(k, j)[1]);
      ties -= row.ties[k];
      row.keptMass[k] = g.at(k, j)[0] + row.ties[k] * row.cut;
    }
  }
}

/// The draw: the rank whose kept mass holds the target, in vocabulary
/// order, finds the token in its block; its index is all-gathered.
void drawKept(Batch &batch, const std::vector<size_t> &open, size_t self) {
  auto owner = [&](const RowDraw &row, uint64_t *rest) -> size_t {
    uint64_t target = sampling::drawTarget(row.total, row.uniform), before = 0;
    for (size_t k : batch.byOffset) {
      if (target < before + row.keptMass[k]) {
        *rest = target - before;
        return k;
      }
      before += row.keptMass[k];
    }
    return kNone; // unreachable: the kept masses add up to the total
  };
  Batch::Gathered g = batch.exchange(open, 1, [&](const RowDraw &row, uint64_t *out) {
    uint64_t rest = 0;
    *out = kNone;
    if (owner(row, &rest) != self)
      return;
    uint64_t mass = 0, ties = 0;
    for (size_t i = 0; i < row.weights.size(); ++i) {
      const uint64_t w = row.weights[i];
      const bool kept = row.keepAll || w > row.cut || (w == row.cut && ties++ < row.ties[self]);
      if (kept && rest < (mass += w)) {
        *out = uint64_t(batch.block.offset) + i;
        return;
      }
    }
  });
  for (size_t j = 0; j < open.size(); ++j) {
    uint64_t rest = 0;
    RowDraw &row = batch.rows[open[j]];
    row.token = int64_t(g.at(owner(row, &rest), j)[0]);
  }
}

/// Without top-k: every token kept, or the nucleus found by findCuts; then
/// the draw in vocabulary order.
void drawByMass(Batch &batch, const std::vector<std::vector<uint64_t>> &masses, size_t self) {
  std::vector<size_t> open, cut;
  for (size_t r = 0; r < batch.rows.size(); ++r) {
    RowDraw &row = batch.rows[r];
    row.keptMass = masses[r];
    row.total = row.allMass;
    open.push_back(r);
    if (batch.options.topP >= 1)
      continue;
    row.need = sampling::nucleusNeed(row.allMass, batch.options.topP);
    if (row.need > row.allMass)
      continue; // rounding put the threshold past the mass: every token kept
    row.keepAll = false;
    cut.push_back(r);
    // A threshold of 0: the nucleus is the first token of the order, of the
    // largest weight (that of the largest logit).
    row.lo = row.need == 0 ? uint64_t(1) << sampling::kWeightBits : 0;
    row.hi = uint64_t(1) << sampling::kWeightBits;
    row.cut = row.lo;
  }
  std::vector<size_t> search;
  for (size_t r : cut)
    if (batch.rows[r].lo < batch.rows[r].hi)
      search.push_back(r);
  findCuts(batch, search);
  if (!cut.empty())
    keptShares(batch, cut);
  if (!open.empty())
    drawKept(batch, open, self);
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
  Batch batch(block, gather, options, size_t(rows));
  std::vector<size_t> open;
  for (int64_t r = 0; r < rows; ++r) {
    RowDraw &row = batch.rows[size_t(r)];
    const float *logits = block.logits + r * block.stride;
    for (int64_t i = 0; i < block.count; ++i)
      row.weights.push_back(
          sampling::weightOf(logits[i], maxima[size_t(r)].first, options.temperature));
    // The top-p search's mass above a threshold: from the weights in order.
    if (options.topK <= 0 && options.topP < 1) {
      row.descending = row.weights;
      std::sort(row.descending.begin(), row.descending.end(), std::greater<uint64_t>());
    }
    row.prefixMass.assign(1, 0);
    for (uint64_t w : row.descending)
      row.prefixMass.push_back(row.prefixMass.back() + w);
    for (uint64_t w : row.weights)
      row.mass += w;
    row.uniform = sampling::uniformAt(seed, requests[size_t(r)], step);
    open.push_back(size_t(r));
  }
  // Each rank's offset and mass per row; the total, summed exactly in any order.
  Batch::Gathered g = batch.exchange(open, 1, [](const RowDraw &row, uint64_t *out) {
    *out = row.mass;
  });
  batch.ranks = g.all.size() / g.stride;
  size_t self = 0;
  for (size_t k = 0; k < batch.ranks; ++k) {
    const uint64_t offset = g.all[k * g.stride];
    if (offset != kNone)
      batch.byOffset.push_back(k);
    if (block.count > 0 && offset == uint64_t(block.offset))
      self = k;
  }
  std::sort(batch.byOffset.begin(), batch.byOffset.end(),
            [&](size_t a, size_t b) { return g.all[a * g.stride] < g.all[b * g.stride]; });
  std::vector<std::vector<uint64_t>> masses(static_cast<size_t>(rows));
  for (size_t r = 0; r < size_t(rows); ++r) {
    masses[r].resize(batch.ranks);
    for (size_t k = 0; k < batch.ranks; ++k) {
      masses[r][k] = g.at(k, r)[0];
      batch.rows[r].allMass += masses[r][k];
    }
  }
  if (options.topK > 0)
    exchangeCandidates(batch);
  else
    drawByMass(batch, masses, self);
  for (int64_t r = 0; r < rows; ++r)
    tokens[size_t(r)] = int32_t(batch.rows[size_t(r)].token);
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
