module attributes {braid.model = {name = "moe-tiny", family = "moe", vocab = 97 : i64,
                                  hidden = 64 : i64, layers = 2 : i64, seq = 16 : i64,
                                  batch = 2 : i64, dtype = "f32", heads = 4 : i64,
                                  kv_heads = 2 : i64, head_dim = 16 : i64,
                                  rope_theta = 1.000000e+04 : f64, ffn = 128 : i64,
                                  experts = 4 : i64, top_k = 2 : i64,
                                  capacity_factor = 1.250000e+00 : f64, capacity = 10 : i64,
                                  router_normalize = true, norm = "rms_norm",
                                  norm_eps = 1.000000e-05 : f64, tied_embeddings = false,
                                  init_std = 2.000000e-02 : f64, scale_residual_init = true}} {
  braid.param @tok_embeddings normal(2.000000e-02) : tensor<97x64xf32>
  braid.param @layers.0.attn_norm ones : tensor<64xf32>
  braid.param @layers.0.attn.wq normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.0.attn.wk normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.0.attn.wv normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.0.attn.wo normal(1.000000e-02) : tensor<64x64xf32>
  braid.param @layers.0.moe_norm ones : tensor<64xf32>
  braid.param @layers.0.moe.router normal(2.000000e-02) : tensor<64x4xf32>
  braid.param @layers.0.moe.w_gate normal(2.000000e-02) : tensor<4x64x128xf32>
  braid.param @layers.0.moe.w_up normal(2.000000e-02) : tensor<4x64x128xf32>
  braid.param @layers.0.moe.w_down normal(1.000000e-02) : tensor<4x128x64xf32>
  braid.param @layers.1.attn_norm ones : tensor<64xf32>
  braid.param @layers.1.attn.wq normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.1.attn.wk normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.1.attn.wv normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.1.attn.wo normal(1.000000e-02) : tensor<64x64xf32>
  braid.param @layers.1.moe_norm ones : tensor<64xf32>
  braid.param @layers.1.moe.router normal(2.000000e-02) : tensor<64x4xf32>
  braid.param @layers.1.moe.w_gate normal(2.000000e-02) : tensor<4x64x128xf32>
  braid.param @layers.1.moe.w_up normal(2.000000e-02) : tensor<4x64x128xf32>
  braid.param @layers.1.moe.w_down normal(1.000000e-02) : tensor<4x128x64xf32>
  braid.param @norm ones : tensor<64xf32>
  braid.param @output normal(2.000000e-02) : tensor<64x97xf32>
  func.func private @moe_layer(%x: tensor<2x16x64xf32>, %attn_norm: tensor<64xf32>, %attn_wq: tensor<64x64xf32>, %attn_wk: tensor<64x32xf32>, %attn_wv: tensor<64x32xf32>, %attn_wo: tensor<64x64xf32>, %moe_norm: tensor<64xf32>, %moe_router: tensor<64x4xf32>, %moe_w_gate: tensor<4x64x128xf32>, %moe_w_up: tensor<4x64x128xf32>, %moe_w_down: tensor<4x128x64xf32>) -> tensor<2x16x64xf32> {
    %attn_normed = braid.rms_norm %x, %attn_norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %q = braid.linear %attn_normed, %attn_wq : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
    %q_heads = braid.reshape %q : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    %k = braid.linear %attn_normed, %attn_wk : tensor<2x16x64xf32>, tensor<64x32xf32> -> tensor<2x16x32xf32>
    %k_heads = braid.reshape %k : tensor<2x16x32xf32> -> tensor<2x16x2x16xf32>
    %v = braid.linear %attn_normed, %attn_wv : tensor<2x16x64xf32>, tensor<64x32xf32> -> tensor<2x16x32xf32>
    %v_heads = braid.reshape %v : tensor<2x16x32xf32> -> tensor<2x16x2x16xf32>
    %attn = braid.attention %q_heads, %k_heads, %v_heads causal {rope_theta = 1.000000e+04 : f64} : tensor<2x16x4x16xf32>, tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32> -> tensor<2x16x4x16xf32>
    %attn_flat = braid.reshape %attn : tensor<2x16x4x16xf32> -> tensor<2x16x64xf32>
    %attn_proj = braid.linear %attn_flat, %attn_wo : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
    %attn_out = braid.add %x, %attn_proj : tensor<2x16x64xf32>
    %moe_normed = braid.rms_norm %attn_out, %moe_norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %flat = braid.reshape %moe_normed : tensor<2x16x64xf32> -> tensor<32x64xf32>
    %router_logits = braid.linear %flat, %moe_router : tensor<32x64xf32>, tensor<64x4xf32> -> tensor<32x4xf32>
    %route_w, %route_i = braid.router %router_logits top_k 2 normalize : tensor<32x4xf32> -> tensor<32x2xf32>, tensor<32x2xi32>
    %dispatched = braid.dispatch %flat, %route_i group_size 16 : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<4x20x64xf32>
    %experts = braid.expert_ffn silu %dispatched, %moe_w_up, %moe_w_down gate %moe_w_gate : tensor<4x20x64xf32>, tensor<4x64x128xf32>, tensor<4x128x64xf32>, tensor<4x64x128xf32> -> tensor<4x20x64xf32>
    %combined = braid.combine %experts, %route_w, %route_i group_size 16 : tensor<4x20x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
    %moe_y = braid.reshape %combined : tensor<32x64xf32> -> tensor<2x16x64xf32>
    %moe_out = braid.add %attn_out, %moe_y : tensor<2x16x64xf32>
    return %moe_out : tensor<2x16x64xf32>
  }
  func.func @step(%tokens: tensor<2x16xi32>, %labels: tensor<2x16xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
    %wte = braid.get_param @tok_embeddings : tensor<97x64xf32>
    %h0 = braid.embedding %tokens, %wte : tensor<2x16xi32>, tensor<97x64xf32> -> tensor<2x16x64xf32>
    %l0_attn_norm = braid.get_param @layers.0.attn_norm : tensor<64xf32>
    %l0_attn_wq = braid.get_param @layers.0.attn.wq : tensor<64x64xf32>
    %l0_attn_wk = braid.get_param @layers.0.attn.wk : tensor<64x32xf32>
    %l0_attn_wv = braid.get_param @layers.0.attn.wv : tensor<64x32xf32>
    %l0_attn_wo = braid.get_param @layers.0.attn.wo : tensor<64x64xf32>
    %l0_moe_norm = braid.get_param @layers.0.moe_norm : tensor<64xf32>
    %l0_moe_router = braid.get_param @layers.0.moe.router : tensor<64x4xf32>
    %l0_moe_w_gate = braid.get_param @layers.0.moe.w_gate : tensor<4x64x128xf32>
    %l0_moe_w_up = braid.get_param @layers.0.moe.w_up : tensor<4x64x128xf32>
    %l0_moe_w_down = braid.get_param @layers.0.moe.w_down : tensor<4x128x64xf32>
    %h1 = func.call @moe_layer(%h0, %l0_attn_norm, %l0_attn_wq, %l0_attn_wk, %l0_attn_wv, %l0_attn_wo, %l0_moe_norm, %l0_moe_router, %l0_moe_w_gate, %l0_moe_w_up, %l0_moe_w_down) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x4xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x128x64xf32>) -> tensor<2x16x64xf32>
    %l1_attn_norm = braid.get_param @layers.1.attn_norm : tensor<64xf32>
    %l1_attn_wq = braid.get_param @layers.1.attn.wq : tensor<64x64xf32>
    %l1_attn_wk = braid.get_param @layers.1.attn.wk : tensor<64x32xf32>
    %l1_attn_wv = braid.get_param @layers.1.attn.wv : tensor<64x32xf32>
    %l1_attn_wo = braid.get_param @layers.1.attn.wo : tensor<64x64xf32>
    %l1_moe_norm = braid.get_param @layers.1.moe_norm : tensor<64xf32>
    %l1_moe_router = braid.get_param @layers.1.moe.router : tensor<64x4xf32>
    %l1_moe_w_gate = braid.get_param @layers.1.moe.w_gate : tensor<4x64x128xf32>
    %l1_moe_w_up = braid.get_param @layers.1.moe.w_up : tensor<4x64x128xf32>
    %l1_moe_w_down = braid.get_param @layers.1.moe.w_down : tensor<4x128x64xf32>
    %h2 = func.call @moe_layer(%h1, %l1_attn_norm, %l1_attn_wq, %l1_attn_wk, %l1_attn_wv, %l1_attn_wo, %l1_moe_norm, %l1_moe_router, %l1_moe_w_gate, %l1_moe_w_up, %l1_moe_w_down) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x4xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x128x64xf32>) -> tensor<2x16x64xf32>
    %norm = braid.get_param @norm : tensor<64xf32>
    %normed = braid.rms_norm %h2, %norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %wout = braid.get_param @output : tensor<64x97xf32>
    %logits = braid.linear %normed, %wout : tensor<2x16x64xf32>, tensor<64x97xf32> -> tensor<2x16x97xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x16x97xf32>, tensor<2x16xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
