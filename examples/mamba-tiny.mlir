module attributes {braid.model = {name = "mamba-tiny", family = "mamba", vocab = 128 : i64,
                                  vocab_unpadded = 122 : i64, pad_vocab_multiple = 8 : i64,
                                  hidden = 64 : i64, layers = 2 : i64, seq = 16 : i64,
                                  batch = 2 : i64, dtype = "f32", d_state = 16 : i64,
                                  d_conv = 4 : i64, expand = 2 : i64, d_inner = 128 : i64,
                                  dt_rank = 4 : i64, norm = "rms_norm",
                                  norm_eps = 1.000000e-05 : f64, tied_embeddings = true,
                                  init_std = 2.000000e-02 : f64, scale_residual_init = true}} {
  braid.param @tok_embeddings normal(2.000000e-02) : tensor<128x64xf32>
  braid.param @layers.0.mamba_norm ones : tensor<64xf32>
  braid.param @layers.0.mamba.in_x normal(7.216878e-02) : tensor<64x128xf32>
  braid.param @layers.0.mamba.in_z normal(7.216878e-02) : tensor<64x128xf32>
  braid.param @layers.0.mamba.conv_w normal(2.886751e-01) : tensor<128x4xf32>
  braid.param @layers.0.mamba.conv_b zeros : tensor<128xf32>
  braid.param @layers.0.mamba.x_dt normal(5.103104e-02) : tensor<128x4xf32>
  braid.param @layers.0.mamba.x_B normal(5.103104e-02) : tensor<128x16xf32>
  braid.param @layers.0.mamba.x_C normal(5.103104e-02) : tensor<128x16xf32>
  braid.param @layers.0.mamba.dt_proj normal(2.886751e-01) : tensor<4x128xf32>
  braid.param @layers.0.mamba.dt_bias mamba_dt : tensor<128xf32>
  braid.param @layers.0.mamba.A_log s4d_real : tensor<128x16xf32>
  braid.param @layers.0.mamba.D ones : tensor<128xf32>
  braid.param @layers.0.mamba.out_proj normal(3.608440e-02) : tensor<128x64xf32>
  braid.param @layers.1.mamba_norm ones : tensor<64xf32>
  braid.param @layers.1.mamba.in_x normal(7.216878e-02) : tensor<64x128xf32>
  braid.param @layers.1.mamba.in_z normal(7.216878e-02) : tensor<64x128xf32>
  braid.param @layers.1.mamba.conv_w normal(2.886751e-01) : tensor<128x4xf32>
  braid.param @layers.1.mamba.conv_b zeros : tensor<128xf32>
  braid.param @layers.1.mamba.x_dt normal(5.103104e-02) : tensor<128x4xf32>
  braid.param @layers.1.mamba.x_B normal(5.103104e-02) : tensor<128x16xf32>
  braid.param @layers.1.mamba.x_C normal(5.103104e-02) : tensor<128x16xf32>
  braid.param @layers.1.mamba.dt_proj normal(2.886751e-01) : tensor<4x128xf32>
  braid.param @layers.1.mamba.dt_bias mamba_dt : tensor<128xf32>
  braid.param @layers.1.mamba.A_log s4d_real : tensor<128x16xf32>
  braid.param @layers.1.mamba.D ones : tensor<128xf32>
  braid.param @layers.1.mamba.out_proj normal(3.608440e-02) : tensor<128x64xf32>
  braid.param @norm ones : tensor<64xf32>
  func.func private @mamba_layer(%x: tensor<2x16x64xf32>, %mamba_norm: tensor<64xf32>, %mamba_in_x: tensor<64x128xf32>, %mamba_in_z: tensor<64x128xf32>, %mamba_conv_w: tensor<128x4xf32>, %mamba_conv_b: tensor<128xf32>, %mamba_x_dt: tensor<128x4xf32>, %mamba_x_B: tensor<128x16xf32>, %mamba_x_C: tensor<128x16xf32>, %mamba_dt_proj: tensor<4x128xf32>, %mamba_dt_bias: tensor<128xf32>, %mamba_A_log: tensor<128x16xf32>, %mamba_D: tensor<128xf32>, %mamba_out_proj: tensor<128x64xf32>) -> tensor<2x16x64xf32> {
    %mamba_normed = braid.rms_norm %x, %mamba_norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %x_in = braid.linear %mamba_normed, %mamba_in_x : tensor<2x16x64xf32>, tensor<64x128xf32> -> tensor<2x16x128xf32>
    %z = braid.linear %mamba_normed, %mamba_in_z : tensor<2x16x64xf32>, tensor<64x128xf32> -> tensor<2x16x128xf32>
    %x_conv = braid.conv1d %x_in, %mamba_conv_w bias %mamba_conv_b : tensor<2x16x128xf32>, tensor<128x4xf32>, tensor<128xf32> -> tensor<2x16x128xf32>
    %x_act = braid.silu %x_conv : tensor<2x16x128xf32>
    %dt_low = braid.linear %x_act, %mamba_x_dt : tensor<2x16x128xf32>, tensor<128x4xf32> -> tensor<2x16x4xf32>
    %B = braid.linear %x_act, %mamba_x_B : tensor<2x16x128xf32>, tensor<128x16xf32> -> tensor<2x16x16xf32>
    %C = braid.linear %x_act, %mamba_x_C : tensor<2x16x128xf32>, tensor<128x16xf32> -> tensor<2x16x16xf32>
    %dt = braid.linear %dt_low, %mamba_dt_proj bias %mamba_dt_bias : tensor<2x16x4xf32>, tensor<4x128xf32>, tensor<128xf32> -> tensor<2x16x128xf32>
    %A_exp = braid.exp %mamba_A_log : tensor<128x16xf32>
    %A = braid.neg %A_exp : tensor<128x16xf32>
    %y = braid.selective_scan %x_act, %dt, %A, %B, %C, %mamba_D delta_softplus : tensor<2x16x128xf32>, tensor<2x16x128xf32>, tensor<128x16xf32>, tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<128xf32> -> tensor<2x16x128xf32>
    %y_gated = braid.glu silu %z, %y : tensor<2x16x128xf32>
    %mamba_proj = braid.linear %y_gated, %mamba_out_proj : tensor<2x16x128xf32>, tensor<128x64xf32> -> tensor<2x16x64xf32>
    %mamba_out = braid.add %x, %mamba_proj : tensor<2x16x64xf32>
    return %mamba_out : tensor<2x16x64xf32>
  }
  func.func @step(%tokens: tensor<2x16xi32>, %labels: tensor<2x16xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
    %wte = braid.get_param @tok_embeddings : tensor<128x64xf32>
    %h0 = braid.embedding %tokens, %wte : tensor<2x16xi32>, tensor<128x64xf32> -> tensor<2x16x64xf32>
    %l0_mamba_norm = braid.get_param @layers.0.mamba_norm : tensor<64xf32>
    %l0_mamba_in_x = braid.get_param @layers.0.mamba.in_x : tensor<64x128xf32>
    %l0_mamba_in_z = braid.get_param @layers.0.mamba.in_z : tensor<64x128xf32>
    %l0_mamba_conv_w = braid.get_param @layers.0.mamba.conv_w : tensor<128x4xf32>
    %l0_mamba_conv_b = braid.get_param @layers.0.mamba.conv_b : tensor<128xf32>
    %l0_mamba_x_dt = braid.get_param @layers.0.mamba.x_dt : tensor<128x4xf32>
    %l0_mamba_x_B = braid.get_param @layers.0.mamba.x_B : tensor<128x16xf32>
    %l0_mamba_x_C = braid.get_param @layers.0.mamba.x_C : tensor<128x16xf32>
    %l0_mamba_dt_proj = braid.get_param @layers.0.mamba.dt_proj : tensor<4x128xf32>
    %l0_mamba_dt_bias = braid.get_param @layers.0.mamba.dt_bias : tensor<128xf32>
    %l0_mamba_A_log = braid.get_param @layers.0.mamba.A_log : tensor<128x16xf32>
    %l0_mamba_D = braid.get_param @layers.0.mamba.D : tensor<128xf32>
    %l0_mamba_out_proj = braid.get_param @layers.0.mamba.out_proj : tensor<128x64xf32>
    %h1 = func.call @mamba_layer(%h0, %l0_mamba_norm, %l0_mamba_in_x, %l0_mamba_in_z, %l0_mamba_conv_w, %l0_mamba_conv_b, %l0_mamba_x_dt, %l0_mamba_x_B, %l0_mamba_x_C, %l0_mamba_dt_proj, %l0_mamba_dt_bias, %l0_mamba_A_log, %l0_mamba_D, %l0_mamba_out_proj) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x4xf32>, tensor<128xf32>, tensor<128x4xf32>, tensor<128x16xf32>, tensor<128x16xf32>, tensor<4x128xf32>, tensor<128xf32>, tensor<128x16xf32>, tensor<128xf32>, tensor<128x64xf32>) -> tensor<2x16x64xf32>
    %l1_mamba_norm = braid.get_param @layers.1.mamba_norm : tensor<64xf32>
    %l1_mamba_in_x = braid.get_param @layers.1.mamba.in_x : tensor<64x128xf32>
    %l1_mamba_in_z = braid.get_param @layers.1.mamba.in_z : tensor<64x128xf32>
    %l1_mamba_conv_w = braid.get_param @layers.1.mamba.conv_w : tensor<128x4xf32>
    %l1_mamba_conv_b = braid.get_param @layers.1.mamba.conv_b : tensor<128xf32>
    %l1_mamba_x_dt = braid.get_param @layers.1.mamba.x_dt : tensor<128x4xf32>
    %l1_mamba_x_B = braid.get_param @layers.1.mamba.x_B : tensor<128x16xf32>
    %l1_mamba_x_C = braid.get_param @layers.1.mamba.x_C : tensor<128x16xf32>
    %l1_mamba_dt_proj = braid.get_param @layers.1.mamba.dt_proj : tensor<4x128xf32>
    %l1_mamba_dt_bias = braid.get_param @layers.1.mamba.dt_bias : tensor<128xf32>
    %l1_mamba_A_log = braid.get_param @layers.1.mamba.A_log : tensor<128x16xf32>
    %l1_mamba_D = braid.get_param @layers.1.mamba.D : tensor<128xf32>
    %l1_mamba_out_proj = braid.get_param @layers.1.mamba.out_proj : tensor<128x64xf32>
    %h2 = func.call @mamba_layer(%h1, %l1_mamba_norm, %l1_mamba_in_x, %l1_mamba_in_z, %l1_mamba_conv_w, %l1_mamba_conv_b, %l1_mamba_x_dt, %l1_mamba_x_B, %l1_mamba_x_C, %l1_mamba_dt_proj, %l1_mamba_dt_bias, %l1_mamba_A_log, %l1_mamba_D, %l1_mamba_out_proj) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x4xf32>, tensor<128xf32>, tensor<128x4xf32>, tensor<128x16xf32>, tensor<128x16xf32>, tensor<4x128xf32>, tensor<128xf32>, tensor<128x16xf32>, tensor<128xf32>, tensor<128x64xf32>) -> tensor<2x16x64xf32>
    %norm = braid.get_param @norm : tensor<64xf32>
    %normed = braid.rms_norm %h2, %norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %logits = braid.linear %normed, %wte transpose_weight : tensor<2x16x64xf32>, tensor<128x64xf32> -> tensor<2x16x128xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x16x128xf32>, tensor<2x16xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
