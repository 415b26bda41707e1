//===- sampling_rows.h - the sampler's arithmetic, phase by phase -*- C++ -*-===//
//
// The one copy of sampling's arithmetic (sampling.h specifies it), written
// for host and device (CUDA, cudasim) alike: plain functions of one row on
// caller-given buffers, no allocation, no library sort.
//
// A row split by vocabulary over R ranks is sampled in a fixed schedule of
// phases; in each, every rank computes its words for the row from its block
// of the logits (local*), the words are all-gathered over the R ranks, and
// every rank folds them into the row's state (merge*), the same on every rank:
//   Max     (max, global index) of the block: the greedy token and the top;
//   Mass    the block's offset and mass (weights summed as integers) and its
//           first `cap` candidates in the order: the top-k's kept set, and a
//           nucleus that ends among them, are decided here;
//   Search  x kSearchRounds: a 64-way search on the integer weights for the
//           weight where the nucleus ends (top-p without top-k): each rank's
//           mass above 63 thresholds;
//   Shares  each rank's mass above that weight and its ties at it;
//   Draw    the rank whose kept mass holds the draw's target finds the token.
// Greedy needs Max alone; temperature and top-k Max, Mass, Draw; top-p
// without top-k every phase. A rank of one (R = 1, the words its own) is
// the whole-row sampler. Rows decided early carry through later phases.
//
// The state of a row is kStateHeader + 3 R 64-bit words (stateWords): the
// header below, then per rank (in gather order) its offset, its kept mass
// and its ties at the cut.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SAMPLING_ROWS_H
#define BRAID_RUNTIME_SAMPLING_ROWS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define BRAID_SAMPLING_HD __host__ __device__
#else
#define BRAID_SAMPLING_HD
#endif

namespace braid::rt::sampling {

/// Fraction bits of a weight: a weight is at most 1 << kWeightBits, so that
/// the sum over a vocabulary of up to 2^23 tokens fits 63 bits.
constexpr int kWeightBits = 40;
/// A word that holds nothing (no token, no offset).
constexpr uint64_t kNone = ~uint64_t(0);
/// Thresholds per round of the top-p search.
constexpr int kProbes = 63;

/// Rounds of the 64-way search that decide any weight in [0, 2^40]: the
/// worst case of its two outcomes (below a threshold: a span of step - 1;
/// above all: span - 63 step).
constexpr int searchRoundsOf(uint64_t span) {
  if (span == 0)
    return 0;
  if (span <= uint64_t(kProbes))
    return 1;
  const uint64_t step = span / (kProbes + 1);
  const int below = searchRoundsOf(step - 1), above = searchRoundsOf(span - kProbes * step);
  return 1 + (below > above ? below : above);
}
constexpr int kSearchRounds = searchRoundsOf(uint64_t(1) << kWeightBits);
static_assert(kSearchRounds == 8, "the compiler's braid.sample expansion emits 8 rounds");

/// A token and its weight. Candidates are ordered heavier first, ties by
/// the lower index.
struct Candidate {
  uint64_t weight;
  int64_t index;
};
BRAID_SAMPLING_HD inline bool comesBefore(const Candidate &a, const Candidate &b) {
  return a.weight != b.weight ? a.weight > b.weight : a.index < b.index;
}
BRAID_SAMPLING_HD inline bool indexBefore(const Candidate &a, const Candidate &b) {
  return a.index < b.index;
}

/// Sorts `c[0, n)` by `before` in place (heap sort: no allocation, any n).
template <typename Before>
BRAID_SAMPLING_HD inline void sortCandidates(Candidate *c, size_t n, Before before) {
  auto sift = [&](size_t root, size_t end) {
    while (2 * root + 1 < end) {
      size_t child = 2 * root + 1;
      if (child + 1 < end && before(c[child], c[child + 1]))
        ++child;
      if (!before(c[root], c[child]))
        return;
      Candidate t = c[root];
      c[root] = c[child];
      c[child] = t;
      root = child;
    }
  };
  for (size_t i = n / 2; i-- > 0;)
    sift(i, n);
  for (size_t end = n; end > 1; --end) {
    Candidate t = c[0];
    c[0] = c[end - 1];
    c[end - 1] = t;
    sift(0, end - 1);
  }
}

/// exp((logit - top) / temperature) in double, truncated to kWeightBits
/// fraction bits (`top` the largest logit: the weight is at most 1).
BRAID_SAMPLING_HD inline uint64_t weightOf(float logit, float top, double temperature) {
  double p = ::exp((double(logit) - double(top)) / temperature);
  return uint64_t(::ldexp(1.0 < p ? 1.0 : p, kWeightBits));
}

/// Philox4x32-10 (Random123's; rng.h's generator) of `c` under (k0, k1).
BRAID_SAMPLING_HD inline void philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1) {
  const uint64_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = m0 * uint64_t(c[0]), p1 = m1 * uint64_t(c[2]);
    const uint32_t c1 = c[1], c3 = c[3];
    c[0] = uint32_t(p1 >> 32) ^ c1 ^ k0;
    c[1] = uint32_t(p1);
    c[2] = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c[3] = uint32_t(p0);
  }
}

