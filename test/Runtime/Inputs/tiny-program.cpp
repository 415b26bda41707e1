// A hand-written stand-in for a compiled Braid program (test/Runtime/program-cpu.py).
// Arena layout (bytes):
//   [0, 128)    embed.w          f32  [4, 8]  normal(0.02)
//   [128, 158)  layers.0.norm.g  bf16 [3, 5]  normal(1.0)
//   [160, 208)  tokens           i32  [2, 6]  tokens in [0, 4)
//   [208, 212)  loss             f32  []
//   [256, 320)  h                f32  [2, 8]    (step activation)
//   [320, 352)  tmp              f32  [8]       (step activation)
// Variants: -DVARIANT_OVERLAP (a live-buffer overlap), -DVARIANT_PEAK (the plan
// claims more than is used), -DVARIANT_SEND (send to self), -DVARIANT_DECODE
// (an entry point of another kind than a training step).
#include "braid/runtime.h"

#include <string.h>

namespace {

const int64_t kEmbedShape[] = {4, 8};
const int64_t kNormShape[] = {3, 5};
const int64_t kTokenShape[] = {2, 6};
const int64_t kHShape[] = {2, 8};
const int64_t kTmpShape[] = {8};

const braid_tensor_desc kParams[] = {
    {"embed.w", BRAID_F32, 2, kEmbedShape, BRAID_INIT_NORMAL, 0.02, 0, 0},
    {"layers.0.norm.g", BRAID_BF16, 2, kNormShape, BRAID_INIT_NORMAL, 1.0, 0, 128},
};
const braid_tensor_desc kInputs[] = {
    {"tokens", BRAID_I32, 2, kTokenShape, BRAID_INIT_TOKENS, 0.0, 4, 160},
};

float bf16(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

void step(braid_rt *rt, char *arena) {
  const float *w = reinterpret_cast<const float *>(arena + 0);
  const uint16_t *g = reinterpret_cast<const uint16_t *>(arena + 128);
  const int32_t *tokens = reinterpret_cast<const int32_t *>(arena + 160);
  float *loss = reinterpret_cast<float *>(arena + 208);
  float *h = reinterpret_cast<float *>(arena + 256);
  float *tmp = reinterpret_cast<float *>(arena + 320);

  braid_rt_push_scope(rt, "layers");
  braid_rt_push_scope(rt, "0");
  braid_rt_alloc(rt, 256, 64, "h");
  braid_rt_op_begin(rt, "embed_sum", "h");
  // h[b, j] = sum_s w[tokens[b, s], j] * g[(b * 8 + j) % 15]
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 8; ++j) {
      double acc = 0;
      for (int s = 0; s < 6; ++s)
        acc += double(w[tokens[b * 6 + s] * 8 + j]) * double(bf16(g[(b * 8 + j) % 15]));
      h[b * 8 + j] = float(acc);
    }
  braid_rt_op_end(rt);
  braid_rt_value(rt, nullptr, "h", h, BRAID_F32, 2, kHShape); // scope from the stack
#ifdef VARIANT_OVERLAP
  braid_rt_alloc(rt, 300, 40, "bad");
#endif
  braid_rt_alloc(rt, 320, 32, "tmp");
  braid_rt_op_begin(rt, "square_mean", "tmp");
  for (int j = 0; j < 8; ++j)
    tmp[j] = float((double(h[j]) * h[j] + double(h[8 + j]) * h[8 + j]) / 2.0);
  braid_rt_op_end(rt);
  braid_rt_value(rt, "", "grad/tmp", tmp, BRAID_F32, 1, kTmpShape); // explicit empty scope
  braid_rt_pop_scope(rt);
  braid_rt_pop_scope(rt);
  double sum = 0;
  for (int j = 0; j < 8; ++j)
    sum += tmp[j];
  *loss = float(sum);
  braid_rt_free(rt, 256, 64);
  braid_rt_free(rt, 320, 32);
  braid_rt_alloc(rt, 0, 0, "empty"); // ignored
  braid_comm *world = braid_rt_comm(rt, "world");
  if (braid_comm_size(world) != 1 || braid_comm_rank(world) != 0 ||
      braid_rt_comm(rt, "world") != world)
    *loss = -1.0f;
  braid_rt_op_begin(rt, "all_reduce", "loss");
  braid_event_wait(rt, braid_all_reduce(rt, world, loss, loss, 1, BRAID_F32, BRAID_RED_SUM));
  braid_rt_op_end(rt);
  braid_comm *tp = braid_rt_comm(rt, "dp,tp");
  braid_event_wait(rt, braid_all_gather(rt, tp, loss, loss, 1, BRAID_F32));
#ifdef VARIANT_SEND
  braid_event_wait(rt, braid_send(rt, tp, loss, 1, BRAID_F32, 0));
#endif
}

const braid_program kProgram = {
    "tiny",
#ifdef VARIANT_PEAK
    384,
#else
    352,
#endif
    2, kParams, 1, kInputs, 208, step,
#ifdef VARIANT_DECODE
    nullptr, 0, nullptr, nullptr, 0, nullptr, nullptr, BRAID_ENTRY_DECODE,
#endif
};

} // namespace

extern "C" const braid_program *braid_program_get(void) { return &kProgram; }
