// The hybrid-tiny preset (Jamba-style), as braid-opt parses, verifies and
// prints it (twice, so the printed form must parse again).
// RUN: %python -m braid.models hybrid-tiny | braid-opt | braid-opt | FileCheck %s

// The braid.model dictionary (braid-opt sorts its keys): attention on layer 2
// of 4 (attn_period 4, offset 2), MoE on odd layers (expert_period 2, offset 1),
// top-2 of 4 experts without renormalisation; layer_pattern spells the plan.
// CHECK: module attributes {braid.model = {attn_offset = 2 : i64, attn_period = 4 : i64, batch = 2 : i64, capacity = 10 : i64, capacity_factor = 1.250000e+00 : f64, d_conv = 4 : i64, d_inner = 128 : i64, d_state = 16 : i64, dt_rank = 4 : i64, dtype = "f32", expand = 2 : i64, expert_offset = 1 : i64, expert_period = 2 : i64, experts = 4 : i64, family = "hybrid", ffn = 128 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, init_std = 2.000000e-02 : f64, kv_heads = 2 : i64, layer_pattern = ["mamba_mlp", "mamba_moe", "attn_mlp", "mamba_moe"], layers = 4 : i64, name = "hybrid-tiny", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, router_normalize = false, scale_residual_init = true, seq = 16 : i64, tied_embeddings = false, top_k = 2 : i64, vocab = 128 : i64}} {

// CHECK-NEXT: braid.param @tok_embeddings normal(2.000000e-02) : tensor<128x64xf32>
// CHECK-NEXT: braid.param @layers.0.mamba_norm ones : tensor<64xf32>
// CHECK:      braid.param @layers.0.mlp.w_gate normal(2.000000e-02) : tensor<64x128xf32>
// CHECK:      braid.param @layers.1.moe.router normal(2.000000e-02) : tensor<64x4xf32>
// CHECK:      braid.param @layers.2.attn.wk normal(2.000000e-02) : tensor<64x32xf32>
// CHECK:      braid.param @layers.3.moe.w_down normal({{[-+.e0-9]+}}) : tensor<4x128x64xf32>
// CHECK-NEXT: braid.param @norm ones : tensor<64xf32>
// CHECK-NEXT: braid.param @output normal(2.000000e-02) : tensor<64x128xf32>

// One private function per (mixer, FFN) kind, in order of first use.
// CHECK-LABEL: func.func private @mamba_mlp_layer(%arg0: tensor<2x16x64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64x128xf32>, %arg3: tensor<64x128xf32>, %arg4: tensor<128x4xf32>, %arg5: tensor<128xf32>, %arg6: tensor<128x4xf32>, %arg7: tensor<128x16xf32>, %arg8: tensor<128x16xf32>, %arg9: tensor<4x128xf32>, %arg10: tensor<128xf32>, %arg11: tensor<128x16xf32>, %arg12: tensor<128xf32>, %arg13: tensor<128x64xf32>, %arg14: tensor<64xf32>, %arg15: tensor<64x128xf32>, %arg16: tensor<64x128xf32>, %arg17: tensor<128x64xf32>) -> tensor<2x16x64xf32> {
// CHECK:       braid.selective_scan
// CHECK:       braid.glu{{ +}}silu %{{.*}} : tensor<2x16x128xf32>
// CHECK-NOT:   braid.router
// CHECK-LABEL: func.func private @mamba_moe_layer(%arg0: tensor<2x16x64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64x128xf32>, %arg3: tensor<64x128xf32>, %arg4: tensor<128x4xf32>, %arg5: tensor<128xf32>, %arg6: tensor<128x4xf32>, %arg7: tensor<128x16xf32>, %arg8: tensor<128x16xf32>, %arg9: tensor<4x128xf32>, %arg10: tensor<128xf32>, %arg11: tensor<128x16xf32>, %arg12: tensor<128xf32>, %arg13: tensor<128x64xf32>, %arg14: tensor<64xf32>, %arg15: tensor<64x4xf32>, %arg16: tensor<4x64x128xf32>, %arg17: tensor<4x64x128xf32>, %arg18: tensor<4x128x64xf32>) -> tensor<2x16x64xf32> {
// CHECK:       braid.selective_scan
// CHECK:       braid.router %{{.*}} top_k 2 : tensor<32x4xf32> -> tensor<32x2xf32>, tensor<32x2xi32>
// CHECK:       braid.dispatch %{{.*}} group_size 16 : {{.*}} -> tensor<4x20x64xf32>
// CHECK-LABEL: func.func private @attn_mlp_layer(%arg0: tensor<2x16x64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64x64xf32>, %arg3: tensor<64x32xf32>, %arg4: tensor<64x32xf32>, %arg5: tensor<64x64xf32>, %arg6: tensor<64xf32>, %arg7: tensor<64x128xf32>, %arg8: tensor<64x128xf32>, %arg9: tensor<128x64xf32>) -> tensor<2x16x64xf32> {
// No positional encoding: attention without RoPE.
// CHECK:       braid.attention %{{.*}} causal : tensor<2x16x4x16xf32>, tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32> -> tensor<2x16x4x16xf32>

// CHECK-LABEL: func.func @step(%arg0: tensor<2x16xi32>, %arg1: tensor<2x16xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
// CHECK:       %[[H0:.*]] = braid.embedding %arg0, %{{.*}} : tensor<2x16xi32>, tensor<128x64xf32> -> tensor<2x16x64xf32>
// CHECK:       %[[H1:.*]] = call @mamba_mlp_layer(%[[H0]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK:       %[[H2:.*]] = call @mamba_moe_layer(%[[H1]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK:       %[[H3:.*]] = call @attn_mlp_layer(%[[H2]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK:       %[[H4:.*]] = call @mamba_moe_layer(%[[H3]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK-NOT:   call
// CHECK:       %[[N:.*]] = braid.rms_norm %[[H4]], %{{.*}} :
// CHECK:       %[[WOUT:.*]] = braid.get_param @output : tensor<64x128xf32>
// CHECK-NEXT:  %[[Y:.*]] = braid.linear %[[N]], %[[WOUT]] : tensor<2x16x64xf32>, tensor<64x128xf32> -> tensor<2x16x128xf32>
// CHECK-NEXT:  %[[LOSS:.*]] = braid.cross_entropy %[[Y]], %arg1 : tensor<2x16x128xf32>, tensor<2x16xi32> -> tensor<f32>
// CHECK-NEXT:  return %[[LOSS]] : tensor<f32>