/// The uniform in [0, 1) of draw `step` of stream `stream` (the run's seed
/// plus the request's index): rng.h's key of ("STREAM", "sample"), Philox at
/// counter `step`, the 53 high bits of its first two words.
BRAID_SAMPLING_HD inline double uniformOf(uint64_t stream, int64_t step) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = char('0' + stream % 10);
    stream /= 10;
  } while (stream);
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](unsigned char byte) { h = (h ^ byte) * 0x100000001b3ull; };
  while (n > 0)
    mix((unsigned char)digits[--n]);
  for (const char *s = ":sample"; *s; ++s)
    mix((unsigned char)*s);
  uint32_t c[4] = {uint32_t(uint64_t(step)), uint32_t(uint64_t(step) >> 32), 0u, 0u};
  philox4x32_10(c, uint32_t(h), uint32_t(h >> 32));
  const uint64_t word = (uint64_t(c[0]) << 32) | c[1];
  return double(word >> 11) * 0x1.0p-53;
}

/// The top-p threshold of a kept mass `total`: the nucleus is the shortest
/// prefix of the order whose mass reaches it.
BRAID_SAMPLING_HD inline uint64_t nucleusNeed(uint64_t total, double topP) {
  return uint64_t(::ceil(topP * double(total)));
}

/// The draw's target in a kept mass `total` (> 0): the token drawn is the
/// first kept one, in index order, whose running mass exceeds it.
BRAID_SAMPLING_HD inline uint64_t drawTarget(uint64_t total, double uniform) {
  const uint64_t t = uint64_t(uniform * double(total));
  return t < total - 1 ? t : total - 1;
}

/// How one row is sampled: temperature <= 0 greedy, topK <= 0 every token,
/// topP >= 1 every token.
struct RowParams {
  double temperature = 0;
  int64_t topK = 0;
  double topP = 1;
};

/// The token drawn from the first `count` candidates of the order (`prefix`,
/// ordered by comesBefore) of a vocabulary of `vocab` tokens whose weights
/// sum to `allMass`, with `uniform` from uniformOf; `complete` when the
/// prefix holds every candidate; `scratch` holds `count` candidates. -1 when
/// the prefix does not hold the kept set (the top-k or the nucleus reaches
/// beyond it). Integer arithmetic: the answer does not depend on how the
/// prefix was assembled.
BRAID_SAMPLING_HD inline int64_t chooseFromPrefix(const Candidate *prefix, size_t count,
                                                  bool complete, int64_t vocab,
                                                  uint64_t allMass, const RowParams &p,
                                                  double uniform, Candidate *scratch) {
  size_t kept = size_t(vocab);
  if (p.topK > 0 && size_t(p.topK) < kept)
    kept = size_t(p.topK);
  if (kept > count && !complete && (kept < size_t(vocab) || p.topP >= 1))
    return -1;
  const size_t known = kept < count ? kept : count;
  // The kept mass: every weight, or the top-k's.
  uint64_t total = allMass;
  if (kept < size_t(vocab)) {
    total = 0;
    for (size_t i = 0; i < known; ++i)
      total += prefix[i].weight;
  }
  size_t drawn = known;
  if (p.topP < 1) {
    // The smallest prefix whose share of the kept mass reaches top-p (all
    // of them when rounding puts the threshold past the kept mass).
    const uint64_t need = nucleusNeed(total, p.topP);
    uint64_t mass = 0;
    size_t i = 0;
    for (; i < known; ++i) {
      mass += prefix[i].weight;
      if (mass >= need)
        break;
    }
    if (i < known) {
      drawn = i + 1;
      total = mass;
    } else if (kept > count && !complete) {
      return -1;
    }
  }
  // The draw, in index order among the kept.
  for (size_t i = 0; i < drawn; ++i)
    scratch[i] = prefix[i];
  sortCandidates(scratch, drawn, indexBefore);
  const uint64_t target = drawTarget(total, uniform);
  uint64_t mass = 0;
  for (size_t i = 0; i < drawn; ++i)
    if (target < (mass += scratch[i].weight))
      return scratch[i].index;
  return drawn ? scratch[drawn - 1].index : -1; // unreachable: the mass exceeds the target
}

