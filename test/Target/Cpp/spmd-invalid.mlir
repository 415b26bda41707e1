// RUN: braid-translate --braid-to-cpp %s -split-input-file -verify-diagnostics -o /dev/null

// What an SPMD program needs from its grid, shardings and partitioned ops.

module attributes {braid.model = {name = "m", family = "gpt", vocab = 8 : i64}} {
  // expected-error @+1 {{the runtime needs the grid's axes named: braid.axes = [...] with 2 non-empty strings}}
  shard.grid @grid(shape = 2x2)
  func.func @step(%l: tensor<2x8xf32>, %t: tensor<2xi32>) -> tensor<f32> {
    %loss = braid.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module attributes {braid.model = {name = "m", family = "gpt", vocab = 8 : i64}} {
  // expected-error @+1 {{a program runs on one device grid; the module declares several}}
  shard.grid @grid(shape = 2) {braid.axes = ["dp"]}
  shard.grid @other(shape = 2) {braid.axes = ["tp"]}
  func.func @step(%l: tensor<2x8xf32>, %t: tensor<2xi32>) -> tensor<f32> {
    %loss = braid.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module attributes {braid.model = {name = "m", family = "gpt", vocab = 8 : i64}} {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  // expected-error @+1 {{local size 4 of dimension 0 is not ceil(9 / 2) for global size 9 split over 2 ranks}}
  braid.param @w normal(0.02) {braid.global_shape = array<i64: 9, 4>, braid.split = [["tp"], []]} : tensor<4x4xf32>
  func.func @step(%l: tensor<2x8xf32>, %t: tensor<2xi32>) -> tensor<f32> {
    %loss = braid.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module attributes {braid.model = {name = "m", family = "gpt", vocab = 8 : i64}} {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  // expected-error @+1 {{braid.split: "pp" is not an axis of grid @grid}}
  braid.param @w normal(0.02) {braid.global_shape = array<i64: 8, 4>, braid.split = [["pp"], []]} : tensor<4x4xf32>
  func.func @step(%l: tensor<2x8xf32>, %t: tensor<2xi32>) -> tensor<f32> {
    %loss = braid.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module attributes {braid.model = {name = "m", family = "gpt", vocab = 8 : i64}} {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  // expected-error @+1 {{a sharded tensor of type 'tensor<4x4xf32>' needs braid.global_shape = array<i64: ...> and braid.split = [[axes], ...] with one entry per dimension}}
  braid.param @w normal(0.02) {braid.split = [["tp"], []]} : tensor<4x4xf32>
  func.func @step(%l: tensor<2x8xf32>, %t: tensor<2xi32>) -> tensor<f32> {
    %loss = braid.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module attributes {braid.model = {name = "m", family = "gpt", vocab = 8 : i64}} {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  func.func @step(%l: tensor<2x8xf32>, %t: tensor<2xi32>) -> tensor<f32> {
    // A shard transfer the dist lowering has not made a dist op.
    // expected-error @+1 {{a transfer reaches the emitter as a dist op: run --convert-braid-to-dist first}}
    %p = shard.all_reduce %l on @grid grid_axes = [1] : tensor<2x8xf32> -> tensor<2x8xf32>
    %loss = braid.cross_entropy %p, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// expected-error @+1 {{braid.zigzag_axis 'sp' is not an axis of the program's grid}}
module attributes {braid.model = {name = "m", family = "llama", vocab = 8 : i64}, braid.zigzag_axis = "sp"} {
  shard.grid @grid(shape = 2) {braid.axes = ["cp"]}
  func.func @step(%l: tensor<2x8xf32>, %t: tensor<2xi32>) -> tensor<f32> {
    %loss = braid.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A partitioned op the lowering to dist expands reaches the emitter only
// through it.
module attributes {braid.model = {name = "m", family = "llama", vocab = 8 : i64}} {
  shard.grid @grid(shape = 2) {braid.axes = ["cp"]}
  func.func @step(%l: tensor<2x8xf32>, %t: tensor<2xi32>) -> tensor<f32> {
    // expected-error @+1 {{'braid.cross_entropy' carries vocab_axes, which --convert-braid-to-dist expands: run it first}}
    %loss = braid.cross_entropy %l, %t {vocab_axes = ["cp"]} : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module attributes {braid.model = {name = "m", family = "gpt", vocab = 8 : i64}} {
  shard.grid @grid(shape = 2) {braid.axes = ["dp"]}
  braid.param @b zeros : tensor<8xf32>
  func.func @step(%l: tensor<2x8xf32>, %t: tensor<2xi32>, %g: tensor<8xf32>, %c: tensor<f32>) -> tensor<f32> {
    %loss = braid.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    // expected-error @+1 {{'braid.sgd_update' carries zero_axes, which --convert-braid-to-dist expands: run it first}}
    braid.sgd_update @b, %g, %c {lr = 1.0 : f64, weight_decay = 0.0 : f64, zero_axes = ["dp"]} : tensor<8xf32>, tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The emitter prints an index a piece takes as an expression of the rank's
// coordinates, from the arithmetic it knows.
module attributes {braid.model = {name = "m", family = "gpt", vocab = 8 : i64}} {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @step(%tok: tensor<2xi32>, %t: tensor<2xi32>, %wte: tensor<4x8xf32>) -> tensor<f32> {
    %c = dist.coordinate on @grid grid_axes = [0] : index
    %four = arith.constant 4 : index
    // expected-error @+1 {{the emitter computes indices with addi, subi, muli, divui and remui, not arith.divsi}}
    %off = arith.divsi %c, %four : index
    %e = braid.embedding_shard %tok, %wte at %off : tensor<2xi32>, tensor<4x8xf32> -> tensor<2x8xf32>
    %loss = braid.cross_entropy %e, %t : tensor<2x8xf32>, tensor<2xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
