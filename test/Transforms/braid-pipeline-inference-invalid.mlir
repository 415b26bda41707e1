// RUN: braid-opt %s --split-input-file --braid-pipeline-inference -verify-diagnostics -o /dev/null
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | braid-opt --braid-partition="grid=pp=2" | not braid-opt --braid-pipeline-inference="layout=2,0" 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | not braid-opt --braid-microbatch-inference="count=3" 2>&1 | FileCheck %s --check-prefix=MB3

// What --braid-pipeline-inference and --braid-microbatch-inference refuse.

// A layout that leaves a stage without a layer.
// LAYOUT: error: pipeline layout entry 1 is 0; every chunk needs at least one layer

// Micro-batches must divide the sequences of every program and cache.
// MB3: error: the sequences (2) of state @cache.layers.0.k are not a multiple of the 3 micro-batches

// More stages than layers.
module {
  shard.grid @grid(shape = 4) {braid.axes = ["pp"]}
  braid.param @wte normal(2.000000e-02) : tensor<10x4xf32>
  func.func private @layer(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %y = braid.mul %x, %x : tensor<2x3x4xf32>
    return %y : tensor<2x3x4xf32>
  }
  // expected-error @+1 {{cannot split 2 layers into 4 pipeline chunks: every chunk needs at least one layer}}
  func.func @prefill(%tok: tensor<2x3xi32>) -> tensor<2x3x4xf32> attributes {braid.entry = "prefill"} {
    %w = braid.get_param @wte : tensor<10x4xf32>
    %h = braid.embedding %tok, %w : tensor<2x3xi32>, tensor<10x4xf32> -> tensor<2x3x4xf32>
    %a = func.call @layer(%h) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %b = func.call @layer(%a) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %b : tensor<2x3x4xf32>
  }
}

// -----

// The programs of a stage share its layers: they must have the same ones.
module {
  shard.grid @grid(shape = 2) {braid.axes = ["pp"]}
  braid.param @wte normal(2.000000e-02) : tensor<10x4xf32>
  func.func private @layer(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %y = braid.mul %x, %x : tensor<2x3x4xf32>
    return %y : tensor<2x3x4xf32>
  }
  // expected-error @+1 {{--braid-pipeline-inference: @prefill calls 1 layer functions and @forward 2: the programs must share their layers}}
  func.func @prefill(%tok: tensor<2x3xi32>) -> tensor<2x3x4xf32> attributes {braid.entry = "prefill"} {
    %w = braid.get_param @wte : tensor<10x4xf32>
    %h = braid.embedding %tok, %w : tensor<2x3xi32>, tensor<10x4xf32> -> tensor<2x3x4xf32>
    %a = func.call @layer(%h) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %a : tensor<2x3x4xf32>
  }
  func.func @forward(%tok: tensor<2x3xi32>) -> tensor<2x3x4xf32> attributes {braid.entry = "forward"} {
    %w = braid.get_param @wte : tensor<10x4xf32>
    %h = braid.embedding %tok, %w : tensor<2x3xi32>, tensor<10x4xf32> -> tensor<2x3x4xf32>
    %a = func.call @layer(%h) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %b = func.call @layer(%a) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %b : tensor<2x3x4xf32>
  }
}

// -----

// The programs share their caches, so they compute micro-batches of one size.
module {
  shard.grid @grid(shape = 2) {braid.axes = ["pp"]}
  braid.param @wte normal(2.000000e-02) : tensor<10x4xf32>
  func.func private @layer(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %y = braid.mul %x, %x : tensor<2x3x4xf32>
    return %y : tensor<2x3x4xf32>
  }
  func.func @prefill(%tok: tensor<2x3xi32>) -> tensor<2x3x4xf32> attributes {braid.entry = "prefill", braid.microbatches = 2 : i64} {
    %w = braid.get_param @wte : tensor<10x4xf32>
    %h = braid.embedding %tok, %w : tensor<2x3xi32>, tensor<10x4xf32> -> tensor<2x3x4xf32>
    %a = func.call @layer(%h) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %b = func.call @layer(%a) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %b : tensor<2x3x4xf32>
  }
  // expected-error @+1 {{--braid-pipeline-inference: @decode computes one of 1 micro-batches and @prefill one of 2: the programs share their caches}}
  func.func @decode(%tok: tensor<2x3xi32>) -> tensor<2x3x4xf32> attributes {braid.entry = "decode"} {
    %w = braid.get_param @wte : tensor<10x4xf32>
    %h = braid.embedding %tok, %w : tensor<2x3xi32>, tensor<10x4xf32> -> tensor<2x3x4xf32>
    %a = func.call @layer(%h) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %b = func.call @layer(%a) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %b : tensor<2x3x4xf32>
  }
}
