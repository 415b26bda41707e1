// A hand-written stand-in for a context-parallel Braid program with zigzag
// load balancing (test/Runtime/zigzag-layout.py). Built plain it is the 1-rank
// program; with -DZIGZAG it is the same program partitioned for the grid
// cp=2,tp=2 (-DCP4: cp=4,tp=1) with braid_program.zigzag_axis = "cp": every
// sequence dimension split over cp first is stored in zigzag order (rank i of
// cp holds chunks i and 2cp-1-i of 2cp chunks), the arena holds the local
// shards.
//
//   tensor  dtype  global      split                      local (cp=2,tp=2)  init
//   w       f32    [4, 6]      dim 1 over tp              [4, 3]             normal(0.02)
//   pe      f32    [S, 3]      dim 0 over cp,tp (zigzag)  [4, 3]             normal(1.0)
//   tokens  i32    [B, S]      dim 1 over cp (zigzag)     [2, 8]             tokens in [0, 11)
//   feat    f32    [B, S, 4]   dim 1 cp (zigzag), 2 tp    [2, 8, 2]          normal(1.0)
//
// with B = 2, S = 16. Each step halves w and negates pe, and announces
// act [B, S, 3] = tokens[b, s] + pe[s, h] (braid_rt_value_sharded, dim 1 over
// cp,tp: zigzag): the zigzag order depends only on S and the cp size, so the
// rows of a (cp, tp) rank's pe shard are the rows tp * S/(cp tp) + r of its
// cp rank's token shard. The loss is sum tokens[b, s] * (s + 1) over global
// positions s (the program maps its stored rows to positions itself; counted
// once per cp rank, by tp coordinate 0, then summed over the world).
//
// -DVARIANT_ODD: S = 18, not a multiple of 2 cp. -DVARIANT_MINOR: pe split
// over "tp,cp" (the zigzag axis not first). -DVARIANT_NOAXIS: zigzag_axis
// "sp", which the grid lacks.
#include "braid/runtime.h"

namespace {

#ifdef ZIGZAG
#ifdef CP4
constexpr int64_t kCp = 4, kTp = 1;
#define GRID "cp=4,tp=1"
#else
constexpr int64_t kCp = 2, kTp = 2;
#define GRID "cp=2,tp=2"
#endif
#else
constexpr int64_t kCp = 1, kTp = 1;
#endif
constexpr int64_t kB = 2;
#ifdef VARIANT_ODD
constexpr int64_t kS = 18;
#else
constexpr int64_t kS = 16;
#endif
constexpr int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }

constexpr int64_t kSeqCp = ceilDiv(kS, kCp);         ///< local rows over cp
constexpr int64_t kSeqCpTp = ceilDiv(kS, kCp * kTp); ///< local rows over cp,tp
const int64_t kWShape[] = {4, ceilDiv(6, kTp)};
const int64_t kPeShape[] = {kSeqCpTp, 3};
const int64_t kTokShape[] = {kB, kSeqCp};
const int64_t kFeatShape[] = {kB, kSeqCp, ceilDiv(4, kTp)};
const int64_t kActShape[] = {kB, kSeqCpTp, 3};

constexpr int64_t kW = 0;
constexpr int64_t kPe = align64(kW + 4 * ceilDiv(6, kTp) * 4);
constexpr int64_t kTok = align64(kPe + kSeqCpTp * 3 * 4);
constexpr int64_t kFeat = align64(kTok + kB * kSeqCp * 4);
constexpr int64_t kLoss = align64(kFeat + kB * kSeqCp * ceilDiv(4, kTp) * 4);
constexpr int64_t kAct = align64(kLoss + 4);
constexpr int64_t kActBytes = kB * kSeqCpTp * 3 * 4;
constexpr int64_t kArena = kAct + kActBytes;

#ifdef ZIGZAG
const int64_t kWGlobal[] = {4, 6};
const int64_t kPeGlobal[] = {kS, 3};
const int64_t kTokGlobal[] = {kB, kS};
const int64_t kFeatGlobal[] = {kB, kS, 4};
const int64_t kActGlobal[] = {kB, kS, 3};
const char *const kWSplit[] = {"", "tp"};
#ifdef VARIANT_MINOR
const char *const kPeSplit[] = {"tp,cp", ""};
#else
const char *const kPeSplit[] = {"cp,tp", ""};
#endif
const char *const kTokSplit[] = {"", "cp"};
const char *const kFeatSplit[] = {"", "cp", "tp"};
const char *const kActSplit[] = {"", "cp,tp", ""};
#define SHARD(global, split) , global, split
#else
#define SHARD(global, split)
#endif

