// RUN: braid-opt %s -split-input-file -verify-diagnostics

func.func @no_grid(%h: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op refers to no shard.grid named @grid}}
  dist.send %h to 1 on @grid grid_axes = [0] : tensor<4xf32>
  return
}

// -----

shard.grid @grid(shape = 2x2)
func.func @axis(%h: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op grid axis 2 is not an axis of @grid (rank 2)}}
  dist.send %h to 1 on @grid grid_axes = [2] : tensor<4xf32>
  return
}

// -----

shard.grid @grid(shape = 2x2)
func.func @peer() -> tensor<4xf32> {
  // expected-error @+1 {{'dist.recv' op peer 2 is not a coordinate of the 2 ranks along the grid axes}}
  %r = dist.recv from 2 on @grid grid_axes = [1] : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @no_axes() -> tensor<4xf32> {
  // expected-error @+1 {{'dist.recv' op needs at least one grid axis}}
  %r = dist.recv from 0 on @grid grid_axes = [] : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @count(%x: tensor<8x2xi32>) -> tensor<8x2xi32> {
  // expected-error @+1 {{'dist.microbatch' op count must be at least 1, found 0}}
  %r = dist.microbatch %x[0 of 0] : tensor<8x2xi32> -> tensor<8x2xi32>
  return %r : tensor<8x2xi32>
}

// -----

func.func @index(%x: tensor<8x2xi32>) -> tensor<2x2xi32> {
  // expected-error @+1 {{'dist.microbatch' op index 4 is not one of the 4 micro-batches}}
  %r = dist.microbatch %x[4 of 4] : tensor<8x2xi32> -> tensor<2x2xi32>
  return %r : tensor<2x2xi32>
}

// -----

func.func @divides(%x: tensor<6x2xi32>) -> tensor<1x2xi32> {
  // expected-error @+1 {{'dist.microbatch' op the leading dimension of 'tensor<6x2xi32>' must be a multiple of 4}}
  %r = dist.microbatch %x[0 of 4] : tensor<6x2xi32> -> tensor<1x2xi32>
  return %r : tensor<1x2xi32>
}

// -----

func.func @result(%x: tensor<8x2xi32>) -> tensor<2x4xi32> {
  // expected-error @+1 {{'dist.microbatch' op result must be 'tensor<2x2xi32>', found 'tensor<2x4xi32>'}}
  %r = dist.microbatch %x[0 of 4] : tensor<8x2xi32> -> tensor<2x4xi32>
  return %r : tensor<2x4xi32>
}
