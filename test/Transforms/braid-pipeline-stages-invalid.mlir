// RUN: braid-opt %s --split-input-file --braid-pipeline-stages="pp=2" -verify-diagnostics -o /dev/null
// Layer stages the model gives its layer calls: on every layer or none, in
// order, within the chunks, none empty.

module {
  braid.param @wte zeros : tensor<10x4xf32>
  func.func private @layer(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %y = braid.mul %x, %x : tensor<2x3x4xf32>
    return %y : tensor<2x3x4xf32>
  }
  func.func @step(%tok: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
    %w = braid.get_param @wte : tensor<10x4xf32>
    %h = braid.embedding %tok, %w : tensor<2x3xi32>, tensor<10x4xf32> -> tensor<2x3x4xf32>
    %a = func.call @layer(%h) {braid.stage = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    // expected-error @+1 {{this layer has no braid.stage while others do: give every layer its stage, or none}}
    %b = func.call @layer(%a) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %b : tensor<2x3x4xf32>
  }
}

// -----

module {
  braid.param @wte zeros : tensor<10x4xf32>
  func.func private @layer(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %y = braid.mul %x, %x : tensor<2x3x4xf32>
    return %y : tensor<2x3x4xf32>
  }
  func.func @step(%tok: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
    %w = braid.get_param @wte : tensor<10x4xf32>
    %h = braid.embedding %tok, %w : tensor<2x3xi32>, tensor<10x4xf32> -> tensor<2x3x4xf32>
    %a = func.call @layer(%h) {braid.stage = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    // expected-error @+1 {{layer stage 0 follows a layer of stage 1: stages must be contiguous runs of layers in order}}
    %b = func.call @layer(%a) {braid.stage = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %b : tensor<2x3x4xf32>
  }
}

// -----

module {
  braid.param @wte zeros : tensor<10x4xf32>
  func.func private @layer(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %y = braid.mul %x, %x : tensor<2x3x4xf32>
    return %y : tensor<2x3x4xf32>
  }
  func.func @step(%tok: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
    %w = braid.get_param @wte : tensor<10x4xf32>
    %h = braid.embedding %tok, %w : tensor<2x3xi32>, tensor<10x4xf32> -> tensor<2x3x4xf32>
    %a = func.call @layer(%h) {braid.stage = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    // expected-error @+1 {{layer stage 2 is not one of the 2 model chunks}}
    %b = func.call @layer(%a) {braid.stage = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %b : tensor<2x3x4xf32>
  }
}

// -----

module {
  braid.param @wte zeros : tensor<10x4xf32>
  func.func private @layer(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %y = braid.mul %x, %x : tensor<2x3x4xf32>
    return %y : tensor<2x3x4xf32>
  }
  func.func @step(%tok: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
    %w = braid.get_param @wte : tensor<10x4xf32>
    %h = braid.embedding %tok, %w : tensor<2x3xi32>, tensor<10x4xf32> -> tensor<2x3x4xf32>
    // expected-error @+1 {{no layer is assigned to model chunk 1 of 2}}
    %a = func.call @layer(%h) {braid.stage = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %b = func.call @layer(%a) {braid.stage = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %b : tensor<2x3x4xf32>
  }
}