const braid_tensor_desc kParams[] = {
    {"w", BRAID_F32, 2, kWShape, BRAID_INIT_NORMAL, 0.02, 0, kW SHARD(kWGlobal, kWSplit)},
    {"pe", BRAID_F32, 2, kPeShape, BRAID_INIT_NORMAL, 1.0, 0, kPe SHARD(kPeGlobal, kPeSplit)},
};
const braid_tensor_desc kInputs[] = {
    {"tokens", BRAID_I32, 2, kTokShape, BRAID_INIT_TOKENS, 0.0, 11, kTok
     SHARD(kTokGlobal, kTokSplit)},
    {"feat", BRAID_F32, 3, kFeatShape, BRAID_INIT_NORMAL, 1.0, 0, kFeat
     SHARD(kFeatGlobal, kFeatSplit)},
};

/// The global position of stored row p of the sequence (zigzag over cp).
int64_t position(int64_t p) {
  if (kCp == 1)
    return p;
  const int64_t c = kS / (2 * kCp), j = p / (2 * c), w = p % (2 * c);
  return w < c ? j * c + w : (2 * kCp - 1 - j) * c + (w - c);
}

void step(braid_rt *rt, char *arena) {
  float *w = reinterpret_cast<float *>(arena + kW);
  float *pe = reinterpret_cast<float *>(arena + kPe);
  const int32_t *tokens = reinterpret_cast<const int32_t *>(arena + kTok);
  float *loss = reinterpret_cast<float *>(arena + kLoss);
  float *act = reinterpret_cast<float *>(arena + kAct);
  const int32_t cp = braid_comm_rank(braid_rt_comm(rt, "cp"));
  const int32_t tp = braid_comm_rank(braid_rt_comm(rt, "tp"));

  braid_rt_op_begin(rt, "update", "w");
  for (int64_t i = 0; i < kWShape[0] * kWShape[1]; ++i)
    w[i] *= 0.5f;
  for (int64_t i = 0; i < kPeShape[0] * kPeShape[1]; ++i)
    pe[i] = -pe[i];
  braid_rt_op_end(rt);

  braid_rt_alloc(rt, kAct, kActBytes, "act");
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t r = 0; r < kSeqCpTp; ++r)
      for (int64_t h = 0; h < 3; ++h)
        act[(b * kSeqCpTp + r) * 3 + h] = float(tokens[b * kSeqCp + tp * kSeqCpTp + r]) +
                                          pe[r * 3 + h];
#ifdef ZIGZAG
  braid_rt_value_sharded(rt, nullptr, "act", act, BRAID_F32, 3, kActShape, kActGlobal,
                         kActSplit);
#else
  braid_rt_value(rt, nullptr, "act", act, BRAID_F32, 3, kActShape);
#endif
  braid_rt_free(rt, kAct, kActBytes);

  // Small integers: the sum is exact in any order.
  double sum = 0;
  if (tp == 0)
    for (int64_t b = 0; b < kB; ++b)
      for (int64_t i = 0; i < kSeqCp; ++i)
        sum += double(tokens[b * kSeqCp + i]) * double(position(cp * kSeqCp + i) + 1);
  *loss = float(sum);
  braid_event_wait(rt, braid_all_reduce(rt, braid_rt_comm(rt, "world"), loss, loss, 1,
                                        BRAID_F32, BRAID_RED_SUM));
}

const braid_program kProgram = {
    "zigzag", kArena, 2, kParams, 2, kInputs, kLoss, step,
#ifdef ZIGZAG
    GRID, 0, nullptr, nullptr, 0,
#ifdef VARIANT_NOAXIS
    "sp",
#else
    "cp",
#endif
#else
    nullptr, 0, nullptr, nullptr, 0, nullptr,
#endif
};

} // namespace

extern "C" const braid_program *braid_program_get(void) { return &kProgram; }
