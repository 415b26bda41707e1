// RUN: braid-translate --braid-to-cpp %s | FileCheck %s

// MoE kernels take the capacity per group and the number of groups: 8 tokens
// in groups of 2 are 4 groups of 3 slots per expert (12 rows); without a
// group_size, all 8 tokens are one group of 12 slots.
// CHECK: braid_k_dispatch(rt, BRAID_F32, {{.*}}, 8, 4, 2, 3, 3, 4);
// CHECK: braid_k_combine(rt, BRAID_F32, {{.*}}, 8, 4, 2, 3, 3, 4);
// CHECK: braid_k_dispatch(rt, BRAID_F32, {{.*}}, 8, 4, 2, 3, 12, 1);
// CHECK: braid_k_combine(rt, BRAID_F32, {{.*}}, 8, 4, 2, 3, 12, 1);
module {
  braid.param @x normal(0.02) : tensor<8x4xf32>
  braid.param @r normal(0.02) : tensor<8x3xf32>
  func.func @step(%labels: tensor<8xi32>) -> tensor<f32> {
    %x = braid.get_param @x : tensor<8x4xf32>
    %r = braid.get_param @r : tensor<8x3xf32>
    %w, %i = braid.router %r top_k 2 : tensor<8x3xf32> -> tensor<8x2xf32>, tensor<8x2xi32>
    %d = braid.dispatch %x, %i group_size 2 : tensor<8x4xf32>, tensor<8x2xi32> -> tensor<3x12x4xf32>
    %y = braid.combine %d, %w, %i group_size 2 : tensor<3x12x4xf32>, tensor<8x2xf32>, tensor<8x2xi32> -> tensor<8x4xf32>
    %e = braid.dispatch %y, %i : tensor<8x4xf32>, tensor<8x2xi32> -> tensor<3x12x4xf32>
    %z = braid.combine %e, %w, %i : tensor<3x12x4xf32>, tensor<8x2xf32>, tensor<8x2xi32> -> tensor<8x4xf32>
    %l = braid.cross_entropy %z, %labels : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
