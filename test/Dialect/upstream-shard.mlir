// RUN: braid-opt %s --pass-pipeline="builtin.module(func.func(sharding-propagation{traversal=forward-backward}))" | FileCheck %s
// RUN: braid-opt %s --pass-pipeline="builtin.module(func.func(sharding-propagation{traversal=forward-backward},shard-partition))" | FileCheck %s --check-prefix=PART

// braid-opt registers the upstream shard dialect, linalg's sharding models and
// the upstream propagation and partition passes that the parallel stages use.

shard.grid @grid(shape = 2x2)

// CHECK-LABEL: func.func @mlp
// PART-LABEL: func.func @mlp
// PART-SAME: tensor<4x16xf32>
func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<8x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<8x32xf32>) -> tensor<8x32xf32>
  // The weight stays replicated, the batch split propagates to the result.
  // CHECK: shard.sharding @grid split_axes = {{\[\[}}]]
  // CHECK: linalg.matmul
  // PART: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<16x32xf32>) {{.*}} -> tensor<4x32xf32>
  %y = linalg.matmul ins(%xs, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%init : tensor<8x32xf32>) -> tensor<8x32xf32>
  // CHECK: shard.sharding @grid split_axes = {{\[\[}}0]]
  return %y : tensor<8x32xf32>
}
