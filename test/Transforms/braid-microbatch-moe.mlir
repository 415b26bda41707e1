// RUN: braid-opt --braid-microbatch="count=2" %s | FileCheck %s

// Capacity groups survive micro-batching: 8 tokens in 4 groups of 2, 3 slots
// per expert and group (12 rows); a micro-batch holds 2 groups, 6 rows.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %{{.*}}: tensor<4x4xf32>, %{{.*}}: tensor<4x2xi32>
// CHECK: braid.dispatch %{{.*}}, %{{.*}} group_size 2 : tensor<4x4xf32>, tensor<4x2xi32> -> tensor<3x6x4xf32>
// CHECK: braid.combine %{{.*}}, %{{.*}}, %{{.*}} group_size 2 : tensor<3x6x4xf32>, tensor<4x2xf32>, tensor<4x2xi32> -> tensor<4x4xf32>
module {
  func.func @step(%x: tensor<8x4xf32>, %i: tensor<8x2xi32>, %w: tensor<8x2xf32>) -> tensor<8x4xf32> {
    %d = braid.dispatch %x, %i group_size 2 : tensor<8x4xf32>, tensor<8x2xi32> -> tensor<3x12x4xf32>
    %y = braid.combine %d, %w, %i group_size 2 : tensor<3x12x4xf32>, tensor<8x2xf32>, tensor<8x2xi32> -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}
