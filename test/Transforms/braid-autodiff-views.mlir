// RUN: braid-opt %s --braid-autodiff | FileCheck %s

// A view of an argument is redone in the backward function, not saved: a
// function cannot return its argument in place.

module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  braid.param @w normal(0.02) : tensor<4x4xf32>
  func.func private @layer(%x: tensor<2x4x8xf32>, %w: tensor<4x4xf32>) -> tensor<2x4x8xf32> {
    %v = braid.reshape %x : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %y = braid.linear %v, %w : tensor<2x4x2x4xf32>, tensor<4x4xf32> -> tensor<2x4x2x4xf32>
    %z = braid.reshape %y : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
    %r = braid.add %x, %z : tensor<2x4x8xf32>
    return %r : tensor<2x4x8xf32>
  }
  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32>
    %w = braid.get_param @w : tensor<4x4xf32>
    %h1 = func.call @layer(%h0, %w) : (tensor<2x4x8xf32>, tensor<4x4xf32>) -> tensor<2x4x8xf32>
    %logits = braid.linear %h1, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func private @layer.fwd
// CHECK-SAME:    -> tensor<2x4x8xf32> {
// CHECK-LABEL: func.func private @layer.bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<4x4xf32>, %{{.*}}: tensor<2x4x8xf32>)
// CHECK-NEXT:    %[[V:.*]] = braid.reshape %[[X]] : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
// CHECK:         braid.batch_matmul %{{.*}}, %{{.*}} transpose_a : tensor<16x4xf32>, tensor<16x4xf32> -> tensor<4x4xf32>
