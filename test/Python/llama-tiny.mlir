// The llama-tiny preset, as braid-opt parses, verifies and prints it (twice, so
// the printed form must parse again).
// RUN: %python -m braid.models llama-tiny | braid-opt | braid-opt | FileCheck %s

// The braid.model dictionary (braid-opt sorts its keys): GQA with 4 heads and
// 2 kv heads, RoPE, untied `output` head, no keys of other families.
// CHECK: module attributes {braid.model = {batch = 2 : i64, dtype = "f32", family = "llama", ffn = 128 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, init_std = 2.000000e-02 : f64, kv_heads = 2 : i64, layers = 2 : i64, name = "llama-tiny", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, rope_theta = 1.000000e+04 : f64, scale_residual_init = true, seq = 16 : i64, tied_embeddings = false, vocab = 256 : i64}} {

// CHECK-NEXT: braid.param @tok_embeddings normal(2.000000e-02) : tensor<256x64xf32>
// CHECK-NEXT: braid.param @layers.0.attn_norm ones : tensor<64xf32>
// CHECK-NEXT: braid.param @layers.0.attn.wq normal(2.000000e-02) : tensor<64x64xf32>
// CHECK-NEXT: braid.param @layers.0.attn.wk normal(2.000000e-02) : tensor<64x32xf32>
// Residual projections: std 0.02 / sqrt(4 residual blocks).
// CHECK:      braid.param @layers.0.attn.wo normal(1.000000e-02) : tensor<64x64xf32>
// CHECK:      braid.param @layers.1.mlp.w_down normal(1.000000e-02) : tensor<128x64xf32>
// CHECK-NEXT: braid.param @norm ones : tensor<64xf32>
// CHECK-NEXT: braid.param @output normal(2.000000e-02) : tensor<64x256xf32>

// One private function for all layers: x, then the layer's 9 weights.
// CHECK-LABEL: func.func private @llama_layer(%arg0: tensor<2x16x64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64x64xf32>, %arg3: tensor<64x32xf32>, %arg4: tensor<64x32xf32>, %arg5: tensor<64x64xf32>, %arg6: tensor<64xf32>, %arg7: tensor<64x128xf32>, %arg8: tensor<64x128xf32>, %arg9: tensor<128x64xf32>) -> tensor<2x16x64xf32> {
// CHECK:       braid.rms_norm %arg0, %arg1 :
// CHECK:       braid.attention %{{.*}} causal {rope_theta = 1.000000e+04 : f64} : tensor<2x16x4x16xf32>, tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32> -> tensor<2x16x4x16xf32>
// CHECK:       braid.glu{{ +}}silu %{{.*}} : tensor<2x16x128xf32>
// CHECK:       %[[OUT:.*]] = braid.add
// CHECK-NEXT:  return %[[OUT]] : tensor<2x16x64xf32>

// @step: embedding, one call per layer chained through the hidden state,
// final norm, LM head, loss.
// CHECK-LABEL: func.func @step(%arg0: tensor<2x16xi32>, %arg1: tensor<2x16xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
// CHECK:       %[[H0:.*]] = braid.embedding %arg0, %{{.*}} : tensor<2x16xi32>, tensor<256x64xf32> -> tensor<2x16x64xf32>
// CHECK:       %[[H1:.*]] = call @llama_layer(%[[H0]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK:       %[[H2:.*]] = call @llama_layer(%[[H1]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK-NOT:   call
// CHECK:       %[[N:.*]] = braid.rms_norm %[[H2]], %{{.*}} :
// CHECK:       %[[W:.*]] = braid.get_param @output : tensor<64x256xf32>
// CHECK-NEXT:  %[[LOGITS:.*]] = braid.linear %[[N]], %[[W]] : tensor<2x16x64xf32>, tensor<64x256xf32> -> tensor<2x16x256xf32>
// CHECK-NEXT:  %[[LOSS:.*]] = braid.cross_entropy %[[LOGITS]], %arg1 : tensor<2x16x256xf32>, tensor<2x16xi32> -> tensor<f32>
// CHECK-NEXT:  return %[[LOSS]] : tensor<f32>