//===----------------------------------------------------------------------===//
// The phases
//===----------------------------------------------------------------------===//

enum Phase : int32_t {
  kPhaseMax = 0,
  kPhaseMass = 1,
  kPhaseSearch = 2,
  kPhaseShares = 3,
  kPhaseDraw = 4,
};

/// Words per row that a rank sends in `phase` (`cap`: the candidates of Mass).
BRAID_SAMPLING_HD inline int64_t wordsOf(int32_t phase, int64_t cap) {
  switch (phase) {
  case kPhaseMax:
    return 2;
  case kPhaseMass:
    return 2 + 2 * cap;
  case kPhaseSearch:
    return kProbes;
  case kPhaseShares:
    return 2;
  default:
    return 1;
  }
}

/// The schedules of braid.sample's modes (BraidSampleOps.td's SampleMode).
enum Mode : int32_t { kModeGreedy = 0, kModeSample = 1, kModeNucleus = 2 };
constexpr int kMaxPhases = 4 + kSearchRounds;

/// The phases of `mode` into `phases` (kMaxPhases at most); their number.
BRAID_SAMPLING_HD inline int scheduleOf(int64_t mode, int32_t phases[kMaxPhases]) {
  int n = 0;
  phases[n++] = kPhaseMax;
  if (mode == kModeGreedy)
    return n;
  phases[n++] = kPhaseMass;
  for (int i = 0; mode == kModeNucleus && i < kSearchRounds; ++i)
    phases[n++] = kPhaseSearch;
  if (mode == kModeNucleus)
    phases[n++] = kPhaseShares;
  phases[n++] = kPhaseDraw;
  return n;
}

/// A row's state: the header words, then offset, kept mass and ties per rank.
enum StateWord : int64_t {
  kToken = 0,   ///< the token once decided
  kStage = 1,   ///< a Stage
  kTop = 2,     ///< the largest logit's bits
  kUniform = 3, ///< the draw's uniform's bits
  kAllMass = 4,
  kNeed = 5, ///< the top-p threshold
  kLo = 6,   ///< the search's range of the cut [lo, hi]
  kHi = 7,
  kCut = 8,   ///< the weight where the nucleus ends
  kTotal = 9, ///< the kept mass
  kStateHeader = 10,
};
enum Stage : uint64_t {
  kDecided = 0,
  kDrawAll = 1,   ///< every token kept: the draw comes next
  kSearching = 2, ///< top-p: the cut is being searched
  kCutFound = 3,  ///< top-p: the cut is known, the shares come next
  kDrawCut = 4,   ///< top-p: the kept set is known, the draw comes next
};
BRAID_SAMPLING_HD inline int64_t stateWords(int64_t ranks) { return kStateHeader + 3 * ranks; }

/// What a merge can find wrong with a row.
enum Problem : int32_t {
  kFine = 0,
  kTopKPastCap = 1, ///< top-k larger than the candidates each rank sends
};

BRAID_SAMPLING_HD inline uint64_t floatBits(float v) {
  uint32_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}
