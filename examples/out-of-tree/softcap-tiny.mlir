// A tiny model with a user's op: Gemma 2's final logit soft-capping
// (user.softcap, from BraidUserPlugin) between the LM head and the loss.
module attributes {braid.model = {name = "softcap-tiny", family = "llama", vocab = 16 : i64, hidden = 8 : i64}} {
  braid.param @tok_embeddings normal(2.000000e-02) : tensor<16x8xf32>
  braid.param @norm ones : tensor<8xf32>
  braid.param @output normal(2.000000e-02) : tensor<8x16xf32>
  func.func @step(%tokens: tensor<4x6xi32>, %labels: tensor<4x6xi32>) -> tensor<f32> {
    %wte = braid.get_param @tok_embeddings : tensor<16x8xf32>
    %h = braid.embedding %tokens, %wte : tensor<4x6xi32>, tensor<16x8xf32> -> tensor<4x6x8xf32>
    %g = braid.get_param @norm : tensor<8xf32>
    %n = braid.rms_norm %h, %g : tensor<4x6x8xf32>, tensor<8xf32> -> tensor<4x6x8xf32>
    %w = braid.get_param @output : tensor<8x16xf32>
    %logits = braid.linear %n, %w : tensor<4x6x8xf32>, tensor<8x16xf32> -> tensor<4x6x16xf32>
    %capped = user.softcap %logits cap 3.000000e+01 : tensor<4x6x16xf32>
    %loss = braid.cross_entropy %capped, %labels : tensor<4x6x16xf32>, tensor<4x6xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
