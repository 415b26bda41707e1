module attributes {braid.model = {name = "llama-tiny", family = "llama", vocab = 256 : i64,
                                  hidden = 64 : i64, layers = 2 : i64, seq = 16 : i64,
                                  batch = 2 : i64, dtype = "f32", heads = 4 : i64,
                                  kv_heads = 2 : i64, head_dim = 16 : i64,
                                  rope_theta = 1.000000e+04 : f64, ffn = 128 : i64,
                                  norm = "rms_norm", norm_eps = 1.000000e-05 : f64,
                                  tied_embeddings = false, init_std = 2.000000e-02 : f64,
                                  scale_residual_init = true}} {
  braid.param @tok_embeddings normal(2.000000e-02) : tensor<256x64xf32>
  braid.param @layers.0.attn_norm ones : tensor<64xf32>
  braid.param @layers.0.attn.wq normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.0.attn.wk normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.0.attn.wv normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.0.attn.wo normal(1.000000e-02) : tensor<64x64xf32>
  braid.param @layers.0.mlp_norm ones : tensor<64xf32>
  braid.param @layers.0.mlp.w_gate normal(2.000000e-02) : tensor<64x128xf32>
  braid.param @layers.0.mlp.w_up normal(2.000000e-02) : tensor<64x128xf32>
  braid.param @layers.0.mlp.w_down normal(1.000000e-02) : tensor<128x64xf32>
  braid.param @layers.1.attn_norm ones : tensor<64xf32>
  braid.param @layers.1.attn.wq normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.1.attn.wk normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.1.attn.wv normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.1.attn.wo normal(1.000000e-02) : tensor<64x64xf32>
  braid.param @layers.1.mlp_norm ones : tensor<64xf32>
  braid.param @layers.1.mlp.w_gate normal(2.000000e-02) : tensor<64x128xf32>
  braid.param @layers.1.mlp.w_up normal(2.000000e-02) : tensor<64x128xf32>
  braid.param @layers.1.mlp.w_down normal(1.000000e-02) : tensor<128x64xf32>
  braid.param @norm ones : tensor<64xf32>
  braid.param @output normal(2.000000e-02) : tensor<64x256xf32>
  func.func private @llama_layer(%x: tensor<2x16x64xf32>, %attn_norm: tensor<64xf32>, %attn_wq: tensor<64x64xf32>, %attn_wk: tensor<64x32xf32>, %attn_wv: tensor<64x32xf32>, %attn_wo: tensor<64x64xf32>, %mlp_norm: tensor<64xf32>, %mlp_w_gate: tensor<64x128xf32>, %mlp_w_up: tensor<64x128xf32>, %mlp_w_down: tensor<128x64xf32>) -> tensor<2x16x64xf32> {
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
    %mlp_normed = braid.rms_norm %attn_out, %mlp_norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %gate = braid.linear %mlp_normed, %mlp_w_gate : tensor<2x16x64xf32>, tensor<64x128xf32> -> tensor<2x16x128xf32>
    %up = braid.linear %mlp_normed, %mlp_w_up : tensor<2x16x64xf32>, tensor<64x128xf32> -> tensor<2x16x128xf32>
    %act = braid.glu silu %gate, %up : tensor<2x16x128xf32>
    %down = braid.linear %act, %mlp_w_down : tensor<2x16x128xf32>, tensor<128x64xf32> -> tensor<2x16x64xf32>
    %mlp_out = braid.add %attn_out, %down : tensor<2x16x64xf32>
    return %mlp_out : tensor<2x16x64xf32>
  }
  func.func @step(%tokens: tensor<2x16xi32>, %labels: tensor<2x16xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
    %wte = braid.get_param @tok_embeddings : tensor<256x64xf32>
    %h0 = braid.embedding %tokens, %wte : tensor<2x16xi32>, tensor<256x64xf32> -> tensor<2x16x64xf32>
    %l0_attn_norm = braid.get_param @layers.0.attn_norm : tensor<64xf32>
    %l0_attn_wq = braid.get_param @layers.0.attn.wq : tensor<64x64xf32>
    %l0_attn_wk = braid.get_param @layers.0.attn.wk : tensor<64x32xf32>
    %l0_attn_wv = braid.get_param @layers.0.attn.wv : tensor<64x32xf32>
    %l0_attn_wo = braid.get_param @layers.0.attn.wo : tensor<64x64xf32>
    %l0_mlp_norm = braid.get_param @layers.0.mlp_norm : tensor<64xf32>
    %l0_mlp_w_gate = braid.get_param @layers.0.mlp.w_gate : tensor<64x128xf32>
    %l0_mlp_w_up = braid.get_param @layers.0.mlp.w_up : tensor<64x128xf32>
    %l0_mlp_w_down = braid.get_param @layers.0.mlp.w_down : tensor<128x64xf32>
    %h1 = func.call @llama_layer(%h0, %l0_attn_norm, %l0_attn_wq, %l0_attn_wk, %l0_attn_wv, %l0_attn_wo, %l0_mlp_norm, %l0_mlp_w_gate, %l0_mlp_w_up, %l0_mlp_w_down) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<2x16x64xf32>
    %l1_attn_norm = braid.get_param @layers.1.attn_norm : tensor<64xf32>
    %l1_attn_wq = braid.get_param @layers.1.attn.wq : tensor<64x64xf32>
    %l1_attn_wk = braid.get_param @layers.1.attn.wk : tensor<64x32xf32>
    %l1_attn_wv = braid.get_param @layers.1.attn.wv : tensor<64x32xf32>
    %l1_attn_wo = braid.get_param @layers.1.attn.wo : tensor<64x64xf32>
    %l1_mlp_norm = braid.get_param @layers.1.mlp_norm : tensor<64xf32>
    %l1_mlp_w_gate = braid.get_param @layers.1.mlp.w_gate : tensor<64x128xf32>
    %l1_mlp_w_up = braid.get_param @layers.1.mlp.w_up : tensor<64x128xf32>
    %l1_mlp_w_down = braid.get_param @layers.1.mlp.w_down : tensor<128x64xf32>
    %h2 = func.call @llama_layer(%h1, %l1_attn_norm, %l1_attn_wq, %l1_attn_wk, %l1_attn_wv, %l1_attn_wo, %l1_mlp_norm, %l1_mlp_w_gate, %l1_mlp_w_up, %l1_mlp_w_down) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<2x16x64xf32>
    %norm = braid.get_param @norm : tensor<64xf32>
    %normed = braid.rms_norm %h2, %norm {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %wout = braid.get_param @output : tensor<64x256xf32>
    %logits = braid.linear %normed, %wout : tensor<2x16x64xf32>, tensor<64x256xf32> -> tensor<2x16x256xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x16x256xf32>, tensor<2x16xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
