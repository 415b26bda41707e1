// RUN: braid-translate --braid-to-cpp %s -split-input-file | FileCheck %s

// braid.set_param: a value written into a parameter is stored in the
// parameter itself when nothing touches the parameter while the value is
// live (a ZeRO all-gather then writes it in place: nothing to copy); when
// the parameter's old value is still read meanwhile, the value has a
// buffer of its own and is copied in at the set.

// CHECK-LABEL: void fn_step(
// CHECK:       braid::launch_elementwise(rt, 64, fused_{{[0-9]+}}{static_cast<float *>(at(arena, [[W:[0-9]+]]))});
// CHECK-NOT:   braid_rt_copy
// CHECK:       braid_k_cross_entropy
// CHECK:       {"w", BRAID_F32, 2, kShape0, BRAID_INIT_ZEROS, 0, 0, [[W]]
module attributes {braid.model = {name = "m", family = "gpt", vocab = 8 : i64}} {
  braid.param @wte normal(0.02) : tensor<8x8xf32>
  braid.param @w zeros : tensor<8x8xf32>
  func.func @step(%tok: tensor<2xi32>, %t: tensor<2xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<8x8xf32>
    %l = braid.embedding %tok, %wte : tensor<2xi32>, tensor<8x8xf32> -> tensor<2x8xf32>
    %x = braid.fill 5.000000e-01 : tensor<64xf32>
    braid.set_param @w, %x : tensor<64xf32>
    %loss = braid.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// CHECK-LABEL: void fn_step(
// CHECK:       braid::launch_elementwise(rt, 64, fused_{{[0-9]+}}{static_cast<float *>(at(arena, frame + [[X:[0-9]+]]))});
// CHECK:       braid_k_linear(rt, BRAID_F32, {{.*}}, at(arena, [[W:[0-9]+]]),
// CHECK:       braid_rt_op_begin(rt, "set_param",
// CHECK-NEXT:  braid_rt_copy(rt, at(arena, [[W]]), at(arena, frame + [[X]]), 256);
module attributes {braid.model = {name = "m", family = "gpt", vocab = 8 : i64}} {
  braid.param @wte normal(0.02) : tensor<8x8xf32>
  braid.param @w zeros : tensor<8x8xf32>
  func.func @step(%tok: tensor<2xi32>, %t: tensor<2xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<8x8xf32>
    %h = braid.embedding %tok, %wte : tensor<2xi32>, tensor<8x8xf32> -> tensor<2x8xf32>
    %w = braid.get_param @w : tensor<8x8xf32>
    %x = braid.fill 5.000000e-01 : tensor<64xf32>
    %l = braid.linear %h, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
    braid.set_param @w, %x : tensor<64xf32>
    %loss = braid.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
