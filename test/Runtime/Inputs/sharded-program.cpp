// A hand-written stand-in for a partitioned Braid program (test/Runtime/sharded-init.py).
// Built plain it is the 1-rank program; with -DSHARDED it is the same program
// partitioned for the grid dp=2,tp=2: every descriptor keeps its global shape
// and says which axes split which dimension, the arena holds the local shards.
//
//   tensor  dtype  global    split                 local (SHARDED)  init
//   w       f32    [5, 97]   dim 1 over tp         [5, 49] (1 pad)  normal(0.02)
//   e       bf16   [7, 6]    dim 0 over dp,tp      [2, 6]  (1 pad)  normal(1.0)
//   x       f32    [6, 10]   dim 0 dp, dim 1 tp    [3, 5]           normal(1.0)
//   g       f32    [5]       dim 0 over tp         [3]     (1 pad)  ones
//   m       f32    [3]       global shape, no split [3]             zeros
//   z       f32    [4, 3]    dim 0 over tp,dp      [1, 3]           normal(1.0)
//   tokens  i32    [4, 6]    dim 0 over dp         [2, 6]           tokens in [0, 11)
//
// Each step halves w and negates x (padding stays zero), announces
// layers.0.h = 2 w and emb = e (sharded values, braid_rt_value_sharded) and
// writes the loss: the sum of the tokens (each dp shard counted once, by the
// ranks at tp coordinate 0, then summed over the world as a compiled step does).
// -DVARIANT_NOGRID: the sharded program without braid_program.grid (the grid
// must then come from --grid).
#include "braid/runtime.h"

namespace {

#ifdef SHARDED
constexpr int64_t kTp = 2, kDp = 2;
#else
constexpr int64_t kTp = 1, kDp = 1;
#endif
constexpr int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }

const int64_t kWShape[] = {5, ceilDiv(97, kTp)};
const int64_t kEShape[] = {ceilDiv(7, kDp * kTp), 6};
const int64_t kXShape[] = {ceilDiv(6, kDp), ceilDiv(10, kTp)};
const int64_t kGShape[] = {ceilDiv(5, kTp)};
const int64_t kMShape[] = {3};
const int64_t kZShape[] = {ceilDiv(4, kTp * kDp), 3};
const int64_t kTokShape[] = {ceilDiv(4, kDp), 6};

constexpr int64_t kWBytes = 5 * ceilDiv(97, kTp) * 4;
constexpr int64_t kW = 0;
constexpr int64_t kE = align64(kW + kWBytes);
constexpr int64_t kX = align64(kE + ceilDiv(7, kDp * kTp) * 6 * 2);
constexpr int64_t kG = align64(kX + ceilDiv(6, kDp) * ceilDiv(10, kTp) * 4);
constexpr int64_t kM = align64(kG + ceilDiv(5, kTp) * 4);
constexpr int64_t kZ = align64(kM + 3 * 4);
constexpr int64_t kTok = align64(kZ + ceilDiv(4, kTp * kDp) * 3 * 4);
constexpr int64_t kLoss = align64(kTok + ceilDiv(4, kDp) * 6 * 4);
constexpr int64_t kH = align64(kLoss + 4);
constexpr int64_t kArena = kH + kWBytes;

#ifdef SHARDED
const int64_t kWGlobal[] = {5, 97};
const int64_t kEGlobal[] = {7, 6};
const int64_t kXGlobal[] = {6, 10};
const int64_t kGGlobal[] = {5};
const int64_t kMGlobal[] = {3};
const int64_t kZGlobal[] = {4, 3};
const int64_t kTokGlobal[] = {4, 6};
const char *const kWSplit[] = {"", "tp"};
const char *const kESplit[] = {"dp,tp", nullptr};
const char *const kXSplit[] = {"dp", "tp"};
const char *const kGSplit[] = {"tp"};
const char *const kZSplit[] = {"tp, dp", ""};
const char *const kTokSplit[] = {"dp", ""};
#define SHARD(global, split) , global, split
#else
#define SHARD(global, split)
#endif

