// RUN: braid-opt -split-input-file -verify-diagnostics --braid-derive-inference %s
// RUN: not braid-opt --braid-derive-inference="context=8 prompt-len=9" %S/../../examples/llama-tiny.mlir 2>&1 | FileCheck %s --check-prefix=SIZES
// RUN: not braid-opt --braid-derive-inference="context=32" %S/../../examples/gpt-tiny.mlir 2>&1 | FileCheck %s --check-prefix=POSITIONS

// SIZES: error: --braid-derive-inference: needs batch >= 1, context >= 1 and 1 <= prompt-len <= context, found batch 2, context 8, prompt-len 9
// POSITIONS: error: --braid-derive-inference: a context of 32 rows exceeds the model's 16 learned positions

// Generation attends to the past only.
module {
  braid.param @wte normal(2.000000e-02) : tensor<16x8xf32>
  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
    %w = braid.get_param @wte : tensor<16x8xf32>
    %h = braid.embedding %tok, %w : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
    %q = braid.reshape %h : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    // expected-error @+1 {{--braid-derive-inference: generation needs causal attention}}
    %a = braid.attention %q, %q, %q : tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32> -> tensor<2x4x2x4xf32>
    %o = braid.reshape %a : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
    %logits = braid.linear %o, %w transpose_weight : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A step that does not end in the loss of its logits.
module {
  braid.param @wte normal(2.000000e-02) : tensor<16x8xf32>
  // expected-error @+1 {{--braid-derive-inference: the training step must return the cross-entropy of its logits}}
  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<2x4x8xf32> attributes {braid.entry = "train_step"} {
    %w = braid.get_param @wte : tensor<16x8xf32>
    %h = braid.embedding %tok, %w : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
    return %h : tensor<2x4x8xf32>
  }
}

// -----

// The labels feed something besides the loss.
module {
  braid.param @wte normal(2.000000e-02) : tensor<16x8xf32>
  // expected-error @+1 {{--braid-derive-inference: the labels must be the step's argument, used by the loss alone}}
  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
    %w = braid.get_param @wte : tensor<16x8xf32>
    %h = braid.embedding %tok, %w : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
    %h2 = braid.embedding %labels, %w : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
    %s = braid.add %h, %h2 : tensor<2x4x8xf32>
    %logits = braid.linear %s, %w transpose_weight : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A step whose tokens are not [B, S].
module {
  // expected-error @+1 {{--braid-derive-inference: the training step must take tokens [B, S] and labels}}
  func.func @step(%tok: tensor<8xi32>, %labels: tensor<8xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
    %z = braid.fill 0.0 : tensor<f32>
    return %z : tensor<f32>
  }
}

// -----

// A reshape whose leading dimensions are not the tokens'.
module {
  braid.param @wte normal(2.000000e-02) : tensor<16x8xf32>
  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
    %w = braid.get_param @wte : tensor<16x8xf32>
    %h = braid.embedding %tok, %w : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
    // expected-error @+1 {{--braid-derive-inference: cannot re-type 'tensor<64xf32>': its leading dimensions are not the step's tokens [2, 4]}}
    %flat = braid.reshape %h : tensor<2x4x8xf32> -> tensor<64xf32>
    %back = braid.reshape %flat : tensor<64xf32> -> tensor<2x4x8xf32>
    %logits = braid.linear %back, %w transpose_weight : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A dispatch sized to drop nothing holds one assignment per expert and token:
// each token's experts must be distinct, as braid.router's are.
module {
  braid.param @wte normal(2.000000e-02) : tensor<16x8xf32>
  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> attributes {braid.entry = "train_step"} {
    %w = braid.get_param @wte : tensor<16x8xf32>
    %h = braid.embedding %tok, %w : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
    %flat = braid.reshape %h : tensor<2x4x8xf32> -> tensor<8x8xf32>
    %experts = braid.reshape %tok : tensor<2x4xi32> -> tensor<8x1xi32>
    // expected-error @+1 {{--braid-derive-inference: cannot size this braid.dispatch to drop no token: its expert indices do not come from a braid.router, so a token's choices may repeat an expert}}
    %d = braid.dispatch %flat, %experts group_size 4 : tensor<8x8xf32>, tensor<8x1xi32> -> tensor<2x4x8xf32>
    %back = braid.reshape %d : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %logits = braid.linear %back, %w transpose_weight : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
