// The moe-tiny preset, as braid-opt parses, verifies and prints it (twice, so
// the printed form must parse again).
// RUN: %python -m braid.models moe-tiny | braid-opt | braid-opt | FileCheck %s

// The braid.model dictionary (braid-opt sorts its keys): 4 experts, top-2 with
// renormalised weights, one capacity group per sequence of 16 tokens with
// ceil(1.25 * 2 * 16 / 4) = 10 slots per expert (20 for the 2 sequences), vocab 97.
// CHECK: module attributes {braid.model = {batch = 2 : i64, capacity = 10 : i64, capacity_factor = 1.250000e+00 : f64, dtype = "f32", experts = 4 : i64, family = "moe", ffn = 128 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, init_std = 2.000000e-02 : f64, kv_heads = 2 : i64, layers = 2 : i64, name = "moe-tiny", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, rope_theta = 1.000000e+04 : f64, router_normalize = true, scale_residual_init = true, seq = 16 : i64, tied_embeddings = false, top_k = 2 : i64, vocab = 97 : i64}} {

// CHECK-NEXT: braid.param @tok_embeddings normal(2.000000e-02) : tensor<97x64xf32>
// CHECK:      braid.param @layers.0.moe_norm ones : tensor<64xf32>
// CHECK-NEXT: braid.param @layers.0.moe.router normal(2.000000e-02) : tensor<64x4xf32>
// CHECK-NEXT: braid.param @layers.0.moe.w_gate normal(2.000000e-02) : tensor<4x64x128xf32>
// CHECK-NEXT: braid.param @layers.0.moe.w_up normal(2.000000e-02) : tensor<4x64x128xf32>
// CHECK-NEXT: braid.param @layers.0.moe.w_down normal(1.000000e-02) : tensor<4x128x64xf32>
// CHECK:      braid.param @norm ones : tensor<64xf32>
// CHECK-NEXT: braid.param @output normal(2.000000e-02) : tensor<64x97xf32>

// CHECK-LABEL: func.func private @moe_layer(%arg0: tensor<2x16x64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64x64xf32>, %arg3: tensor<64x32xf32>, %arg4: tensor<64x32xf32>, %arg5: tensor<64x64xf32>, %arg6: tensor<64xf32>, %arg7: tensor<64x4xf32>, %arg8: tensor<4x64x128xf32>, %arg9: tensor<4x64x128xf32>, %arg10: tensor<4x128x64xf32>) -> tensor<2x16x64xf32> {
// CHECK:       braid.attention %{{.*}} causal {rope_theta = 1.000000e+04 : f64} : tensor<2x16x4x16xf32>, tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32> -> tensor<2x16x4x16xf32>
// CHECK:       %[[FLAT:.*]] = braid.reshape %{{.*}} : tensor<2x16x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT:  %[[LOGITS:.*]] = braid.linear %[[FLAT]], %arg7 : tensor<32x64xf32>, tensor<64x4xf32> -> tensor<32x4xf32>
// CHECK-NEXT:  %[[W:.*]], %[[I:.*]] = braid.router %[[LOGITS]] top_k 2 normalize : tensor<32x4xf32> -> tensor<32x2xf32>, tensor<32x2xi32>
// CHECK-NEXT:  %[[D:.*]] = braid.dispatch %[[FLAT]], %[[I]] group_size 16 : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<4x20x64xf32>
// CHECK-NEXT:  %[[E:.*]] = braid.expert_ffn{{ +}}silu %[[D]], %arg9, %arg10 gate %arg8 : tensor<4x20x64xf32>, tensor<4x64x128xf32>, tensor<4x128x64xf32>, tensor<4x64x128xf32> -> tensor<4x20x64xf32>
// CHECK-NEXT:  braid.combine %[[E]], %[[W]], %[[I]] group_size 16 : tensor<4x20x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
// CHECK:       %[[OUT:.*]] = braid.add
// CHECK-NEXT:  return %[[OUT]] : tensor<2x16x64xf32>

// CHECK-LABEL: func.func @step(%arg0: tensor<2x16xi32>, %arg1: tensor<2x16xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
// CHECK:       %[[H0:.*]] = braid.embedding %arg0, %{{.*}} : tensor<2x16xi32>, tensor<97x64xf32> -> tensor<2x16x64xf32>
// CHECK:       %[[H1:.*]] = call @moe_layer(%[[H0]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK:       %[[H2:.*]] = call @moe_layer(%[[H1]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK-NOT:   call
// CHECK:       %[[N:.*]] = braid.rms_norm %[[H2]], %{{.*}} :
// CHECK:       %[[WOUT:.*]] = braid.get_param @output : tensor<64x97xf32>
// CHECK-NEXT:  %[[Y:.*]] = braid.linear %[[N]], %[[WOUT]] : tensor<2x16x64xf32>, tensor<64x97xf32> -> tensor<2x16x97xf32>
// CHECK-NEXT:  %[[LOSS:.*]] = braid.cross_entropy %[[Y]], %arg1 : tensor<2x16x97xf32>, tensor<2x16xi32> -> tensor<f32>
// CHECK-NEXT:  return %[[LOSS]] : tensor<f32>
