//===- kernel-smoke.cpp - a tiny program that computes only with kernels --===//
//
// Unlike test/Runtime/Inputs/tiny-program.cpp (host arithmetic on the arena),
// this step uses braid_k_* kernels only, so it runs on any backend: the CUDA
// check of the runtime (main.cpp with --backend cuda: init copies, dumps,
// CUDA-event trace, self collectives through backend copies).
//   w [4, 8] f32 normal(1.0) @0, labels [4] i32 tokens(8) @128, loss @144,
//   h [4, 8] f32 @192 (= w * w), r f32 @320 (all_reduce target).
// loss = cross_entropy(h, labels). Checked by tools/kernel-smoke-check.py.
//
//===----------------------------------------------------------------------===//

#include "braid/runtime.h"

namespace {

const int64_t kWShape[] = {4, 8};
const int64_t kLabelShape[] = {4};
const braid_tensor_desc kParams[] = {
    {"w", BRAID_F32, 2, kWShape, BRAID_INIT_NORMAL, 1.0, 0, 0}};
const braid_tensor_desc kInputs[] = {
    {"labels", BRAID_I32, 1, kLabelShape, BRAID_INIT_TOKENS, 0.0, 8, 128}};

void step(braid_rt *rt, char *arena) {
  const void *w = arena + 0;
  const void *labels = arena + 128;
  float *loss = reinterpret_cast<float *>(arena + 144);
  void *h = arena + 192;
  float *r = reinterpret_cast<float *>(arena + 320);
  braid_rt_push_scope(rt, "block");
  braid_rt_alloc(rt, 192, 128, "h");
  braid_rt_op_begin(rt, "binary", "h");
  braid_k_binary(rt, BRAID_F32, BRAID_BIN_MUL, w, w, h, 32);
  braid_rt_op_end(rt);
  braid_rt_value(rt, nullptr, "h", h, BRAID_F32, 2, kWShape);
  braid_rt_op_begin(rt, "cross_entropy", "loss");
  braid_k_cross_entropy(rt, BRAID_F32, BRAID_I32, h, labels, loss, 4, 8);
  braid_rt_op_end(rt);
  braid_rt_free(rt, 192, 128);
  braid_rt_pop_scope(rt);
  braid_rt_alloc(rt, 320, 4, "r");
  braid_comm *world = braid_rt_comm(rt, "world");
  braid_event_wait(rt, braid_all_reduce(rt, world, loss, r, 1, BRAID_F32, BRAID_RED_SUM));
  braid_event_wait(rt, braid_all_reduce(rt, world, r, loss, 1, BRAID_F32, BRAID_RED_SUM));
  braid_rt_free(rt, 320, 4);
}

const braid_program kProgram = {"kernel-smoke", 324, 1, kParams, 1, kInputs, 144, step};

} // namespace

extern "C" const braid_program *braid_program_get(void) { return &kProgram; }
