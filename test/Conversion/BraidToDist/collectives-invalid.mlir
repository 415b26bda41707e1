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
