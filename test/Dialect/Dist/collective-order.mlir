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

// -----

// Point to point: each stage receives its neighbour's transfers in the order
// the neighbour sends them (tags 1 then 2 forward, 3 back), as NCCL, which has
// no tags, matches them; a send and a receive of one stage may interleave.
module attributes {braid.pipeline_entries = [@s0, @s1]} {
  shard.grid @grid(shape = 2) {braid.axes = ["pp"]}
  func.func @s0(%x: tensor<4xf32>, %y: tensor<8xf32>) -> tensor<4xf32> {
    %t1 = dist.send %x to 1 on @grid grid_axes = [0] tag = 1 : tensor<4xf32>
    %g, %t3 = dist.recv from 1 on @grid grid_axes = [0] tag = 3 : tensor<4xf32>
    %t2 = dist.send %y to 1 on @grid grid_axes = [0] tag = 2 : tensor<8xf32>
    dist.wait %t1, %t2, %t3
    return %g : tensor<4xf32>
  }
  func.func @s1(%x: tensor<4xf32>) -> tensor<8xf32> {
    %a, %t1 = dist.recv from 0 on @grid grid_axes = [0] tag = 1 : tensor<4xf32>
    %b, %t2 = dist.recv from 0 on @grid grid_axes = [0] tag = 2 : tensor<8xf32>
    %t3 = dist.send %x to 0 on @grid grid_axes = [0] tag = 3 : tensor<4xf32>
    dist.wait %t1, %t2, %t3
    return %b : tensor<8xf32>
  }
}

// -----

// Stage 1 receives tag 2 before tag 1: right over MPI, which matches by tag;
// over NCCL the first send's data would land in the second receive.
module attributes {braid.pipeline_entries = [@s0, @s1]} {
  shard.grid @grid(shape = 2) {braid.axes = ["pp"]}
  func.func @s0(%x: tensor<4xf32>, %y: tensor<4xf32>) {
    // expected-note @+1 {{@s0's transfer #0}}
    %t1 = dist.send %x to 1 on @grid grid_axes = [0] tag = 1 : tensor<4xf32>
    %t2 = dist.send %y to 1 on @grid grid_axes = [0] tag = 2 : tensor<4xf32>
    dist.wait %t1, %t2
    return
  }
  func.func @s1() -> tensor<4xf32> {
    // expected-error @+1 {{transfer #0 that pipeline stage @s1 receives from @s0 is a receive of tag 2 (tensor<4xf32>), where @s0's transfer #0 to it is a send of tag 1 (tensor<4xf32>): NCCL matches a pair's transfers in issue order}}
    %b, %t2 = dist.recv from 0 on @grid grid_axes = [0] tag = 2 : tensor<4xf32>
    %a, %t1 = dist.recv from 0 on @grid grid_axes = [0] tag = 1 : tensor<4xf32>
    dist.wait %t1, %t2
    return %a : tensor<4xf32>
  }
}

// -----

// A send its peer never receives.
module attributes {braid.pipeline_entries = [@s0, @s1]} {
  shard.grid @grid(shape = 2) {braid.axes = ["pp"]}
  func.func @s0(%x: tensor<4xf32>) {
    // expected-error @+1 {{pipeline stage @s0 sends 1 tensors to @s1, which receives 0 from it: its send of tag 5 (tensor<4xf32>) is never received}}
    %t = dist.send %x to 1 on @grid grid_axes = [0] tag = 5 : tensor<4xf32>
    dist.wait %t
    return
  }
  func.func @s1() {
    return
  }
}

// -----

// A receive from a stage that sends nothing.
module attributes {braid.pipeline_entries = [@s0, @s1]} {
  shard.grid @grid(shape = 2) {braid.axes = ["pp"]}
  func.func @s0() -> tensor<4xf32> {
    // expected-error @+1 {{pipeline stage @s0 receives 1 tensors from @s1, which sends it none}}
    %a, %t = dist.recv from 1 on @grid grid_axes = [0] tag = 5 : tensor<4xf32>
    dist.wait %t
    return %a : tensor<4xf32>
  }
  func.func @s1() {
    return
  }
}
