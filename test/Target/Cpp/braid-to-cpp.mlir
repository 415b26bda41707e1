// RUN: braid-translate --braid-to-cpp --braid-roll-repeats=false %s | FileCheck %s

// A two-layer MLP model: one layer function called twice, an elementwise
// chain fused into one generated kernel, buffers announced at their planned
// offsets, values named after their locations, and the program descriptor.

module attributes {braid.model = {name = "mlp", family = "gpt", vocab = 10 : i64}} {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  braid.param @l0.up normal(0.02) : tensor<8x16xf32>
  braid.param @l0.down zeros : tensor<16x8xf32>
  braid.param @l1.up normal(0.02) : tensor<8x16xf32>
  braid.param @l1.down ones : tensor<16x8xf32>

  func.func private @mlp(%x: tensor<2x4x8xf32>, %up: tensor<8x16xf32>, %down: tensor<16x8xf32>) -> tensor<2x4x8xf32> {
    %h = braid.linear %x, %up : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32> loc("h")
    %g = braid.silu %h : tensor<2x4x16xf32> loc("g")
    %m = braid.mul %g, %h : tensor<2x4x16xf32> loc("m")
    %y = braid.linear %m, %down : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32> loc("y")
    %r = braid.add %x, %y : tensor<2x4x8xf32> loc("r")
    return %r : tensor<2x4x8xf32>
  }

  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32> loc("h0")
    %u0 = braid.get_param @l0.up : tensor<8x16xf32>
    %d0 = braid.get_param @l0.down : tensor<16x8xf32>
    %h1 = func.call @mlp(%h0, %u0, %d0) : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %u1 = braid.get_param @l1.up : tensor<8x16xf32>
    %d1 = braid.get_param @l1.down : tensor<16x8xf32>
    %h2 = func.call @mlp(%h1, %u1, %d1) : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = braid.linear %h2, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32> loc("logits")
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK: #include "braid/runtime.h"
// CHECK: #include "braid/codegen.h"

// silu and mul become one kernel; %g is never stored.
// CHECK:      // silu+mul
// CHECK-NEXT: struct fused_0 {
// CHECK-NEXT:   const float *in_x0;
// CHECK-NEXT:   float *out;
// CHECK-NEXT:   BRAID_HD void operator()(int64_t i) const {
// CHECK-NEXT:     const float x0 = braid::load(in_x0, i);
// CHECK-NEXT:     const float t0 = braid::silu(x0);
// CHECK-NEXT:     const float t1 = t0 * x0;
// CHECK-NEXT:     braid::store(out, i, t1);

// The residual add writes straight into the caller's buffer for the result.
// The fused silu*h reads %h for the last time: it writes in place of it (no
// buffer of its own for %m, which is announced at %h's place).
// CHECK:      struct fused_1 {
// CHECK:      // @mlp: frame of 768 bytes.
// CHECK-NEXT: void fn_mlp(braid_rt *rt, char *arena, int64_t frame, void *const *args, void *const *results) {
// CHECK:        braid_rt_alloc(rt, frame + 0, 512, "h");
// CHECK:        braid_k_linear(rt, BRAID_F32, args[0], args[1], nullptr, at(arena, frame + 0), 8, 8, 16, 0);
// CHECK-NOT:    braid_rt_alloc
// CHECK:        braid::launch_elementwise(rt, 128, fused_0{static_cast<const float *>(at(arena, frame + 0)), static_cast<float *>(at(arena, frame + 0))});
// CHECK:        braid_rt_value(rt, nullptr, "m", at(arena, frame + 0), BRAID_F32, 3, kA0);
// CHECK:        braid_rt_alloc(rt, frame + 512, 256, "y");
// CHECK:        braid_rt_free(rt, frame + 0, 512);
// CHECK:        braid::launch_elementwise(rt, 64, fused_1{{.*}}static_cast<float *>(results[0])});

// Calls nest the callee's frame and name its values under the layer's prefix.
// CHECK:      void fn_step(
// CHECK:        braid_k_embedding(rt, BRAID_F32, BRAID_I32, args[0], at(arena, 0), nullptr, at(arena, frame + 768), 8, 4, 10, 8);
// CHECK:        braid_rt_push_scope(rt, "l0");
// CHECK:        fn_mlp(rt, arena, frame + 0, a, r);
// CHECK:        braid_rt_push_scope(rt, "l1");
// CHECK:        braid_k_cross_entropy(rt, BRAID_F32, BRAID_I32, {{.*}}, args[1], static_cast<float *>(results[0]), 8, 10);

// CHECK:      const braid_tensor_desc kParams[] = {
// CHECK-NEXT:   {"wte", BRAID_F32, 2, kShape0, BRAID_INIT_NORMAL, 0.02, 0, 0},
// CHECK-NEXT:   {"l0.up", BRAID_F32, 2, kShape1, BRAID_INIT_NORMAL, 0.02, 0, 320},
// CHECK-NEXT:   {"l0.down", BRAID_F32, 2, kShape2, BRAID_INIT_ZEROS, 0, 0, 832},
// Tensors of one shape share its array.
// CHECK-NEXT:   {"l1.up", BRAID_F32, 2, kShape1, BRAID_INIT_NORMAL, 0.02, 0, 1344},
// CHECK-NEXT:   {"l1.down", BRAID_F32, 2, kShape2, BRAID_INIT_ONES, 0, 0, 1856},
// CHECK:      const braid_tensor_desc kInputs[] = {
// CHECK-NEXT:   {"tokens", BRAID_I32, 2, kShape3, BRAID_INIT_TOKENS, 0, 10, 2368},
// CHECK-NEXT:   {"labels", BRAID_I32, 2, kShape3, BRAID_INIT_TOKENS, 0, 10, 2432},
// The entry's results are declared for the runtime: the step's loss.
// CHECK:      const braid_tensor_desc kOutputs[] = {
// CHECK-NEXT:   {nullptr, BRAID_F32, 0, nullptr, BRAID_INIT_ZEROS, 0, 0, 2496},
// The step runs the entry; the loss is what it returns (no reduction).
// CHECK:      void step(braid_rt *rt, char *arena) {
// CHECK-NEXT:   void *const args[] = {arena + 2368, arena + 2432};
// CHECK-NEXT:   void *const results[] = {arena + 2496};
// CHECK-NEXT:   fn_step(rt, arena, 2560, args, results);
// CHECK-NEXT: }
// CHECK:      const braid_program kProgram = {"mlp", 3840, 5, kParams, 2, kInputs, 2496, step, nullptr, 0, nullptr, nullptr, 0, nullptr, nullptr, BRAID_ENTRY_TRAIN_STEP, 1, kOutputs};
// CHECK:      extern "C" const braid_program *braid_program_get(void) { return &kProgram; }
