// RUN: braid-opt %s --braid-print-memory-plan -o /dev/null | FileCheck %s

// Parameters, inputs and the loss are persistent; a layer function is a
// frame planned once; each call reserves it inside the caller's frame.
// Reshapes alias their input, the fused silu*h is stored once, and a value
// returned by a function lives in the caller's buffer.

// CHECK:      arena_bytes: 3840
// CHECK-NEXT: persistent_bytes: 2560
// CHECK-NEXT: param @wte offset 0 bytes 320
// CHECK-NEXT: param @l0.up offset 320 bytes 512
// CHECK-NEXT: param @l0.down offset 832 bytes 512
// CHECK-NEXT: param @l1.up offset 1344 bytes 512
// CHECK-NEXT: param @l1.down offset 1856 bytes 512
// CHECK-NEXT: input #0 offset 2368 bytes 32
// CHECK-NEXT: input #1 offset 2432 bytes 32
// CHECK-NEXT: loss offset 2496 bytes 4

// The fused group silu*h executes at %m and reads %h there for the last
// time: %m is written in place of %h (one buffer, named after %h, live from
// %h to %y). %g is inside the group and has no buffer; %r is the caller's.
// CHECK-NEXT: func @mlp frame_bytes 768
// CHECK-NEXT:   buffer h offset 0 bytes 512 live 0..3
// CHECK-NEXT:   buffer y offset 512 bytes 256 live 3..4
// CHECK-NOT:    buffer m
// CHECK-NOT:    buffer g
// CHECK-NOT:    buffer r

// The 4-D view of %h0 shares its buffer; both calls place @mlp's frame at 0,
// below the values live across them.
// CHECK-NEXT: func @step frame_bytes 1280
// CHECK-DAG:    buffer h0 offset 768 bytes 256 live 1..6
// CHECK-DAG:    buffer h1 offset 1024 bytes 256 live 6..9
// CHECK-DAG:    buffer h2 offset 768 bytes 256 live 9..10
// CHECK-DAG:    buffer logits offset 0 bytes 320 live 10..11
// CHECK:        call @mlp at 6 frame_offset 0
// CHECK-NEXT:   call @mlp at 9 frame_offset 0

module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  braid.param @l0.up normal(0.02) : tensor<8x16xf32>
  braid.param @l0.down normal(0.02) : tensor<16x8xf32>
  braid.param @l1.up normal(0.02) : tensor<8x16xf32>
  braid.param @l1.down normal(0.02) : tensor<16x8xf32>

  func.func private @mlp(%x: tensor<2x4x8xf32>, %up: tensor<8x16xf32>, %down: tensor<16x8xf32>) -> tensor<2x4x8xf32> {
    %h = braid.linear %x, %up : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32> loc("h")
    %g = braid.silu %h : tensor<2x4x16xf32> loc("g")
    %m = braid.mul %g, %h : tensor<2x4x16xf32> loc("m")
    %y = braid.linear %m, %down : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32> loc("y")
    %r = braid.add %x, %y : tensor<2x4x8xf32> loc("r")
    return %r : tensor<2x4x8xf32>
  }

  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32> loc("h0")
    %view = braid.reshape %h0 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32> loc("view")
    %flat = braid.reshape %view : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32> loc("flat")
    %u0 = braid.get_param @l0.up : tensor<8x16xf32>
    %d0 = braid.get_param @l0.down : tensor<16x8xf32>
    %h1 = func.call @mlp(%flat, %u0, %d0) : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32> loc("h1")
    %u1 = braid.get_param @l1.up : tensor<8x16xf32>
    %d1 = braid.get_param @l1.down : tensor<16x8xf32>
    %h2 = func.call @mlp(%h1, %u1, %d1) : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32> loc("h2")
    %logits = braid.linear %h2, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32> loc("logits")
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
