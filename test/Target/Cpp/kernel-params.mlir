// RUN: braid-translate --braid-to-cpp %s -split-input-file | FileCheck %s
// RUN: braid-translate --braid-to-cpp --braid-roll-repeats=false %s -split-input-file | FileCheck %s --check-prefix=PLAIN

// Kernels take their sizes and options as one params struct (runtime.h),
// built in the call (braid::params). Attention's braid_attention_params: the
// field names of runtime.h, reals as exact literals, the int32 mask flag cast
// so that a rolled (int64_t) slot never narrows inside the braces. Three layers of the
// same attention over consecutive parameters still roll into one loop: the
// struct's integer fields are slots like any other argument.

// CHECK-LABEL: void fn_step(
// CHECK:         for (int64_t rep = 0; rep < 3; ++rep) {
// CHECK:           braid_k_attention(rt, BRAID_F32, at(arena, (320 + 128 * rep)), at(arena, (704 + 64 * rep)), at(arena, (704 + 64 * rep)), at(arena, frame + 0), braid::params(braid_attention_params{.batch = 1, .seq = 4, .seq_kv = 4, .heads = 2, .kv_heads = 1, .head_dim = 4, .v_head_dim = 4, .causal = static_cast<int32_t>(1), .scale = 0.29999999999999999, .rope_theta = 10000}));
// CHECK:         }

// PLAIN-LABEL:   void fn_step(
// PLAIN-NOT:     for (
// PLAIN-COUNT-3: braid::params(braid_attention_params{.batch = 1, .seq = 4, .seq_kv = 4, .heads = 2, .kv_heads = 1, .head_dim = 4, .v_head_dim = 4, .causal = static_cast<int32_t>(1), .scale = 0.29999999999999999, .rope_theta = 10000}));

module attributes {braid.model = {name = "attn", family = "llama", vocab = 10 : i64}} {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  braid.param @q0 normal(0.02) : tensor<1x4x2x4xf32>
  braid.param @q1 normal(0.02) : tensor<1x4x2x4xf32>
  braid.param @q2 normal(0.02) : tensor<1x4x2x4xf32>
  braid.param @k0 normal(0.02) : tensor<1x4x1x4xf32>
  braid.param @k1 normal(0.02) : tensor<1x4x1x4xf32>
  braid.param @k2 normal(0.02) : tensor<1x4x1x4xf32>

  func.func @step(%tok: tensor<1x4xi32>, %labels: tensor<1x4xi32>) -> tensor<f32> {
    %q0 = braid.get_param @q0 : tensor<1x4x2x4xf32>
    %k0 = braid.get_param @k0 : tensor<1x4x1x4xf32>
    %a0 = braid.attention %q0, %k0, %k0 {causal, scale = 3.0e-01 : f64, rope_theta = 1.0e4 : f64} : tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>, tensor<1x4x1x4xf32> -> tensor<1x4x2x4xf32> loc("a0")
    %q1 = braid.get_param @q1 : tensor<1x4x2x4xf32>
    %k1 = braid.get_param @k1 : tensor<1x4x1x4xf32>
    %a1 = braid.attention %q1, %k1, %k1 {causal, scale = 3.0e-01 : f64, rope_theta = 1.0e4 : f64} : tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>, tensor<1x4x1x4xf32> -> tensor<1x4x2x4xf32> loc("a1")
    %q2 = braid.get_param @q2 : tensor<1x4x2x4xf32>
    %k2 = braid.get_param @k2 : tensor<1x4x1x4xf32>
    %a2 = braid.attention %q2, %k2, %k2 {causal, scale = 3.0e-01 : f64, rope_theta = 1.0e4 : f64} : tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>, tensor<1x4x1x4xf32> -> tensor<1x4x2x4xf32> loc("a2")
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tok, %wte : tensor<1x4xi32>, tensor<10x8xf32> -> tensor<1x4x8xf32> loc("h0")
    %logits = braid.linear %h0, %wte transpose_weight : tensor<1x4x8xf32>, tensor<10x8xf32> -> tensor<1x4x10xf32> loc("logits")
    %loss = braid.cross_entropy %logits, %labels : tensor<1x4x10xf32>, tensor<1x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The selective scan passes its sizes and the softplus flag as one
// braid_scan_params: B, S, Di from x, N from A.

// CHECK-LABEL: void fn_step(
// CHECK:         braid_k_selective_scan(rt, BRAID_F32, {{.*}}, braid::params(braid_scan_params{.batch = 2, .seq = 8, .channels = 16, .state = 4, .delta_softplus = static_cast<int32_t>(1)}));

// PLAIN-LABEL:   void fn_step(
// PLAIN:         braid::params(braid_scan_params{.batch = 2, .seq = 8, .channels = 16, .state = 4, .delta_softplus = static_cast<int32_t>(1)}));

module attributes {braid.model = {name = "scan", family = "mamba", vocab = 10 : i64}} {
  braid.param @wte normal(0.02) : tensor<10x16xf32>
  braid.param @A normal(0.02) : tensor<16x4xf32>
  braid.param @B normal(0.02) : tensor<2x8x4xf32>
  braid.param @D normal(0.02) : tensor<16xf32>

  func.func @step(%tok: tensor<2x8xi32>, %labels: tensor<2x8xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x16xf32>
    %x = braid.embedding %tok, %wte : tensor<2x8xi32>, tensor<10x16xf32> -> tensor<2x8x16xf32> loc("x")
    %a = braid.get_param @A : tensor<16x4xf32>
    %b = braid.get_param @B : tensor<2x8x4xf32>
    %d = braid.get_param @D : tensor<16xf32>
    %y = braid.selective_scan %x, %x, %a, %b, %b, %d delta_softplus : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32> -> tensor<2x8x16xf32> loc("y")
    %logits = braid.linear %y, %wte transpose_weight : tensor<2x8x16xf32>, tensor<10x16xf32> -> tensor<2x8x10xf32> loc("logits")
    %loss = braid.cross_entropy %logits, %labels : tensor<2x8x10xf32>, tensor<2x8xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
