module attributes {braid.model = {name = "gpt-tiny", family = "gpt", vocab = 97 : i64,
                                  hidden = 64 : i64, layers = 2 : i64, seq = 16 : i64,
                                  batch = 2 : i64, dtype = "f32", heads = 4 : i64,
                                  head_dim = 16 : i64, ffn = 256 : i64, max_positions = 16 : i64,
                                  norm = "layer_norm", norm_eps = 1.000000e-05 : f64,
                                  tied_embeddings = true, init_std = 2.000000e-02 : f64,
                                  scale_residual_init = true}} {
  braid.param @tok_embeddings normal(2.000000e-02) : tensor<97x64xf32>
  braid.param @pos_embeddings normal(2.000000e-02) : tensor<16x64xf32>
  braid.param @layers.0.attn_norm ones : tensor<64xf32>
  braid.param @layers.0.attn_norm_bias zeros : tensor<64xf32>
  braid.param @layers.0.attn.wq normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.0.attn.wk normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.0.attn.wv normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.0.attn.wo normal(1.000000e-02) : tensor<64x64xf32>
  braid.param @layers.0.attn.bq zeros : tensor<64xf32>
  braid.param @layers.0.attn.bk zeros : tensor<64xf32>
  braid.param @layers.0.attn.bv zeros : tensor<64xf32>
  braid.param @layers.0.attn.bo zeros : tensor<64xf32>
  braid.param @layers.0.mlp_norm ones : tensor<64xf32>
  braid.param @layers.0.mlp_norm_bias zeros : tensor<64xf32>
  braid.param @layers.0.mlp.w_up normal(2.000000e-02) : tensor<64x256xf32>
  braid.param @layers.0.mlp.b_up zeros : tensor<256xf32>
  braid.param @layers.0.mlp.w_down normal(1.000000e-02) : tensor<256x64xf32>
  braid.param @layers.0.mlp.b_down zeros : tensor<64xf32>
  braid.param @layers.1.attn_norm ones : tensor<64xf32>
  braid.param @layers.1.attn_norm_bias zeros : tensor<64xf32>
  braid.param @layers.1.attn.wq normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.1.attn.wk normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.1.attn.wv normal(2.000000e-02) : tensor<64x64xf32>
  braid.param @layers.1.attn.wo normal(1.000000e-02) : tensor<64x64xf32>
  braid.param @layers.1.attn.bq zeros : tensor<64xf32>
  braid.param @layers.1.attn.bk zeros : tensor<64xf32>
  braid.param @layers.1.attn.bv zeros : tensor<64xf32>
  braid.param @layers.1.attn.bo zeros : tensor<64xf32>
  braid.param @layers.1.mlp_norm ones : tensor<64xf32>
  braid.param @layers.1.mlp_norm_bias zeros : tensor<64xf32>
  braid.param @layers.1.mlp.w_up normal(2.000000e-02) : tensor<64x256xf32>
  braid.param @layers.1.mlp.b_up zeros : tensor<256xf32>
  braid.param @layers.1.mlp.w_down normal(1.000000e-02) : tensor<256x64xf32>
  braid.param @layers.1.mlp.b_down zeros : tensor<64xf32>
  braid.param @norm ones : tensor<64xf32>
  braid.param @norm_bias zeros : tensor<64xf32>
  func.func private @gpt_layer(%x: tensor<2x16x64xf32>, %attn_norm: tensor<64xf32>, %attn_norm_bias: tensor<64xf32>, %attn_wq: tensor<64x64xf32>, %attn_wk: tensor<64x64xf32>, %attn_wv: tensor<64x64xf32>, %attn_wo: tensor<64x64xf32>, %attn_bq: tensor<64xf32>, %attn_bk: tensor<64xf32>, %attn_bv: tensor<64xf32>, %attn_bo: tensor<64xf32>, %mlp_norm: tensor<64xf32>, %mlp_norm_bias: tensor<64xf32>, %mlp_w_up: tensor<64x256xf32>, %mlp_b_up: tensor<256xf32>, %mlp_w_down: tensor<256x64xf32>, %mlp_b_down: tensor<64xf32>) -> tensor<2x16x64xf32> {
    %attn_normed = braid.layer_norm %x, %attn_norm, %attn_norm_bias {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %q = braid.linear %attn_normed, %attn_wq bias %attn_bq : tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %q_heads = braid.reshape %q : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    %k = braid.linear %attn_normed, %attn_wk bias %attn_bk : tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %k_heads = braid.reshape %k : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    %v = braid.linear %attn_normed, %attn_wv bias %attn_bv : tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %v_heads = braid.reshape %v : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    %attn = braid.attention %q_heads, %k_heads, %v_heads causal : tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32> -> tensor<2x16x4x16xf32>
    %attn_flat = braid.reshape %attn : tensor<2x16x4x16xf32> -> tensor<2x16x64xf32>
    %attn_proj = braid.linear %attn_flat, %attn_wo bias %attn_bo : tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %attn_out = braid.add %x, %attn_proj : tensor<2x16x64xf32>
    %mlp_normed = braid.layer_norm %attn_out, %mlp_norm, %mlp_norm_bias {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %up = braid.linear %mlp_normed, %mlp_w_up bias %mlp_b_up : tensor<2x16x64xf32>, tensor<64x256xf32>, tensor<256xf32> -> tensor<2x16x256xf32>
    %act = braid.gelu %up tanh : tensor<2x16x256xf32>
    %down = braid.linear %act, %mlp_w_down bias %mlp_b_down : tensor<2x16x256xf32>, tensor<256x64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %mlp_out = braid.add %attn_out, %down : tensor<2x16x64xf32>
    return %mlp_out : tensor<2x16x64xf32>
  }
  func.func @step(%tokens: tensor<2x16xi32>, %labels: tensor<2x16xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
    %wte = braid.get_param @tok_embeddings : tensor<97x64xf32>
    %wpe = braid.get_param @pos_embeddings : tensor<16x64xf32>
    %h0 = braid.embedding %tokens, %wte positions %wpe : tensor<2x16xi32>, tensor<97x64xf32>, tensor<16x64xf32> -> tensor<2x16x64xf32>
    %l0_attn_norm = braid.get_param @layers.0.attn_norm : tensor<64xf32>
    %l0_attn_norm_bias = braid.get_param @layers.0.attn_norm_bias : tensor<64xf32>
    %l0_attn_wq = braid.get_param @layers.0.attn.wq : tensor<64x64xf32>
    %l0_attn_wk = braid.get_param @layers.0.attn.wk : tensor<64x64xf32>
    %l0_attn_wv = braid.get_param @layers.0.attn.wv : tensor<64x64xf32>
    %l0_attn_wo = braid.get_param @layers.0.attn.wo : tensor<64x64xf32>
    %l0_attn_bq = braid.get_param @layers.0.attn.bq : tensor<64xf32>
    %l0_attn_bk = braid.get_param @layers.0.attn.bk : tensor<64xf32>
    %l0_attn_bv = braid.get_param @layers.0.attn.bv : tensor<64xf32>
    %l0_attn_bo = braid.get_param @layers.0.attn.bo : tensor<64xf32>
    %l0_mlp_norm = braid.get_param @layers.0.mlp_norm : tensor<64xf32>
    %l0_mlp_norm_bias = braid.get_param @layers.0.mlp_norm_bias : tensor<64xf32>
    %l0_mlp_w_up = braid.get_param @layers.0.mlp.w_up : tensor<64x256xf32>
    %l0_mlp_b_up = braid.get_param @layers.0.mlp.b_up : tensor<256xf32>
    %l0_mlp_w_down = braid.get_param @layers.0.mlp.w_down : tensor<256x64xf32>
    %l0_mlp_b_down = braid.get_param @layers.0.mlp.b_down : tensor<64xf32>
    %h1 = func.call @gpt_layer(%h0, %l0_attn_norm, %l0_attn_norm_bias, %l0_attn_wq, %l0_attn_wk, %l0_attn_wv, %l0_attn_wo, %l0_attn_bq, %l0_attn_bk, %l0_attn_bv, %l0_attn_bo, %l0_mlp_norm, %l0_mlp_norm_bias, %l0_mlp_w_up, %l0_mlp_b_up, %l0_mlp_w_down, %l0_mlp_b_down) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    %l1_attn_norm = braid.get_param @layers.1.attn_norm : tensor<64xf32>
    %l1_attn_norm_bias = braid.get_param @layers.1.attn_norm_bias : tensor<64xf32>
    %l1_attn_wq = braid.get_param @layers.1.attn.wq : tensor<64x64xf32>
    %l1_attn_wk = braid.get_param @layers.1.attn.wk : tensor<64x64xf32>
    %l1_attn_wv = braid.get_param @layers.1.attn.wv : tensor<64x64xf32>
    %l1_attn_wo = braid.get_param @layers.1.attn.wo : tensor<64x64xf32>
    %l1_attn_bq = braid.get_param @layers.1.attn.bq : tensor<64xf32>
    %l1_attn_bk = braid.get_param @layers.1.attn.bk : tensor<64xf32>
    %l1_attn_bv = braid.get_param @layers.1.attn.bv : tensor<64xf32>
    %l1_attn_bo = braid.get_param @layers.1.attn.bo : tensor<64xf32>
    %l1_mlp_norm = braid.get_param @layers.1.mlp_norm : tensor<64xf32>
    %l1_mlp_norm_bias = braid.get_param @layers.1.mlp_norm_bias : tensor<64xf32>
    %l1_mlp_w_up = braid.get_param @layers.1.mlp.w_up : tensor<64x256xf32>
    %l1_mlp_b_up = braid.get_param @layers.1.mlp.b_up : tensor<256xf32>
    %l1_mlp_w_down = braid.get_param @layers.1.mlp.w_down : tensor<256x64xf32>
    %l1_mlp_b_down = braid.get_param @layers.1.mlp.b_down : tensor<64xf32>
    %h2 = func.call @gpt_layer(%h1, %l1_attn_norm, %l1_attn_norm_bias, %l1_attn_wq, %l1_attn_wk, %l1_attn_wv, %l1_attn_wo, %l1_attn_bq, %l1_attn_bk, %l1_attn_bv, %l1_attn_bo, %l1_mlp_norm, %l1_mlp_norm_bias, %l1_mlp_w_up, %l1_mlp_b_up, %l1_mlp_w_down, %l1_mlp_b_down) : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    %norm = braid.get_param @norm : tensor<64xf32>
    %norm_bias = braid.get_param @norm_bias : tensor<64xf32>
    %normed = braid.layer_norm %h2, %norm, %norm_bias {epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
    %logits = braid.linear %normed, %wte transpose_weight : tensor<2x16x64xf32>, tensor<97x64xf32> -> tensor<2x16x97xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x16x97xf32>, tensor<2x16xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
