module attributes {braid.model = {name = "hybrid-tiny", family = "hybrid", vocab = 128 : i64,
                                  hidden = 64 : i64, layers = 4 : i64, seq = 16 : i64,
                                  batch = 2 : i64, dtype = "f32", heads = 4 : i64,
                                  kv_heads = 2 : i64, head_dim = 16 : i64, ffn = 128 : i64,
                                  experts = 4 : i64, top_k = 2 : i64,
                                  capacity_factor = 1.250000e+00 : f64, capacity = 10 : i64,
                                  router_normalize = false, d_state = 16 : i64, d_conv = 4 : i64,
                                  expand = 2 : i64, d_inner = 128 : i64, dt_rank = 4 : i64,
                                  attn_period = 4 : i64, attn_offset = 2 : i64,
                                  expert_period = 2 : i64, expert_offset = 1 : i64,
                                  norm = "rms_norm", norm_eps = 1.000000e-05 : f64,
                                  tied_embeddings = false, init_std = 2.000000e-02 : f64,
                                  scale_residual_init = true,
                                  layer_pattern = ["mamba_mlp", "mamba_moe", "attn_mlp", "mamba_moe"]}} {
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
  braid.param @layers.0.mamba.out_proj normal(1.804220e-02) : tensor<128x64xf32>
  braid.param @layers.0.mlp_norm ones : tensor<64xf32>
  braid.param @layers.0.mlp.w_gate normal(2.000000e-02) : tensor<64x128xf32>
  braid.param @layers.0.mlp.w_up normal(2.000000e-02) : tensor<64x128xf32>
  braid.param @layers.0.mlp.w_down normal(7.071068e-03) : tensor<128x64xf32>
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
  braid.param @layers.1.mamba.out_proj normal(1.804220e-02) : tensor<128x64xf32>
  braid.param @layers.1.moe_norm ones : tensor<64xf32>
  braid.param @layers.1.moe.router normal(2.000000e-02) : tensor<64x4xf32>
  braid.param @layers.1.moe.w_gate normal(2.000000e-02) : tensor<4x64x128xf32>
  braid.param @layers.1.moe.w_up normal(2.000000e-02) : tensor<4x64x128xf32>
  braid.param @layers.1.moe.w_down normal(7.071068e-03) : tensor<4x128x64xf32>
  braid.param @layers.2.attn_norm ones : tensor<64xf32>
  braid.param @layers.2.attn.wq normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.2.attn.wk normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.2.attn.wv normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.2.attn.wo normal(7.071068e-03) : tensor<64x64xf32>
  braid.param @layers.2.mlp_norm ones : tensor<64xf32>
  braid.param @layers.2.mlp.w_gate normal(2.000000e-02) : tensor<64x128xf32>
  braid.param @layers.2.mlp.w_up normal(2.000000e-02) : tensor<64x128xf32>
  braid.param @layers.2.mlp.w_down normal(7.071068e-03) : tensor<128x64xf32>
  braid.param @layers.3.mamba_norm ones : tensor<64xf32>
  braid.param @layers.3.mamba.in_x normal(7.216878e-02) : tensor<64x128xf32>
  braid.param @layers.3.mamba.in_z normal(7.216878e-02) : tensor<64x128xf32>
  braid.param @layers.3.mamba.conv_w normal(2.886751e-01) : tensor<128x4xf32>
  braid.param @layers.3.mamba.conv_b zeros : tensor<128xf32>
  braid.param @layers.3.mamba.x_dt normal(5.103104e-02) : tensor<128x4xf32>
  braid.param @layers.3.mamba.x_B normal(5.103104e-02) : tensor<128x16xf32>
  braid.param @layers.3.mamba.x_C normal(5.103104e-02) : tensor<128x16xf32>
  braid.param @layers.3.mamba.dt_proj normal(2.886751e-01) : tensor<4x128xf32>
  braid.param @layers.3.mamba.dt_bias mamba_dt : tensor<128xf32>
  braid.param @layers.3.mamba.A_log s4d_real : tensor<128x16xf32>
  braid.param @layers.3.mamba.D ones : tensor<128xf32>
  braid.param @layers.3.mamba.out_proj normal(1.804220e-02) : tensor<128x64xf32>
  braid.param @layers.3.moe_norm ones : tensor<64xf32>
  braid.param @layers.3.moe.router normal(2.000000e-02) : tensor<64x4xf32>
  braid.param @layers.3.moe.w_gate normal(2.000000e-02) : tensor<4x64x128xf32>
  braid.param @layers.3.moe.w_up normal(2.000000e-02) : tensor<4x64x128xf32>
  braid.param @layers.3.moe.w_down normal(7.071068e-03) : tensor<4x128x64xf32>
  braid.param @norm ones : tensor<64xf32>
  braid.param @output normal(2.000000e-02) : tensor<64x128xf32>
  func.func private @mamba_mlp_layer(%x: tensor<2x16x64xf32>, %mamba_norm: tensor<64xf32>, %mamba_in_x: tensor<64x128xf32>, %mamba_in_z: tensor<64x128xf32>, %mamba_conv_w: tensor<128x4xf32>, %mamba_conv_b: tensor<128xf32>, %mamba_x_dt: tensor<128x4xf32>, %mamba_x_B: tensor<128x16xf32>, %mamba_x_C: tensor<128x16xf32>, %mamba_dt_proj: tensor<4x128xf32>, %mamba_dt_bias: tensor<128xf32>, %mamba_A_log: tensor<128x16xf32>, %mamba_D: tensor<128xf32>, %mamba_out_proj: tensor<128x64xf32>, %mlp_norm: tensor<64xf32>, %mlp_w_gate: tensor<64x128xf32>, %mlp_w_up: tensor<64x128xf32>, %mlp_w_down: tensor<128x64xf32>) -> tensor<2x16x64xf32> {
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
    %mlp_normed = braid.rms_norm %mamba_out, %mlp_norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %gate = braid.linear %mlp_normed, %mlp_w_gate : tensor<2x16x64xf32>, tensor<64x128xf32> -> tensor<2x16x128xf32>
    %up = braid.linear %mlp_normed, %mlp_w_up : tensor<2x16x64xf32>, tensor<64x128xf32> -> tensor<2x16x128xf32>
    %act = braid.glu silu %gate, %up : tensor<2x16x128xf32>
    %down = braid.linear %act, %mlp_w_down : tensor<2x16x128xf32>, tensor<128x64xf32> -> tensor<2x16x64xf32>
    %mlp_out = braid.add %mamba_out, %down : tensor<2x16x64xf32>
    return %mlp_out : tensor<2x16x64xf32>
  }
  func.func private @mamba_moe_layer(%x: tensor<2x16x64xf32>, %mamba_norm: tensor<64xf32>, %mamba_in_x: tensor<64x128xf32>, %mamba_in_z: tensor<64x128xf32>, %mamba_conv_w: tensor<128x4xf32>, %mamba_conv_b: tensor<128xf32>, %mamba_x_dt: tensor<128x4xf32>, %mamba_x_B: tensor<128x16xf32>, %mamba_x_C: tensor<128x16xf32>, %mamba_dt_proj: tensor<4x128xf32>, %mamba_dt_bias: tensor<128xf32>, %mamba_A_log: tensor<128x16xf32>, %mamba_D: tensor<128xf32>, %mamba_out_proj: tensor<128x64xf32>, %moe_norm: tensor<64xf32>, %moe_router: tensor<64x4xf32>, %moe_w_gate: tensor<4x64x128xf32>, %moe_w_up: tensor<4x64x128xf32>, %moe_w_down: tensor<4x128x64xf32>) -> tensor<2x16x64xf32> {
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
    %moe_normed = braid.rms_norm %mamba_out, %moe_norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %flat = braid.reshape %moe_normed : tensor<2x16x64xf32> -> tensor<32x64xf32>
    %router_logits = braid.linear %flat, %moe_router : tensor<32x64xf32>, tensor<64x4xf32> -> tensor<32x4xf32>
    %route_w, %route_i = braid.router %router_logits top_k 2 : tensor<32x4xf32> -> tensor<32x2xf32>, tensor<32x2xi32>
    %dispatched = braid.dispatch %flat, %route_i group_size 16 : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<4x20x64xf32>
    %experts = braid.expert_ffn silu %dispatched, %moe_w_up, %moe_w_down gate %moe_w_gate : tensor<4x20x64xf32>, tensor<4x64x128xf32>, tensor<4x128x64xf32>, tensor<4x64x128xf32> -> tensor<4x20x64xf32>
    %combined = braid.combine %experts, %route_w, %route_i group_size 16 : tensor<4x20x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
    %moe_y = braid.reshape %combined : tensor<32x64xf32> -> tensor<2x16x64xf32>
    %moe_out = braid.add %mamba_out, %moe_y : tensor<2x16x64xf32>
    return %moe_out : tensor<2x16x64xf32>
  }
  func.func private @attn_mlp_layer(%x: tensor<2x16x64xf32>, %attn_norm: tensor<64xf32>, %attn_wq: tensor<64x64xf32>, %attn_wk: tensor<64x32xf32>, %attn_wv: tensor<64x32xf32>, %attn_wo: tensor<64x64xf32>, %mlp_norm: tensor<64xf32>, %mlp_w_gate: tensor<64x128xf32>, %mlp_w_up: tensor<64x128xf32>, %mlp_w_down: tensor<128x64xf32>) -> tensor<2x16x64xf32> {
    %attn_normed = braid.rms_norm %x, %attn_norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %q = braid.linear %attn_normed, %attn_wq : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
    %q_heads = braid.reshape %q : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    %k = braid.linear %attn_normed, %attn_wk : tensor<2x16x64xf32>, tensor<64x32xf32> -> tensor<2x16x32xf32>
    %k_heads = braid.reshape %k : tensor<2x16x32xf32> -> tensor<2x16x2x16xf32>
    %v = braid.linear %attn_normed, %attn_wv : tensor<2x16x64xf32>, tensor<64x32xf32> -> tensor<2x16x32xf32>
    %v_heads = braid.reshape %v : tensor<2x16x32xf32> -> tensor<2x16x2x16xf32>
    %attn = braid.attention %q_heads, %k_heads, %v_heads causal : tensor<2x16x4x16xf32>, tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32> -> tensor<2x16x4x16xf32>
    %attn_flat = braid.reshape %attn : tensor<2x16x4x16xf32> -> tensor<2x16x64xf32>
    %attn_proj = braid.linear %attn_flat, %attn_wo : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
    %attn_out = braid.add %x, %attn_proj : tensor<2x16x64xf32>
    %mlp_normed = braid.rms_norm %attn_out, %mlp_norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %gate = braid.linear %mlp_normed, %mlp_w_gate : tensor<2x16x64xf32>, tensor<64x128xf32> -> tensor<2x16x128xf32>
    %up = braid.linear %mlp_normed, %mlp_w_up : tensor<2x16x64xf32>, tensor<64x128xf32> -> tensor<2x16x128xf32>
    %act = braid.glu silu %gate, %up : tensor<2x16x128xf32>
    %down = braid.linear %act, %mlp_w_down : tensor<2x16x128xf32>, tensor<128x64xf32> -> tensor<2x16x64xf32>
    %mlp_out = braid.add %attn_out, %down : tensor<2x16x64xf32>
    return %mlp_out : tensor<2x16x64xf32>
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
    %l0_mlp_norm = braid.get_param @layers.0.mlp_norm : tensor<64xf32>
    %l0_mlp_w_gate = braid.get_param @layers.0.mlp.w_gate : tensor<64x128xf32>
    %l0_mlp_w_up = braid.get_param @layers.0.mlp.w_up : tensor<64x128xf32>
    %l0_mlp_w_down = braid.get_param @layers.0.mlp.w_down : tensor<128x64xf32>
    %h1 = func.call @mamba_mlp_layer(%h0, %l0_mamba_norm, %l0_mamba_in_x, %l0_mamba_in_z, %l0_mamba_conv_w, %l0_mamba_conv_b, %l0_mamba_x_dt, %l0_mamba_x_B, %l0_mamba_x_C, %l0_mamba_dt_proj, %l0_mamba_dt_bias, %l0_mamba_A_log, %l0_mamba_D, %l0_mamba_out_proj, %l0_mlp_norm, %l0_mlp_w_gate, %l0_mlp_w_up, %l0_mlp_w_down) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x4xf32>, tensor<128xf32>, tensor<128x4xf32>, tensor<128x16xf32>, tensor<128x16xf32>, tensor<4x128xf32>, tensor<128xf32>, tensor<128x16xf32>, tensor<128xf32>, tensor<128x64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<2x16x64xf32>
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
    %l1_moe_norm = braid.get_param @layers.1.moe_norm : tensor<64xf32>
    %l1_moe_router = braid.get_param @layers.1.moe.router : tensor<64x4xf32>
    %l1_moe_w_gate = braid.get_param @layers.1.moe.w_gate : tensor<4x64x128xf32>
    %l1_moe_w_up = braid.get_param @layers.1.moe.w_up : tensor<4x64x128xf32>
    %l1_moe_w_down = braid.get_param @layers.1.moe.w_down : tensor<4x128x64xf32>
    %h2 = func.call @mamba_moe_layer(%h1, %l1_mamba_norm, %l1_mamba_in_x, %l1_mamba_in_z, %l1_mamba_conv_w, %l1_mamba_conv_b, %l1_mamba_x_dt, %l1_mamba_x_B, %l1_mamba_x_C, %l1_mamba_dt_proj, %l1_mamba_dt_bias, %l1_mamba_A_log, %l1_mamba_D, %l1_mamba_out_proj, %l1_moe_norm, %l1_moe_router, %l1_moe_w_gate, %l1_moe_w_up, %l1_moe_w_down) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x4xf32>, tensor<128xf32>, tensor<128x4xf32>, tensor<128x16xf32>, tensor<128x16xf32>, tensor<4x128xf32>, tensor<128xf32>, tensor<128x16xf32>, tensor<128xf32>, tensor<128x64xf32>, tensor<64xf32>, tensor<64x4xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x128x64xf32>) -> tensor<2x16x64xf32>
    %l2_attn_norm = braid.get_param @layers.2.attn_norm : tensor<64xf32>
    %l2_attn_wq = braid.get_param @layers.2.attn.wq : tensor<64x64xf32>
    %l2_attn_wk = braid.get_param @layers.2.attn.wk : tensor<64x32xf32>
    %l2_attn_wv = braid.get_param @layers.2.attn.wv : tensor<64x32xf32>
    %l2_attn_wo = braid.get_param @layers.2.attn.wo : tensor<64x64xf32>
    %l2_mlp_norm = braid.get_param @layers.2.mlp_norm : tensor<64xf32>
    %l2_mlp_w_gate = braid.get_param @layers.2.mlp.w_gate : tensor<64x128xf32>
    %l2_mlp_w_up = braid.get_param @layers.2.mlp.w_up : tensor<64x128xf32>
    %l2_mlp_w_down = braid.get_param @layers.2.mlp.w_down : tensor<128x64xf32>
    %h3 = func.call @attn_mlp_layer(%h2, %l2_attn_norm, %l2_attn_wq, %l2_attn_wk, %l2_attn_wv, %l2_attn_wo, %l2_mlp_norm, %l2_mlp_w_gate, %l2_mlp_w_up, %l2_mlp_w_down) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<2x16x64xf32>
    %l3_mamba_norm = braid.get_param @layers.3.mamba_norm : tensor<64xf32>
    %l3_mamba_in_x = braid.get_param @layers.3.mamba.in_x : tensor<64x128xf32>
    %l3_mamba_in_z = braid.get_param @layers.3.mamba.in_z : tensor<64x128xf32>
    %l3_mamba_conv_w = braid.get_param @layers.3.mamba.conv_w : tensor<128x4xf32>
    %l3_mamba_conv_b = braid.get_param @layers.3.mamba.conv_b : tensor<128xf32>
    %l3_mamba_x_dt = braid.get_param @layers.3.mamba.x_dt : tensor<128x4xf32>
    %l3_mamba_x_B = braid.get_param @layers.3.mamba.x_B : tensor<128x16xf32>
    %l3_mamba_x_C = braid.get_param @layers.3.mamba.x_C : tensor<128x16xf32>
    %l3_mamba_dt_proj = braid.get_param @layers.3.mamba.dt_proj : tensor<4x128xf32>
    %l3_mamba_dt_bias = braid.get_param @layers.3.mamba.dt_bias : tensor<128xf32>
    %l3_mamba_A_log = braid.get_param @layers.3.mamba.A_log : tensor<128x16xf32>
    %l3_mamba_D = braid.get_param @layers.3.mamba.D : tensor<128xf32>
    %l3_mamba_out_proj = braid.get_param @layers.3.mamba.out_proj : tensor<128x64xf32>
    %l3_moe_norm = braid.get_param @layers.3.moe_norm : tensor<64xf32>
    %l3_moe_router = braid.get_param @layers.3.moe.router : tensor<64x4xf32>
    %l3_moe_w_gate = braid.get_param @layers.3.moe.w_gate : tensor<4x64x128xf32>
    %l3_moe_w_up = braid.get_param @layers.3.moe.w_up : tensor<4x64x128xf32>
    %l3_moe_w_down = braid.get_param @layers.3.moe.w_down : tensor<4x128x64xf32>
    %h4 = func.call @mamba_moe_layer(%h3, %l3_mamba_norm, %l3_mamba_in_x, %l3_mamba_in_z, %l3_mamba_conv_w, %l3_mamba_conv_b, %l3_mamba_x_dt, %l3_mamba_x_B, %l3_mamba_x_C, %l3_mamba_dt_proj, %l3_mamba_dt_bias, %l3_mamba_A_log, %l3_mamba_D, %l3_mamba_out_proj, %l3_moe_norm, %l3_moe_router, %l3_moe_w_gate, %l3_moe_w_up, %l3_moe_w_down) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x4xf32>, tensor<128xf32>, tensor<128x4xf32>, tensor<128x16xf32>, tensor<128x16xf32>, tensor<4x128xf32>, tensor<128xf32>, tensor<128x16xf32>, tensor<128xf32>, tensor<128x64xf32>, tensor<64xf32>, tensor<64x4xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x128x64xf32>) -> tensor<2x16x64xf32>
    %norm = braid.get_param @norm : tensor<64xf32>
    %normed = braid.rms_norm %h4, %norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %wout = braid.get_param @output : tensor<64x128xf32>
    %logits = braid.linear %normed, %wout : tensor<2x16x64xf32>, tensor<64x128xf32> -> tensor<2x16x128xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x16x128xf32>, tensor<2x16xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