BRAID_SAMPLING_HD inline float bitsFloat(uint64_t w) {
  const uint32_t b = uint32_t(w);
  float v;
  memcpy(&v, &b, sizeof v);
  return v;
}
BRAID_SAMPLING_HD inline uint64_t doubleBits(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}
BRAID_SAMPLING_HD inline double bitsDouble(uint64_t w) {
  double v;
  memcpy(&v, &w, sizeof v);
  return v;
}

/// This rank's block of one row: `count` valid columns (tokens [offset,
/// offset + count)), read through `at(i)` as f32.
template <typename Row> struct Block {
  Row at;
  int64_t count;
  int64_t offset;
};

/// The search's thresholds in (lo, hi]: 63 evenly spaced, or every weight
/// when fewer; returns their number.
BRAID_SAMPLING_HD inline int probesOf(uint64_t lo, uint64_t hi, uint64_t t[kProbes]) {
  const uint64_t span = hi - lo, step = span <= uint64_t(kProbes) ? 1 : span / (kProbes + 1);
  int n = 0;
  for (uint64_t i = 1; i <= uint64_t(kProbes) && i * step <= span; ++i)
    t[n++] = lo + i * step;
  return n;
}

/// The ranks with tokens in vocabulary order: the next after offset `last`
/// (the first when `first`), -1 past the last.
BRAID_SAMPLING_HD inline int64_t nextByOffset(const uint64_t *offsets, int64_t ranks, bool first,
                                              uint64_t last) {
  int64_t next = -1;
  for (int64_t k = 0; k < ranks; ++k)
    if (offsets[k] != kNone && (first || offsets[k] > last) &&
        (next < 0 || offsets[k] < offsets[next]))
      next = k;
  return next;
}

/// A block's weights under a row's top and temperature.
template <typename Row> struct Weights {
  const Block<Row> &block;
  float top;
  double temperature;
  BRAID_SAMPLING_HD uint64_t operator()(int64_t i) const {
    return weightOf(block.at(i), top, temperature);
  }
};

/// Max: the block's largest logit and its lowest global index.
template <typename Row>
BRAID_SAMPLING_HD inline void localMax(const Block<Row> &block, uint64_t *out) {
  int64_t best = 0;
  for (int64_t i = 1; i < block.count; ++i)
    if (block.at(i) > block.at(best))
      best = i;
  out[0] = block.count > 0 ? floatBits(block.at(best)) : 0;
  out[1] = block.count > 0 ? uint64_t(block.offset + best) : kNone;
}

/// Mass: the block's mass and its first `cap` candidates of the order (by
/// insertion; kNone pairs past the last), for a row that keeps a prefix.
template <typename Row>
BRAID_SAMPLING_HD inline void localMass(const Weights<Row> &weight, const RowParams &p,
                                        int64_t cap, uint64_t *out) {
  const Block<Row> &block = weight.block;
  const bool candidates = p.topK > 0 || p.topP < 1;
  auto *c = reinterpret_cast<Candidate *>(out + 2);
  int64_t held = 0;
  for (int64_t i = 0; i < block.count; ++i) {
    const Candidate x{weight(i), block.offset + i};
    out[1] += x.weight;
    if (!candidates || cap == 0 || (held == cap && !comesBefore(x, c[cap - 1])))
      continue;
    int64_t j = held < cap ? held++ : cap - 1;
    for (; j > 0 && comesBefore(x, c[j - 1]); --j)
      c[j] = c[j - 1];
    c[j] = x;
  }
  for (int64_t j = held; j < cap; ++j)
    c[j] = Candidate{kNone, int64_t(kNone)};
}

/// Search: the block's mass of the weights >= each threshold.
template <typename Row>
BRAID_SAMPLING_HD inline void localSearch(const Weights<Row> &weight, const uint64_t *state,
                                          uint64_t *out) {
  uint64_t t[kProbes], bucket[kProbes + 1] = {};
  const int n = probesOf(state[kLo], state[kHi], t);
  for (int64_t i = 0; i < weight.block.count; ++i) {
    const uint64_t w = weight(i);
    int below = 0, end = n; // the thresholds <= w: t[0, below)
    while (below < end) {
      const int mid = (below + end) / 2;
      if (t[mid] <= w)
        below = mid + 1;
      else
        end = mid;
    }
    bucket[below] += w;
  }
  uint64_t mass = 0;
  for (int i = n; i >= 1; --i)
    out[i - 1] = (mass += bucket[i]);
}

