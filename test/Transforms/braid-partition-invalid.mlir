// RUN: braid-opt --braid-partition="grid=dp=2,tp=2 plan=data" -split-input-file -verify-diagnostics %s
// RUN: not braid-opt --braid-partition="grid=sp=2" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not braid-opt --braid-partition="grid=dp=0" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not braid-opt --braid-partition="grid=dp=2,dp=2" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not braid-opt --braid-partition="grid=dp=2 sequence-parallel=true" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=SP
// RUN: not braid-opt --braid-partition="grid=dp=2 zero=4" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not braid-opt --braid-partition="grid=dp=2 plan=alpa" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: not braid-opt --braid-partition="zero=7" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=ZERO1
// RUN: not braid-opt --braid-partition="grid=dp=1 plan=alpa" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: braid-opt --braid-partition="grid=dp=2" %S/braid-partition.mlir | not braid-opt --braid-partition="grid=dp=2" 2>&1 | FileCheck %s --check-prefix=AGAIN
// RUN: braid-opt --braid-partition="grid=tp=3" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=SHAPE

// AXIS: error: --braid-partition: unknown grid axis 'sp' (the axes are pp, dp, ep, cp and tp)
// SIZE: error: --braid-partition: grid axis 'dp=0' must be NAME=SIZE with SIZE >= 1
// TWICE: error: --braid-partition: grid axis 'dp' appears twice
// SP: error: --braid-partition: sequence parallelism needs a tp axis
// ZERO: error: --braid-partition: zero must be 0, 1, 2 or 3, found 4
// PLAN: for the --plan option: expected megatron or data, found 'alpa'
// ZERO1: error: --braid-partition: zero must be 0, 1, 2 or 3, found 7
// AGAIN: error: --braid-partition: the module is already partitioned
// SHAPE: warning: the megatron plan keeps this linear's weight whole: tp=3 does not divide every dimension its output is tied to (e.g. fewer key/value heads), so each tp rank computes all of it

