// RUN: braid-opt -split-input-file -verify-diagnostics --braid-microbatch="count=2" %s

// A view whose leading dimension is not a multiple of the micro-batches.
module {
  func.func @step(%tokens: tensor<2x3xi32>) -> tensor<3x2xi32> {
    // expected-error @+1 {{cannot micro-batch this reshape: its leading dimension (3) is not a multiple of 2}}
    %r = braid.reshape %tokens : tensor<2x3xi32> -> tensor<3x2xi32>
    return %r : tensor<3x2xi32>
  }
}

// -----

// A function called with a batch and with a parameter of the same shape.
module {
  braid.param @w zeros : tensor<2x4xf32>
  func.func private @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %y = braid.neg %x : tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
  func.func @step(%a: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %w = braid.get_param @w : tensor<2x4xf32>
    %x = func.call @f(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    // expected-error @+1 {{cannot micro-batch @f: it is called with different shapes once micro-batched}}
    %y = func.call @f(%w) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    return %x : tensor<2x4xf32>
  }
}

// -----

// An ungrouped dispatch: its capacity is over all the step's tokens.
module {
  func.func @step(%x: tensor<8x4xf32>, %i: tensor<8x2xi32>) -> tensor<2x8x4xf32> {
    // expected-error @+1 {{cannot micro-batch this dispatch: its 8 tokens form one capacity group (no group_size), which micro-batches would cut}}
    %d = braid.dispatch %x, %i : tensor<8x4xf32>, tensor<8x2xi32> -> tensor<2x8x4xf32>
    return %d : tensor<2x8x4xf32>
  }
}

// -----

// Capacity groups of 8 tokens: micro-batches of 4 would cut them.
module {
  func.func @step(%x: tensor<8x4xf32>, %i: tensor<8x2xi32>) -> tensor<2x8x4xf32> {
    // expected-error @+1 {{cannot micro-batch this dispatch: 2 micro-batches of 4 tokens cut its capacity groups of 8}}
    %d = braid.dispatch %x, %i group_size 8 : tensor<8x4xf32>, tensor<8x2xi32> -> tensor<2x8x4xf32>
    return %d : tensor<2x8x4xf32>
  }
}
