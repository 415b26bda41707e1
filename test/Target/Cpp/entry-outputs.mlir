// RUN: braid-translate --braid-to-cpp %s | FileCheck %s
// RUN: braid-opt --braid-print-memory-plan %s -o /dev/null | FileCheck %s --check-prefix=PLAN

// A forward entry point returns its hidden state and logits, not a loss: the
// memory plan places each result after the inputs, and the program declares
// them (kOutputs), its kind, and no loss (loss_offset -1).

module attributes {braid.model = {name = "fwd", family = "gpt", vocab = 10 : i64}} {
  braid.param @wte normal(0.02) : tensor<10x8xf32>

  func.func @forward(%tok: tensor<2x4xi32>) -> (tensor<2x4x8xf32>, tensor<2x4x10xf32>) attributes {braid.entry = "forward"} {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32> loc("h")
    %logits = braid.linear %h, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32> loc("logits")
    return %h, %logits : tensor<2x4x8xf32>, tensor<2x4x10xf32>
  }
}

// PLAN:      param @wte offset 0 bytes 320
// PLAN-NEXT: input #0 offset 320 bytes 32
// PLAN-NEXT: output #0 offset 384 bytes 256
// PLAN-NEXT: output #1 offset 640 bytes 320
// PLAN-NOT:  loss

// CHECK:      const braid_tensor_desc kOutputs[] = {
// CHECK-NEXT:   {nullptr, BRAID_F32, 3, [[H:kShape[0-9]+]], BRAID_INIT_ZEROS, 0, 0, 384},
// CHECK-NEXT:   {nullptr, BRAID_F32, 3, [[L:kShape[0-9]+]], BRAID_INIT_ZEROS, 0, 0, 640},
// CHECK-NEXT: };
// CHECK:      void step(braid_rt *rt, char *arena) {
// CHECK-NEXT:   void *const args[] = {arena + 320};
// CHECK-NEXT:   void *const results[] = {arena + 384, arena + 640};
// CHECK-NEXT:   fn_forward(rt, arena, 960, args, results);
// CHECK:      const braid_program kProgram = {"fwd", {{[0-9]+}}, 1, kParams, 1, kInputs, -1, step, {{.*}}, BRAID_ENTRY_FORWARD, 2, kOutputs};
