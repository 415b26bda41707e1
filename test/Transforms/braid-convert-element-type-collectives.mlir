// RUN: braid-opt %s --braid-convert-element-type="to=bf16 master-weights=true" | FileCheck %s

// A collective moves its operand's elements as they are, also when the
// operand is a block argument: the shard a ZeRO-3 layer function gathers
// arrives converted (bf16), and so is the gathered weight.
shard.grid @grid(shape = 2)

// CHECK-LABEL: func.func private @layer
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[W:.*]]: tensor<4x8xbf16>) -> tensor<4x8xbf16>
func.func private @layer(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[G:.*]] = shard.all_gather %[[W]] on @grid grid_axes = [0] gather_axis = 0 : tensor<4x8xbf16> -> tensor<8x8xbf16>
  %g = shard.all_gather %w on @grid grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  // CHECK: braid.linear %[[X]], %[[G]] : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  %y = braid.linear %x, %g : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// The loss, and the collective that sums it, stay f32.
// CHECK-LABEL: func.func @step
func.func @step(%x: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
  // CHECK: braid.cross_entropy {{.*}} : tensor<4x8xbf16>, tensor<4xi32> -> tensor<f32>
  %loss = braid.cross_entropy %x, %labels : tensor<4x8xf32>, tensor<4xi32> -> tensor<f32>
  // CHECK: shard.all_reduce %{{.*}} on @grid grid_axes = [0] : tensor<f32> -> tensor<f32>
  %r = shard.all_reduce %loss on @grid grid_axes = [0] : tensor<f32> -> tensor<f32>
  return %r : tensor<f32>
}