module attributes {braid.model = {name = "mlp", family = "llama", vocab = 10 : i64, hidden = 8 : i64}} {
  shard.grid @grid(shape = 2x2)
  braid.param @wte normal(2.000000e-02) : tensor<10x8xf32>
  braid.param @l0.norm ones : tensor<8xf32>
  braid.param @l0.up normal(2.000000e-02) : tensor<8x16xf32>
  braid.param @l0.down normal(2.000000e-02) : tensor<16x8xf32>
  braid.param @l1.norm ones : tensor<8xf32>
  braid.param @l1.up normal(2.000000e-02) : tensor<8x16xf32>
  braid.param @l1.down normal(2.000000e-02) : tensor<16x8xf32>
  func.func private @layer(%x: tensor<4x6x8xf32>, %norm: tensor<8xf32>, %up: tensor<8x16xf32>, %down: tensor<16x8xf32>) -> tensor<4x6x8xf32> {
    %n = braid.rms_norm %x, %norm : tensor<4x6x8xf32>, tensor<8xf32> -> tensor<4x6x8xf32>
    %h = braid.linear %n, %up : tensor<4x6x8xf32>, tensor<8x16xf32> -> tensor<4x6x16xf32>
    %a = braid.gelu %h : tensor<4x6x16xf32>
    %y = braid.linear %a, %down : tensor<4x6x16xf32>, tensor<16x8xf32> -> tensor<4x6x8xf32>
    %r = braid.add %x, %y : tensor<4x6x8xf32>
    return %r : tensor<4x6x8xf32>
  }
  func.func @step(%tokens: tensor<4x6xi32>, %labels: tensor<4x6xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tokens, %wte : tensor<4x6xi32>, tensor<10x8xf32> -> tensor<4x6x8xf32>
    %n0 = braid.get_param @l0.norm : tensor<8xf32>
    %u0_read = braid.get_param @l0.up : tensor<8x16xf32>
    %column = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
    // expected-note @below {{but the annotation of @l0.up keeps it whole (the two dimensions are tied by the ops between them)}}
    %u0 = shard.shard %u0_read to %column : tensor<8x16xf32>
    %d0 = braid.get_param @l0.down : tensor<16x8xf32>
    %h1 = func.call @layer(%h0, %n0, %u0, %d0) : (tensor<4x6x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x6x8xf32>
    %n1 = braid.get_param @l1.norm : tensor<8xf32>
    %u1_read = braid.get_param @l1.up : tensor<8x16xf32>
    %rows = shard.sharding @grid split_axes = [[1]] : !shard.sharding
    // expected-error @below {{conflicting shardings of dimension 0: the annotation of @l1.up splits it over tp}}
    %u1 = shard.shard %u1_read to %rows : tensor<8x16xf32>
    %d1 = braid.get_param @l1.down : tensor<16x8xf32>
    %h2 = func.call @layer(%h1, %n1, %u1, %d1) : (tensor<4x6x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x6x8xf32>
    %logits = braid.linear %h2, %wte transpose_weight : tensor<4x6x8xf32>, tensor<10x8xf32> -> tensor<4x6x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<4x6x10xf32>, tensor<4x6xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module attributes {braid.model = {name = "mlp", family = "llama", vocab = 10 : i64, hidden = 8 : i64}} {
  braid.param @wte normal(2.000000e-02) : tensor<10x8xf32>
  braid.param @l0.norm ones : tensor<8xf32>
  braid.param @l0.up normal(2.000000e-02) : tensor<8x16xf32>
  braid.param @l0.down normal(2.000000e-02) : tensor<16x8xf32>
  braid.param @l1.norm ones : tensor<8xf32>
  braid.param @l1.up normal(2.000000e-02) : tensor<8x16xf32>
  braid.param @l1.down normal(2.000000e-02) : tensor<16x8xf32>
  func.func private @layer(%x: tensor<3x6x8xf32>, %norm: tensor<8xf32>, %up: tensor<8x16xf32>, %down: tensor<16x8xf32>) -> tensor<3x6x8xf32> {
    %n = braid.rms_norm %x, %norm : tensor<3x6x8xf32>, tensor<8xf32> -> tensor<3x6x8xf32>
    %h = braid.linear %n, %up : tensor<3x6x8xf32>, tensor<8x16xf32> -> tensor<3x6x16xf32>
    %a = braid.gelu %h : tensor<3x6x16xf32>
    %y = braid.linear %a, %down : tensor<3x6x16xf32>, tensor<16x8xf32> -> tensor<3x6x8xf32>
    %r = braid.add %x, %y : tensor<3x6x8xf32>
    return %r : tensor<3x6x8xf32>
  }
  // expected-error @below {{the batch (3) of input #0 is not a multiple of dp (2 ranks)}}
  func.func @step(%tokens: tensor<3x6xi32>, %labels: tensor<3x6xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tokens, %wte : tensor<3x6xi32>, tensor<10x8xf32> -> tensor<3x6x8xf32>
    %n0 = braid.get_param @l0.norm : tensor<8xf32>
    %u0 = braid.get_param @l0.up : tensor<8x16xf32>
    %d0 = braid.get_param @l0.down : tensor<16x8xf32>
    %h1 = func.call @layer(%h0, %n0, %u0, %d0) : (tensor<3x6x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<3x6x8xf32>
    %n1 = braid.get_param @l1.norm : tensor<8xf32>
    %u1 = braid.get_param @l1.up : tensor<8x16xf32>
    %d1 = braid.get_param @l1.down : tensor<16x8xf32>
    %h2 = func.call @layer(%h1, %n1, %u1, %d1) : (tensor<3x6x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<3x6x8xf32>
    %logits = braid.linear %h2, %wte transpose_weight : tensor<3x6x8xf32>, tensor<10x8xf32> -> tensor<3x6x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<3x6x10xf32>, tensor<3x6xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2x2)
  braid.param @w normal(2.000000e-02) : tensor<8x6xf32>
  func.func @step(%x: tensor<4x6x8xf32>) -> tensor<4x6x6xf32> {
    // expected-error @below {{cannot split dimension 1 of 'tensor<8x6xf32>' over dp,tp (4 ranks): 6 is not a multiple of 4 (only vocabularies are padded)}}
    %w_read = braid.get_param @w : tensor<8x6xf32>
    %s = shard.sharding @grid split_axes = [[], [0, 1]] : !shard.sharding
    %w = shard.shard %w_read to %s : tensor<8x6xf32>
    %y = braid.linear %x, %w : tensor<4x6x8xf32>, tensor<8x6xf32> -> tensor<4x6x6xf32>
    return %y : tensor<4x6x6xf32>
  }
}
// -----

module {
  shard.grid @grid(shape = 2x2)
  // expected-error @below {{a second grid: Braid partitions a program over one grid (@grid)}}
  shard.grid @other(shape = 4)
  braid.param @w normal(2.000000e-02) : tensor<8x8xf32>
  func.func @step(%x: tensor<4x6x8xf32>) -> tensor<4x6x8xf32> {
    %w_read = braid.get_param @w : tensor<8x8xf32>
    %s = shard.sharding @other split_axes = [[0]] : !shard.sharding
    %w = shard.shard %w_read to %s : tensor<8x8xf32>
    %y = braid.linear %x, %w : tensor<4x6x8xf32>, tensor<8x8xf32> -> tensor<4x6x8xf32>
    return %y : tensor<4x6x8xf32>
  }
}
// -----

// An ungrouped dispatch has one capacity group of all its tokens: splitting
// them over dp would change which tokens are dropped.
module {
  func.func @step(%x: tensor<8x4xf32>, %i: tensor<8x2xi32>, %w: tensor<8x2xf32>) -> tensor<8x4xf32> {
    // expected-error @+1 {{splitting 8 tokens into shards of 4 would cut its one capacity group (no group_size): N ranks would drop other tokens than one rank}}
    %d = braid.dispatch %x, %i : tensor<8x4xf32>, tensor<8x2xi32> -> tensor<3x12x4xf32>
    %y = braid.combine %d, %w, %i : tensor<3x12x4xf32>, tensor<8x2xf32>, tensor<8x2xi32> -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}

// -----

// Capacity groups of 8 tokens over dp=2: shards of 4 tokens cut them.
module {
  func.func @step(%x: tensor<8x4xf32>, %i: tensor<8x2xi32>, %w: tensor<8x2xf32>) -> tensor<8x4xf32> {
    // expected-error @+1 {{shards of 4 tokens cut its capacity groups of 8 tokens}}
    %d = braid.dispatch %x, %i group_size 8 : tensor<8x4xf32>, tensor<8x2xi32> -> tensor<3x12x4xf32>
    %y = braid.combine %d, %w, %i group_size 8 : tensor<3x12x4xf32>, tensor<8x2xf32>, tensor<8x2xi32> -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}