const braid_tensor_desc kParams[] = {
    {"w", BRAID_F32, 2, kWShape, BRAID_INIT_NORMAL, 0.02, 0, kW SHARD(kWGlobal, kWSplit)},
    {"e", BRAID_BF16, 2, kEShape, BRAID_INIT_NORMAL, 1.0, 0, kE SHARD(kEGlobal, kESplit)},
    {"x", BRAID_F32, 2, kXShape, BRAID_INIT_NORMAL, 1.0, 0, kX SHARD(kXGlobal, kXSplit)},
    {"g", BRAID_F32, 1, kGShape, BRAID_INIT_ONES, 0.0, 0, kG SHARD(kGGlobal, kGSplit)},
    {"m", BRAID_F32, 1, kMShape, BRAID_INIT_ZEROS, 0.0, 0, kM SHARD(kMGlobal, nullptr)},
    {"z", BRAID_F32, 2, kZShape, BRAID_INIT_NORMAL, 1.0, 0, kZ SHARD(kZGlobal, kZSplit)},
};
const braid_tensor_desc kInputs[] = {
    {"tokens", BRAID_I32, 2, kTokShape, BRAID_INIT_TOKENS, 0.0, 11, kTok
     SHARD(kTokGlobal, kTokSplit)},
};

void step(braid_rt *rt, char *arena) {
  float *w = reinterpret_cast<float *>(arena + kW);
  float *x = reinterpret_cast<float *>(arena + kX);
  const int32_t *tokens = reinterpret_cast<const int32_t *>(arena + kTok);
  float *loss = reinterpret_cast<float *>(arena + kLoss);
  float *h = reinterpret_cast<float *>(arena + kH);
  const int64_t wn = kWShape[0] * kWShape[1];

  braid_rt_op_begin(rt, "update", "w");
  for (int64_t i = 0; i < wn; ++i)
    w[i] *= 0.5f;
  for (int64_t i = 0; i < kXShape[0] * kXShape[1]; ++i)
    x[i] = -x[i];
  braid_rt_op_end(rt);

  braid_rt_push_scope(rt, "layers");
  braid_rt_push_scope(rt, "0");
  braid_rt_alloc(rt, kH, kWBytes, "h");
  for (int64_t i = 0; i < wn; ++i)
    h[i] = 2.0f * w[i];
#ifdef SHARDED
  braid_rt_value_sharded(rt, nullptr, "h", h, BRAID_F32, 2, kWShape, kWGlobal, kWSplit);
#else
  braid_rt_value(rt, nullptr, "h", h, BRAID_F32, 2, kWShape);
#endif
  braid_rt_free(rt, kH, kWBytes);
  braid_rt_pop_scope(rt);
  braid_rt_pop_scope(rt);
#ifdef SHARDED
  braid_rt_value_sharded(rt, "", "emb", arena + kE, BRAID_BF16, 2, kEShape, kEGlobal, kESplit);
#else
  braid_rt_value(rt, "", "emb", arena + kE, BRAID_BF16, 2, kEShape);
#endif

  double sum = 0;
  if (braid_comm_rank(braid_rt_comm(rt, "tp")) == 0)
    for (int64_t i = 0; i < kTokShape[0] * kTokShape[1]; ++i)
      sum += tokens[i];
  *loss = float(sum);
  braid_event_wait(rt, braid_all_reduce(rt, braid_rt_comm(rt, "world"), loss, loss, 1,
                                        BRAID_F32, BRAID_RED_SUM));
}

const braid_program kProgram = {
    "sharded", kArena, 6, kParams, 1, kInputs, kLoss, step,
#if defined(SHARDED) && !defined(VARIANT_NOGRID)
    "dp=2,tp=2",
#else
    nullptr,
#endif
};

} // namespace

extern "C" const braid_program *braid_program_get(void) { return &kProgram; }
