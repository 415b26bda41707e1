// The mamba-tiny preset, as braid-opt parses, verifies and prints it (twice, so
// the printed form must parse again).
// RUN: %python -m braid.models mamba-tiny | braid-opt | braid-opt | FileCheck %s

// The braid.model dictionary (braid-opt sorts its keys): the Mamba sizes
// (d_inner = expand * hidden, dt_rank = ceil(64 / 16)), vocab 122 padded to 128,
// tied head, no attention keys.
// CHECK: module attributes {braid.model = {batch = 2 : i64, d_conv = 4 : i64, d_inner = 128 : i64, d_state = 16 : i64, dt_rank = 4 : i64, dtype = "f32", expand = 2 : i64, family = "mamba", hidden = 64 : i64, init_std = 2.000000e-02 : f64, layers = 2 : i64, name = "mamba-tiny", norm = "rms_norm", norm_eps = 1.000000e-05 : f64, pad_vocab_multiple = 8 : i64, scale_residual_init = true, seq = 16 : i64, tied_embeddings = true, vocab = 128 : i64, vocab_unpadded = 122 : i64}} {

// CHECK-NEXT: braid.param @tok_embeddings normal(2.000000e-02) : tensor<128x64xf32>
// CHECK-NEXT: braid.param @layers.0.mamba_norm ones : tensor<64xf32>
// Mamba's own init (families.py): nn.Linear's std 1/sqrt(3 fan_in) (64 in:
// 7.2e-2; 128 in: 5.1e-2), Conv1d's over d_conv 4, dt_proj's over dt_rank 4,
// the time-step bias and the S4D-Real A_log.
// CHECK-NEXT: braid.param @layers.0.mamba.in_x normal({{0\.07216878.*}}) : tensor<64x128xf32>
// CHECK-NEXT: braid.param @layers.0.mamba.in_z normal({{0\.07216878.*}}) : tensor<64x128xf32>
// CHECK-NEXT: braid.param @layers.0.mamba.conv_w normal({{0\.2886751.*}}) : tensor<128x4xf32>
// CHECK-NEXT: braid.param @layers.0.mamba.conv_b zeros : tensor<128xf32>
// CHECK-NEXT: braid.param @layers.0.mamba.x_dt normal({{0\.05103104.*}}) : tensor<128x4xf32>
// CHECK-NEXT: braid.param @layers.0.mamba.x_B normal({{0\.05103104.*}}) : tensor<128x16xf32>
// CHECK-NEXT: braid.param @layers.0.mamba.x_C normal({{0\.05103104.*}}) : tensor<128x16xf32>
// CHECK-NEXT: braid.param @layers.0.mamba.dt_proj normal({{0\.2886751.*}}) : tensor<4x128xf32>
// CHECK-NEXT: braid.param @layers.0.mamba.dt_bias mamba_dt : tensor<128xf32>
// CHECK-NEXT: braid.param @layers.0.mamba.A_log s4d_real : tensor<128x16xf32>
// CHECK:      braid.param @layers.1.mamba.A_log s4d_real : tensor<128x16xf32>
// CHECK-NEXT: braid.param @layers.1.mamba.D ones : tensor<128xf32>
// CHECK-NEXT: braid.param @layers.1.mamba.out_proj normal({{[-+.e0-9]+}}) : tensor<128x64xf32>
// CHECK-NEXT: braid.param @norm ones : tensor<64xf32>
// CHECK-NOT:  braid.param

// CHECK-LABEL: func.func private @mamba_layer(%arg0: tensor<2x16x64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64x128xf32>, %arg3: tensor<64x128xf32>, %arg4: tensor<128x4xf32>, %arg5: tensor<128xf32>, %arg6: tensor<128x4xf32>, %arg7: tensor<128x16xf32>, %arg8: tensor<128x16xf32>, %arg9: tensor<4x128xf32>, %arg10: tensor<128xf32>, %arg11: tensor<128x16xf32>, %arg12: tensor<128xf32>, %arg13: tensor<128x64xf32>) -> tensor<2x16x64xf32> {
// CHECK:       braid.conv1d %{{.*}}, %arg4 bias %arg5 : tensor<2x16x128xf32>, tensor<128x4xf32>, tensor<128xf32> -> tensor<2x16x128xf32>
// CHECK:       %[[AEXP:.*]] = braid.exp %arg11 : tensor<128x16xf32>
// CHECK-NEXT:  %[[A:.*]] = braid.neg %[[AEXP]] : tensor<128x16xf32>
// CHECK-NEXT:  braid.selective_scan %{{.*}}, %{{.*}}, %[[A]], %{{.*}}, %{{.*}}, %arg12 delta_softplus : tensor<2x16x128xf32>, tensor<2x16x128xf32>, tensor<128x16xf32>, tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<128xf32> -> tensor<2x16x128xf32>
// CHECK:       %[[OUT:.*]] = braid.add
// CHECK-NEXT:  return %[[OUT]] : tensor<2x16x64xf32>

// CHECK-LABEL: func.func @step(%arg0: tensor<2x16xi32>, %arg1: tensor<2x16xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
// CHECK:       %[[WTE:.*]] = braid.get_param @tok_embeddings : tensor<128x64xf32>
// CHECK-NEXT:  %[[H0:.*]] = braid.embedding %arg0, %[[WTE]] : tensor<2x16xi32>, tensor<128x64xf32> -> tensor<2x16x64xf32>
// CHECK:       %[[H1:.*]] = call @mamba_layer(%[[H0]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK:       %[[H2:.*]] = call @mamba_layer(%[[H1]], %{{.*}}) : ({{.*}}) -> tensor<2x16x64xf32>
// CHECK-NOT:   call
// CHECK:       %[[N:.*]] = braid.rms_norm %[[H2]], %{{.*}} :
// CHECK-NEXT:  %[[LOGITS:.*]] = braid.linear %[[N]], %[[WTE]] transpose_weight : tensor<2x16x64xf32>, tensor<128x64xf32> -> tensor<2x16x128xf32>
// CHECK-NEXT:  %[[LOSS:.*]] = braid.cross_entropy %[[LOGITS]], %arg1 : tensor<2x16x128xf32>, tensor<2x16xi32> -> tensor<f32>
// CHECK-NEXT:  return %[[LOSS]] : tensor<f32>
