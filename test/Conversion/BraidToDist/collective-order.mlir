// RUN: braid-opt %s --dist-check-collective-order -split-input-file -verify-diagnostics -o /dev/null

// Pipeline stages that issue their shared groups' collectives in one order
// pass; collectives over dp alone (within a stage) may differ.
module attributes {braid.pipeline_entries = [@s0, @s1]} {
  shard.grid @grid(shape = 2x2) {braid.axes = ["pp", "dp"]}
  func.func private @chunk(%x: tensor<8xf32>) -> tensor<8xf32> {
    %y, %t = dist.all_reduce %x on @grid grid_axes = [0, 1] reduction = sum : tensor<8xf32> -> tensor<8xf32>
    dist.wait %t
    return %y : tensor<8xf32>
  }
  func.func @s0(%x: tensor<4xf32>, %z: tensor<8xf32>) -> tensor<8xf32> {
    %a, %ta = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    dist.wait %ta
    %d, %td = dist.all_reduce %z on @grid grid_axes = [1] reduction = sum : tensor<8xf32> -> tensor<8xf32>
    dist.wait %td
    %c = func.call @chunk(%d) : (tensor<8xf32>) -> tensor<8xf32>
    return %c : tensor<8xf32>
  }
  func.func @s1(%x: tensor<4xf32>, %z: tensor<8xf32>) -> tensor<8xf32> {
    %a, %ta = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    dist.wait %ta
    %c = func.call @chunk(%z) : (tensor<8xf32>) -> tensor<8xf32>
    return %c : tensor<8xf32>
  }
}

// -----

// Swapped: stage 0 all-reduces 4 then 8 elements over pp, stage 1 8 then 4.
// Each stage's ranks wait in their first collective for the other's.
module attributes {braid.pipeline_entries = [@s0, @s1]} {
  shard.grid @grid(shape = 2) {braid.axes = ["pp"]}
  func.func @s0(%x: tensor<4xf32>, %z: tensor<8xf32>) -> tensor<4xf32> {
    // expected-note @+1 {{@s0's collective #0}}
    %a, %ta = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    dist.wait %ta
    %b, %tb = dist.all_reduce %z on @grid grid_axes = [0] reduction = sum : tensor<8xf32> -> tensor<8xf32>
    dist.wait %tb
    return %a : tensor<4xf32>
  }
  func.func @s1(%x: tensor<4xf32>, %z: tensor<8xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{collective #0 over pp of pipeline stage @s1 is an all_reduce of 8 elements, where @s0 issues an all_reduce of 4 elements: the ranks of the group would wait forever}}
    %b, %tb = dist.all_reduce %z on @grid grid_axes = [0] reduction = sum : tensor<8xf32> -> tensor<8xf32>
    dist.wait %tb
    %a, %ta = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    dist.wait %ta
    return %a : tensor<4xf32>
  }
}

// -----

// One stage issues a collective over the pipeline that the other does not.
// expected-error @+1 {{pipeline stage @s1 issues 0 collectives over pp, @s0 1: the ranks of the group would wait forever}}
module attributes {braid.pipeline_entries = [@s0, @s1]} {
  shard.grid @grid(shape = 2) {braid.axes = ["pp"]}
  func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-note @+1 {{@s0 issues its all_reduce of 4 elements here}}
    %a, %ta = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    dist.wait %ta
    return %a : tensor<4xf32>
  }
  func.func @s1(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
