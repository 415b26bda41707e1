// The gpt-tiny preset, as braid-opt parses, verifies and prints it (twice, so
// the printed form must parse again).
// RUN: %python -m braid.models gpt-tiny | braid-opt | braid-opt | FileCheck %s

// The braid.model dictionary (braid-opt sorts its keys): LayerNorm, learned
// positions (max_positions), tied head, ffn = 4 * hidden, vocab 97 (not a
// multiple of 4) and no RoPE.
// CHECK: module attributes {braid.model = {batch = 2 : i64, dtype = "f32", family = "gpt", ffn = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, init_std = 2.000000e-02 : f64, layers = 2 : i64, max_positions = 16 : i64, name = "gpt-tiny", norm = "layer_norm", norm_eps = 1.000000e-05 : f64, scale_residual_init = true, seq = 16 : i64, tied_embeddings = true, vocab = 97 : i64}} {

// CHECK-NEXT: braid.param @tok_embeddings normal(2.000000e-02) : tensor<97x64xf32>
// CHECK-NEXT: braid.param @pos_embeddings normal(2.000000e-02) : tensor<16x64xf32>
// CHECK-NEXT: braid.param @layers.0.attn_norm ones : tensor<64xf32>
// CHECK-NEXT: braid.param @layers.0.attn_norm_bias zeros : tensor<64xf32>
// CHECK:      braid.param @layers.0.attn.wo normal(1.000000e-02) : tensor<64x64xf32>
// CHECK-NEXT: braid.param @layers.0.attn.bq zeros : tensor<64xf32>
// CHECK:      braid.param @layers.1.mlp.b_down zeros : tensor<64xf32>
// CHECK-NEXT: braid.param @norm ones : tensor<64xf32>
// CHECK-NEXT: braid.param @norm_bias zeros : tensor<64xf32>
// The LM head is tied to the token embedding: no @output.
// CHECK-NOT:  braid.param

// CHECK-LABEL: func.func private @gpt_layer(%arg0: tensor<2x16x64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64xf32>, %arg3: tensor<64x64xf32>, %arg4: tensor<64x64xf32>, %arg5: tensor<64x64xf32>, %arg6: tensor<64x64xf32>, %arg7: tensor<64xf32>, %arg8: tensor<64xf32>, %arg9: tensor<64xf32>, %arg10: tensor<64xf32>, %arg11: tensor<64xf32>, %arg12: tensor<64xf32>, %arg13: tensor<64x256xf32>, %arg14: tensor<256xf32>, %arg15: tensor<256x64xf32>, %arg16: tensor<64xf32>) -> tensor<2x16x64xf32> {
// CHECK:       braid.layer_norm %arg0, %arg1, %arg2 :
// CHECK:       braid.linear %{{.*}}, %arg3 bias %arg7 : tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
// CHECK:       braid.attention %{{.*}} causal : tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32> -> tensor<2x16x4x16xf32>
// CHECK:       braid.gelu %{{.*}} tanh : tensor<2x16x256xf32>
// CHECK:       %[[OUT:.*]] = braid.add
// CHECK-NEXT:  return %[[OUT]] : tensor<2x16x64xf32>

// CHECK-LABEL: func.func @step(%arg0: tensor<2x16xi32>, %arg1: tensor<2x16xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
// CHECK:       %[[WTE:.*]] = braid.get_param @tok_embeddings : tensor<97x64xf32>
// CHECK-NEXT:  %[[WPE:.*]] = braid.get_param @pos_embeddings : tensor<16x64xf32>
// CHECK-NEXT:  %[[H0:.*]] = braid.embedding %arg0, %[[WTE]] positions %[[WPE]] : tensor<2x16xi32>, tensor<97x64xf32>, tensor<16x64xf32> -> tensor<2x16x64xf32>
// CHECK:       %[[H1:.*]] = call @gpt_layer(%[[H0]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK:       %[[H2:.*]] = call @gpt_layer(%[[H1]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK-NOT:   call
// CHECK:       %[[N:.*]] = braid.layer_norm %[[H2]], %{{.*}}, %{{.*}} :
// CHECK-NEXT:  %[[LOGITS:.*]] = braid.linear %[[N]], %[[WTE]] transpose_weight : tensor<2x16x64xf32>, tensor<97x64xf32> -> tensor<2x16x97xf32>
// CHECK-NEXT:  %[[LOSS:.*]] = braid.cross_entropy %[[LOGITS]], %arg1 : tensor<2x16x97xf32>, tensor<2x16xi32> -> tensor<f32>
// CHECK-NEXT:  return %[[LOSS]] : tensor<f32>
