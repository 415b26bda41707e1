// RUN: braid-opt --braid-partition="grid=dp=2,tp=2 plan=data" %s | FileCheck %s

// Capacity groups of 2 tokens over dp=2: each rank holds 2 of the 4 groups,
// with their 3 slots per expert (6 rows of the 12), and tp replicates them.
// CHECK-LABEL: func.func @step(
// CHECK: braid.dispatch %{{.*}}, %{{.*}} group_size 2 : tensor<4x4xf32>, tensor<4x2xi32> -> tensor<3x6x4xf32>
// CHECK-NEXT: braid.combine %{{.*}}, %{{.*}}, %{{.*}} group_size 2 : tensor<3x6x4xf32>, tensor<4x2xf32>, tensor<4x2xi32> -> tensor<4x4xf32>
module {
  func.func @step(%x: tensor<8x4xf32>, %i: tensor<8x2xi32>, %w: tensor<8x2xf32>) -> tensor<8x4xf32> {
    %d = braid.dispatch %x, %i group_size 2 : tensor<8x4xf32>, tensor<8x2xi32> -> tensor<3x12x4xf32>
    %y = braid.combine %d, %w, %i group_size 2 : tensor<3x12x4xf32>, tensor<8x2xf32>, tensor<8x2xi32> -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}
