// RUN: braid-opt %s --convert-braid-to-dist -split-input-file -verify-diagnostics

shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @product(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{dist reduces by sum, max or min, not product}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] reduction = product : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @element_type(%x: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{a transfer keeps the element type; 'tensor<4xbf16>' -> 'tensor<4xf32>'}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] : tensor<4xbf16> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The ring goes around the communicator's ranks, which are in grid order.
shard.grid @grid(shape = 2x2) {braid.axes = ["a", "b"]}
func.func @ring_order(%q: tensor<2x4x4x4xf32>, %k: tensor<2x4x2x4xf32>) -> tensor<2x4x4x4xf32> {
  // expected-error @+1 {{context-parallel attention over grid axes ["b", "a"] must list them in grid order}}
  %o = braid.attention %q, %k, %k causal {ring_axes = ["b", "a"]} : tensor<2x4x4x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32> -> tensor<2x4x4x4xf32>
  return %o : tensor<2x4x4x4xf32>
}

// -----

shard.grid @grid(shape = 2x2) {braid.axes = ["a", "b"]}
func.func @chunk_order(%x: tensor<2x8x16xf32>, %w: tensor<16x4xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{context_axes ["b", "a"] must list grid axes in grid order}}
  %y = braid.conv1d %x, %w {context_axes = ["b", "a"]} : tensor<2x8x16xf32>, tensor<16x4xf32> -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

shard.grid @grid(shape = 2) {braid.axes = ["cp"]}
func.func @zigzag(%q: tensor<1x3x2x4xf32>, %k: tensor<1x6x2x4xf32>) -> tensor<1x3x2x4xf32> {
  // expected-error @+1 {{a sequence of 6 positions in zigzag order over 2 ranks needs a multiple of 4}}
  %o = braid.attention %q, %k, %k causal {query_offset_axes = ["cp"], sequence_zigzag = 2 : i64} : tensor<1x3x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32> -> tensor<1x3x2x4xf32>
  return %o : tensor<1x3x2x4xf32>
}

// -----

func.func @no_grid(%l: tensor<2x8xf32>, %t: tensor<2xi32>) -> tensor<f32> {
  // expected-error @+1 {{names grid axes but the module has no shard.grid}}
  %loss = braid.cross_entropy %l, %t {vocab_axes = ["tp"]} : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
func.func @positions(%tok: tensor<1x2xi32>, %wte: tensor<4x4xf32>, %wpe: tensor<2x4xf32>) -> tensor<1x2x4xf32> {
  // expected-error @+1 {{a vocabulary-parallel embedding has no position table (partitioning adds positions with braid.bias_add)}}
  %h = braid.embedding %tok, %wte positions %wpe {vocab_axes = ["tp"]} : tensor<1x2xi32>, tensor<4x4xf32>, tensor<2x4xf32> -> tensor<1x2x4xf32>
  return %h : tensor<1x2x4xf32>
}

// -----

shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
braid.param @b zeros : tensor<5xf32>
func.func @zero_divisible(%g: tensor<5xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{a ZeRO update needs the parameter's 5 elements divisible by the 2 ranks of its zero_axes}}
  braid.sgd_update @b, %g, %c {lr = 1.0 : f64, weight_decay = 0.0 : f64, zero_axes = ["dp"]} : tensor<5xf32>, tensor<f32>
  return
}

// -----

shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
braid.param @b zeros : tensor<8xf32>
func.func @zero_order(%g: tensor<8xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{zero_axes must list grid axes in grid order (the communicator's rank order, in which the parameter is all-gathered)}}
  braid.sgd_update @b, %g, %c {lr = 1.0 : f64, weight_decay = 0.0 : f64, zero_axes = ["tp", "dp"]} : tensor<8xf32>, tensor<f32>
  return
}

// -----

shard.grid @grid(shape = 2) {braid.axes = ["dp"]}
braid.param @b zeros : tensor<8xf32>
func.func @zero_grad(%g: tensor<2xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{the gradient of a ZeRO update is the whole parameter (8 elements) or this rank's range (4), not 2}}
  braid.sgd_update @b, %g, %c {lr = 1.0 : f64, weight_decay = 0.0 : f64, zero_axes = ["dp"]} : tensor<2xf32>, tensor<f32>
  return
}