/// Shares: the block's mass above the cut and its ties at it.
template <typename Row>
BRAID_SAMPLING_HD inline void localShares(const Weights<Row> &weight, const uint64_t *state,
                                          uint64_t *out) {
  const uint64_t cut = state[kCut];
  for (int64_t i = 0; i < weight.block.count; ++i) {
    const uint64_t w = weight(i);
    if (w > cut)
      out[0] += w;
    else if (w == cut)
      ++out[1];
  }
}

/// The rank whose kept mass, in vocabulary order, holds the draw's target,
/// and the target's rest within it; -1 for none.
BRAID_SAMPLING_HD inline int64_t drawOwner(const uint64_t *state, int64_t ranks,
                                           uint64_t *rest) {
  const uint64_t *offsets = state + kStateHeader, *kept = offsets + ranks;
  const uint64_t target = drawTarget(state[kTotal], bitsDouble(state[kUniform]));
  uint64_t before = 0;
  for (int64_t k = nextByOffset(offsets, ranks, true, 0); k >= 0;
       k = nextByOffset(offsets, ranks, false, offsets[k])) {
    if (target < before + kept[k]) {
      *rest = target - before;
      return k;
    }
    before += kept[k];
  }
  return -1;
}

/// Draw: the owner's token (the first kept one in index order whose running
/// mass exceeds the rest), kNone on the other ranks.
template <typename Row>
BRAID_SAMPLING_HD inline void localDraw(const Weights<Row> &weight, const uint64_t *state,
                                        int64_t ranks, uint64_t *out) {
  const Block<Row> &block = weight.block;
  out[0] = kNone;
  uint64_t rest = 0;
  const int64_t owner = drawOwner(state, ranks, &rest);
  const uint64_t *offsets = state + kStateHeader, *ties = offsets + 2 * ranks;
  if (owner < 0 || block.count == 0 || offsets[owner] != uint64_t(block.offset))
    return;
  const bool all = state[kStage] == kDrawAll;
  const uint64_t cut = state[kCut];
  uint64_t mass = 0, seen = 0;
  for (int64_t i = 0; i < block.count; ++i) {
    const uint64_t w = weight(i);
    const bool keep = all || w > cut || (w == cut && seen++ < ties[owner]);
    if (keep && rest < (mass += w)) {
      out[0] = uint64_t(block.offset + i);
      return;
    }
  }
}

/// This row's words of `phase` (wordsOf(phase, cap) of them) from its block;
/// `state` (null for Max) as every rank holds it. A row that the phase does
/// not concern sends zeros (kNone for Draw).
template <typename Row>
BRAID_SAMPLING_HD inline void localWords(int32_t phase, const Block<Row> &block,
                                         const uint64_t *state, int64_t ranks,
                                         const RowParams &p, int64_t cap, uint64_t *out) {
  const int64_t words = wordsOf(phase, cap);
  for (int64_t i = 0; i < words; ++i)
    out[i] = 0;
  if (phase == kPhaseMax)
    return localMax(block, out);
  if (phase == kPhaseMass)
    out[0] = block.count > 0 ? uint64_t(block.offset) : kNone;
  if (phase == kPhaseDraw)
    out[0] = kNone;
  const uint64_t stage = state[kStage];
  const Weights<Row> weight{block, bitsFloat(state[kTop]), p.temperature};
  if (phase == kPhaseMass && stage != kDecided)
    localMass(weight, p, cap, out);
  else if (phase == kPhaseSearch && stage == kSearching)
    localSearch(weight, state, out);
  else if (phase == kPhaseShares && stage == kCutFound)
    localShares(weight, state, out);
  else if (phase == kPhaseDraw && (stage == kDrawAll || stage == kDrawCut))
    localDraw(weight, state, ranks, out);
}

