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
