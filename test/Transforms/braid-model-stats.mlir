// RUN: braid-opt %s --split-input-file --braid-model-stats -o /dev/null | FileCheck %s

// Two calls of one layer function (8 -> 16 -> 8 MLP), an LM head tied to the
// embedding table, 2 x 4 = 8 tokens per step.
//
// Parameters: wte 10*8 + 2 layers * (8*16 + 16*8) = 80 + 512 = 592.
// Forward matmul FLOPs per token: layers 2 * (2*8*16 + 2*16*8) = 1024, head 2*8*10 = 160.
// Activations per call: linear 2*4*16*4 B + gelu 512 B + linear 2*4*8*4 B + add 256 B = 1536 B,
// over 8 tokens = 192 B per token.

// CHECK: config.family: gpt
// CHECK-NEXT: config.hidden: 8
// CHECK-NEXT: config.name: mlp-2l
// CHECK-NEXT: parameters: 592
// CHECK-NEXT: parameters_active: 592
// CHECK-NEXT: parameters_embedding: 80
// CHECK-NEXT: parameter_bytes: 2368
// CHECK-NEXT: tokens_per_step: 8
// CHECK-NEXT: layers: 2
// CHECK-NEXT: forward_flops_per_token: 1184
// CHECK-NEXT: forward_nonmatmul_flops_per_token:
// CHECK-NEXT: training_flops_per_token: 3552
// CHECK-NEXT: training_flops_per_token_selective_recompute: 3552
// CHECK-NEXT: training_flops_per_token_full_recompute: 4576
// CHECK-NEXT: layer.mlp.calls: 2
// CHECK-NEXT: layer.mlp.forward_flops_per_token: 512
// CHECK-NEXT: layer.mlp.activation_bytes_per_token: 192
module attributes {braid.model = {name = "mlp-2l", family = "gpt", hidden = 8 : i64}} {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  braid.param @l0.up normal(0.02) : tensor<8x16xf32>
  braid.param @l0.down normal(0.02) : tensor<16x8xf32>
  braid.param @l1.up normal(0.02) : tensor<8x16xf32>
  braid.param @l1.down normal(0.02) : tensor<16x8xf32>

  func.func private @mlp(%x: tensor<2x4x8xf32>, %up: tensor<8x16xf32>, %down: tensor<16x8xf32>) -> tensor<2x4x8xf32> {
    %h = braid.linear %x, %up : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
    %g = braid.gelu %h : tensor<2x4x16xf32>
    %y = braid.linear %g, %down : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
    %r = braid.add %x, %y : tensor<2x4x8xf32>
    return %r : tensor<2x4x8xf32>
  }

  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32>
    %u0 = braid.get_param @l0.up : tensor<8x16xf32>
    %d0 = braid.get_param @l0.down : tensor<16x8xf32>
    %h1 = func.call @mlp(%h0, %u0, %d0) : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %u1 = braid.get_param @l1.up : tensor<8x16xf32>
    %d1 = braid.get_param @l1.down : tensor<16x8xf32>
    %h2 = func.call @mlp(%h1, %u1, %d1) : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = braid.linear %h2, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Mixture of experts, top-1 of 4 experts, capacity 4 for 8 tokens: a token
// uses 1/4 of the expert weights; the experts compute all 4 x 4 = 16 rows of
// their buffers (capacity factor 2: half of them padding).
//
// Parameters: wte 80 + router 8*4 + w_up 4*8*16 + w_down 4*16*8 = 1136;
// active: 80 + 32 + 1024/4 = 368.
// Forward matmul FLOPs per token: router 2*8*4 = 64, experts
// 16/8 * 2*(8*16 + 16*8) = 1024, head 160: 1248.

// CHECK: parameters: 1136
// CHECK-NEXT: parameters_active: 368
// CHECK: forward_flops_per_token: 1248
// CHECK: layer.moe.calls: 1
// CHECK-NEXT: layer.moe.forward_flops_per_token: 1088
module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  braid.param @router normal(0.02) : tensor<8x4xf32>
  braid.param @w_up normal(0.02) : tensor<4x8x16xf32>
  braid.param @w_down normal(0.02) : tensor<4x16x8xf32>

  func.func private @moe(%x: tensor<2x4x8xf32>, %r: tensor<8x4xf32>, %up: tensor<4x8x16xf32>, %down: tensor<4x16x8xf32>) -> tensor<2x4x8xf32> {
    %t = braid.reshape %x : tensor<2x4x8xf32> -> tensor<8x8xf32>
    %logits = braid.linear %t, %r : tensor<8x8xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
    %w, %i = braid.router %logits top_k 1 : tensor<8x4xf32> -> tensor<8x1xf32>, tensor<8x1xi32>
    %d = braid.dispatch %t, %i : tensor<8x8xf32>, tensor<8x1xi32> -> tensor<4x4x8xf32>
    %e = braid.expert_ffn gelu %d, %up, %down : tensor<4x4x8xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32> -> tensor<4x4x8xf32>
    %c = braid.combine %e, %w, %i : tensor<4x4x8xf32>, tensor<8x1xf32>, tensor<8x1xi32> -> tensor<8x8xf32>
    %y = braid.reshape %c : tensor<8x8xf32> -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }

  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32>
    %r = braid.get_param @router : tensor<8x4xf32>
    %u = braid.get_param @w_up : tensor<4x8x16xf32>
    %d = braid.get_param @w_down : tensor<4x16x8xf32>
    %h1 = func.call @moe(%h0, %r, %u, %d) : (tensor<2x4x8xf32>, tensor<8x4xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<2x4x8xf32>
    %logits = braid.linear %h1, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Attention is counted over the full S x S scores, causal or not: with S = 4,
// Hq = 2, D = 4, per token 2*Hq*S*D = 64 FLOPs for QK^T and 64 for PV; plus the
// head's 160.

// CHECK: tokens_per_step: 8
// CHECK: forward_flops_per_token: 288
module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32>
    %q = braid.reshape %h : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %k = braid.reshape %h : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %o = braid.attention %q, %k, %k causal : tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32> -> tensor<2x4x2x4xf32>
    %o2 = braid.reshape %o : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
    %logits = braid.linear %o2, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
