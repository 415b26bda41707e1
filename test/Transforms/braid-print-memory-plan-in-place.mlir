// RUN: braid-opt %s --braid-print-memory-plan -o /dev/null | FileCheck %s

// A fused elementwise group writes its result in place of an operand of the
// result's type that it reads for the last time: gradient accumulation adds
// into one buffer. Not in place: an operand read later, an operand a
// transfer still reads (until its wait), a result the caller holds.

// The sum of three gradients (one fused group %s1, %s2 at %s2, which reads
// %g0 for the last time): computed in place of %g0 (one buffer, named after
// %g0, live from %g0 to the loss); %g1 and %g2 have their own.
// CHECK-LABEL: func @accumulate frame_bytes 768
// CHECK-DAG:   buffer g0 offset {{[0-9]+}} bytes 256 live 0..5
// CHECK-DAG:   buffer g1 offset {{[0-9]+}} bytes 256 live 1..4
// CHECK-DAG:   buffer g2 offset {{[0-9]+}} bytes 256 live 3..4
// CHECK-NOT:   buffer s

// %x is read again after %y (by %z): %y has a buffer of its own, which %s
// takes over (live to %q). %t cannot take %z's: the all-reduce reads %z
// until its wait. %r and %q are the caller's.
// CHECK-LABEL: func @kept frame_bytes
// CHECK-DAG:   buffer x offset {{[0-9]+}} bytes 256 live 0..2
// CHECK-DAG:   buffer y offset {{[0-9]+}} bytes 256 live 1..9
// CHECK-DAG:   buffer z offset {{[0-9]+}} bytes 256 live 2..5
// CHECK-DAG:   buffer t offset {{[0-9]+}} bytes 256 live 4..8
// CHECK-DAG:   buffer v offset {{[0-9]+}} bytes 256 live 6..6
// CHECK-DAG:   buffer u offset {{[0-9]+}} bytes 256 live 7..7
// CHECK-NOT:   buffer s
// CHECK-NOT:   buffer r
// CHECK-NOT:   buffer q

// A transfer writes its result until its wait, read or not: the unread
// gather stays live until then, and %h cannot take its place.
// CHECK-LABEL: func @unread frame_bytes 768
// CHECK-DAG:   buffer g.0 offset {{[0-9]+}} bytes 512 live 0..2
// CHECK-DAG:   buffer h offset {{[0-9]+}} bytes 256 live 1..3

module {
  shard.grid @grid(shape = 2) {braid.axes = ["dp"]}
  braid.param @w normal(0.02) : tensor<8x8xf32>

  func.func private @accumulate(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<f32> {
    %g0 = braid.linear %x, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> loc("g0")
    %g1 = braid.linear %x, %w transpose_weight : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> loc("g1")
    %s1 = braid.add %g0, %g1 : tensor<8x8xf32> loc("s1")
    %g2 = braid.linear %x, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> loc("g2")
    %s2 = braid.add %s1, %g2 : tensor<8x8xf32> loc("s2")
    %l = braid.sum_squares %s2 : tensor<8x8xf32> -> tensor<f32> loc("l")
    return %l : tensor<f32>
  }

  func.func private @kept(%in: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    %x = braid.linear %in, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> loc("x")
    %y = braid.neg %x : tensor<8x8xf32> loc("y")
    %z = braid.linear %x, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> loc("z")
    %r, %token = dist.all_reduce %z on @grid grid_axes = [0] reduction = sum : tensor<8x8xf32> -> tensor<8x8xf32> loc("r")
    %t = braid.neg %z : tensor<8x8xf32> loc("t")
    dist.wait %token
    // Second uses keep %y and %t out of %s's fused group.
    %v = braid.linear %y, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> loc("v")
    %u = braid.linear %t, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> loc("u")
    %s = braid.add %y, %t : tensor<8x8xf32> loc("s")
    %q = braid.linear %s, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> loc("q")
    return %r, %q : tensor<8x8xf32>, tensor<8x8xf32>
  }

  func.func private @unread(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %g, %t = dist.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<8x8xf32> -> tensor<16x8xf32> loc("g")
    %h = braid.linear %x, %x : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> loc("h")
    dist.wait %t
    %q = braid.linear %h, %x : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> loc("q")
    return %q : tensor<8x8xf32>
  }

  func.func @step(%tok: tensor<8xi32>) -> tensor<f32> {
    %w = braid.get_param @w : tensor<8x8xf32>
    %l = func.call @accumulate(%w, %w) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<f32>
    %r, %q = func.call @kept(%w, %w) : (tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>)
    %u = func.call @unread(%w) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %l : tensor<f32>
  }
}