/// Max: the greedy token, or the top and the draw's uniform.
template <typename Words>
BRAID_SAMPLING_HD inline void mergeMax(Words words, int64_t ranks, const RowParams &p,
                                       int64_t vocab, uint64_t stream, int64_t step,
                                       uint64_t *state) {
  for (int64_t i = 0; i < stateWords(ranks); ++i)
    state[i] = 0;
  float top = 0;
  int64_t best = -1;
  for (int64_t k = 0; k < ranks; ++k) {
    const uint64_t *w = words(k);
    if (w[1] == kNone)
      continue;
    const float value = bitsFloat(w[0]);
    const auto index = int64_t(w[1]);
    if (best < 0 || value > top || (value == top && index < best)) {
      top = value;
      best = index;
    }
  }
  state[kTop] = floatBits(top);
  if (p.temperature <= 0 || vocab <= 1) {
    state[kToken] = uint64_t(best > 0 ? best : 0);
    state[kStage] = kDecided;
    return;
  }
  state[kUniform] = doubleBits(uniformOf(stream, step));
  state[kStage] = kDrawAll;
}

/// Mass, for a row that keeps a prefix: the token when every rank's first
/// `cap` candidates decide it (those not after an unexhausted rank's last
/// sent are certainly first in the order: its unsent ones come after it);
/// -1 otherwise.
template <typename Words>
BRAID_SAMPLING_HD inline int64_t chooseFromCandidates(Words words, int64_t ranks,
                                                      const RowParams &p, int64_t cap,
                                                      int64_t vocab, const uint64_t *state,
                                                      Candidate *scratch) {
  Candidate *known = scratch, *rest = scratch + ranks * cap;
  size_t count = 0;
  bool complete = true, bounded = false;
  Candidate bound{0, 0};
  for (int64_t k = 0; k < ranks; ++k) {
    const uint64_t *c = words(k) + 2;
    int64_t i = 0;
    for (; i < cap && c[2 * i + 1] != kNone; ++i)
      known[count++] = Candidate{c[2 * i], int64_t(c[2 * i + 1])};
    if (i < cap)
      continue;
    complete = false;
    if (!bounded || comesBefore(known[count - 1], bound))
      bound = known[count - 1];
    bounded = true;
  }
  sortCandidates(known, count, comesBefore);
  size_t certain = count;
  if (bounded)
    for (certain = 0; certain < count && !comesBefore(bound, known[certain]);)
      ++certain;
  return chooseFromPrefix(known, certain, complete, vocab, state[kAllMass], p,
                          bitsDouble(state[kUniform]), rest);
}

/// Mass: each rank's offset and mass; the token of a top-k (and of a nucleus
/// that ends among the candidates), else the top-p search's start.
template <typename Words>
BRAID_SAMPLING_HD inline Problem mergeMass(Words words, int64_t ranks, const RowParams &p,
                                           int64_t cap, int64_t vocab, uint64_t *state,
                                           Candidate *scratch) {
  uint64_t *offsets = state + kStateHeader, *kept = offsets + ranks;
  uint64_t all = 0;
  for (int64_t k = 0; k < ranks; ++k) {
    offsets[k] = words(k)[0];
    kept[k] = words(k)[1];
    all += kept[k];
  }
  state[kAllMass] = state[kTotal] = all;
  if (state[kStage] == kDecided)
    return kFine;
  if (p.topK > cap)
    return kTopKPastCap;
  if ((p.topK > 0 || p.topP < 1) && cap > 0) {
    const int64_t token = chooseFromCandidates(words, ranks, p, cap, vocab, state, scratch);
    if (token >= 0) {
      state[kToken] = uint64_t(token);
      state[kStage] = kDecided;
      return kFine;
    }
  }
  if (p.topK > 0 || p.topP >= 1)
    return kFine; // every token kept (a top-k is always decided above)
  const uint64_t need = nucleusNeed(all, p.topP);
  state[kNeed] = need;
  if (need > all)
    return kFine; // rounding put the threshold past the mass: every token kept
  // A threshold of 0: the nucleus is the first token of the order, of the
  // largest weight (that of the largest logit).
  state[kLo] = state[kCut] = need == 0 ? uint64_t(1) << kWeightBits : 0;
  state[kHi] = uint64_t(1) << kWeightBits;
  state[kStage] = state[kLo] < state[kHi] ? kSearching : kCutFound;
  return kFine;
}

