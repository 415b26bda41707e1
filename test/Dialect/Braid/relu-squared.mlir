// RUN: braid-opt %s | braid-opt | FileCheck %s --check-prefix=ROUND
// RUN: braid-opt %s --braid-autodiff | FileCheck %s --check-prefix=VJP
// RUN: braid-opt %s --braid-model-stats | FileCheck %s --check-prefix=COST
// RUN: braid-opt %s --braid-autodiff --braid-optimizer | braid-translate --braid-to-cpp --braid-roll-repeats=false | FileCheck %s --check-prefix=CPP
// RUN: braid-opt %s --braid-training-pipeline="grid=dp=2,tp=2 sequence-parallel=true" | FileCheck %s --check-prefix=SPMD

// braid.relu_squared, the op added as the proof of the op-interface design:
// its .td definition and its rules in ElementwiseOps.cpp give it a sharding
// rule (the data- and sequence-parallel step below partitions around it), a VJP (2 r dy,
// with r = relu(x)), a cost and a scalar expression (it fuses with its
// neighbours into one generated kernel), with no list of ops elsewhere.
// Its numerics are checked against numpy in test/Integration/op-gradients.py.

module attributes {braid.model = {name = "relu2-mlp", family = "gpt", vocab = 16 : i64}} {
  braid.param @wte normal(0.02) : tensor<16x8xf32>
  braid.param @up normal(0.02) : tensor<8x32xf32>
  braid.param @down normal(0.02) : tensor<32x8xf32>

  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<16x8xf32>
    %up = braid.get_param @up : tensor<8x32xf32>
    %down = braid.get_param @down : tensor<32x8xf32>
    %x = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
    %h = braid.linear %x, %up : tensor<2x4x8xf32>, tensor<8x32xf32> -> tensor<2x4x32xf32>
    // ROUND: braid.relu_squared %{{.*}} : tensor<2x4x32xf32>
    %a = braid.relu_squared %h : tensor<2x4x32xf32>
    %y = braid.linear %a, %down : tensor<2x4x32xf32>, tensor<32x8xf32> -> tensor<2x4x8xf32>
    %logits = braid.linear %y, %wte transpose_weight : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// The cotangent of h: 2 relu(h) dy, from forward ops only.
// VJP:      %[[A:.*]] = braid.relu_squared %[[H:.*]] : tensor<2x4x32xf32>
// VJP:      %[[R:.*]] = braid.relu %[[H]] : tensor<2x4x32xf32>
// VJP-NEXT: %[[TWICE:.*]] = braid.add %[[R]], %[[R]] : tensor<2x4x32xf32>
// VJP-NEXT: braid.mul %{{.*}}, %[[TWICE]] : tensor<2x4x32xf32>

// Two FLOPs per element (max, multiply) of the 2x4x32 activation, 512, and the
// cross-entropy's 4 per logit, 512: 128 non-matmul FLOPs per token of 8.
// COST: forward_nonmatmul_flops_per_token: 128

// The forward is a generated kernel; in the backward, relu (used twice by the
// add) is one, and the add with the multiplication by dy another.
// CPP:      // relu_squared
// CPP:      const float t0 = braid::relu(x0) * braid::relu(x0);
// CPP:      // relu
// CPP:      const float t0 = braid::relu(x0);
// CPP:      // add+mul
// CPP:      const float t0 = x0 + x0;
// CPP-NEXT: const float t1 = x1 * t0;

// Data parallelism splits its batch, sequence parallelism (over tp) its
// sequence: any split passes through an elementwise op.
// SPMD: braid.relu_squared %{{.*}} : tensor<1x2x32xf32>