/// Search: the range of the cut narrowed to the thresholds around the need
/// (the mass from a threshold on falls as the threshold rises).
template <typename Words>
BRAID_SAMPLING_HD inline void mergeSearch(Words words, int64_t ranks, uint64_t *state) {
  uint64_t t[kProbes];
  const int n = probesOf(state[kLo], state[kHi], t);
  int above = 0;
  for (int i = 0; i < n; ++i) {
    uint64_t mass = 0;
    for (int64_t k = 0; k < ranks; ++k)
      mass += words(k)[i];
    if (mass >= state[kNeed])
      above = i + 1;
  }
  if (above > 0)
    state[kLo] = t[above - 1];
  if (above < n)
    state[kHi] = t[above] - 1;
  if (state[kLo] >= state[kHi]) {
    state[kCut] = state[kLo];
    state[kStage] = kCutFound;
  }
}

/// Shares: the nucleus is the mass above the cut and the first ties at it,
/// in vocabulary order, that reach the threshold (cut > 0; with a threshold
/// of 0, the first tie alone): each rank's kept mass and ties.
template <typename Words>
BRAID_SAMPLING_HD inline void mergeShares(Words words, int64_t ranks, uint64_t *state) {
  uint64_t *offsets = state + kStateHeader, *kept = offsets + ranks, *ties = kept + ranks;
  const uint64_t cut = state[kCut], need = state[kNeed];
  uint64_t above = 0;
  for (int64_t k = 0; k < ranks; ++k)
    above += words(k)[0];
  uint64_t left = need > above ? (need - above + cut - 1) / cut : 1;
  state[kTotal] = above + left * cut;
  for (int64_t k = 0; k < ranks; ++k) {
    ties[k] = 0;
    kept[k] = words(k)[0];
  }
  for (int64_t k = nextByOffset(offsets, ranks, true, 0); k >= 0;
       k = nextByOffset(offsets, ranks, false, offsets[k])) {
    const uint64_t here = words(k)[1];
    ties[k] = left < here ? left : here;
    left -= ties[k];
    kept[k] += ties[k] * cut;
  }
  state[kStage] = kDrawCut;
}

/// Folds every rank's words of `phase` for this row (rank k's at
/// `words(k)`) into `state` (stateWords(ranks) words; Max writes it whole).
/// `stream` and `step` key the draw's uniform; `vocab` is the row's tokens;
/// `scratch` holds 2 ranks cap candidates (Mass).
template <typename Words>
BRAID_SAMPLING_HD inline Problem mergeWords(int32_t phase, Words words, int64_t ranks,
                                            const RowParams &p, int64_t cap, int64_t vocab,
                                            uint64_t stream, int64_t step, uint64_t *state,
                                            Candidate *scratch) {
  const uint64_t stage = state[kStage];
  if (phase == kPhaseMax)
    mergeMax(words, ranks, p, vocab, stream, step, state);
  else if (phase == kPhaseMass)
    return mergeMass(words, ranks, p, cap, vocab, state, scratch);
  else if (phase == kPhaseSearch && stage == kSearching)
    mergeSearch(words, ranks, state);
  else if (phase == kPhaseShares && stage == kCutFound)
    mergeShares(words, ranks, state);
  else if (phase == kPhaseDraw && (stage == kDrawAll || stage == kDrawCut))
    for (int64_t k = 0; k < ranks; ++k) // the owner's token
      if (words(k)[0] != kNone) {
        state[kToken] = words(k)[0];
        state[kStage] = kDecided;
      }
  return kFine;
}

/// Why a row was not decided by the phases its program ran.
BRAID_SAMPLING_HD inline const char *undecidedReason(uint64_t stage) {
  switch (stage) {
  case kDrawAll:
    return "it samples (temperature > 0), which the greedy schedule does not draw";
  case kSearching:
  case kCutFound:
  case kDrawCut:
    return "its top-p nucleus is not among the candidates, which needs the nucleus schedule";
  default:
    return "its search did not converge";
  }
}

} // namespace braid::rt::sampling

#endif // BRAID_RUNTIME_SAMPLING_ROWS_H
