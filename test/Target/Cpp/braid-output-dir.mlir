// RUN: braid-opt %s --braid-training-pipeline="grid=pp=2,dp=2 microbatches=2" -o %t.pp.mlir
// RUN: rm -rf %t.dir && braid-translate --braid-to-cpp --braid-output-dir=%t.dir %t.pp.mlir -o %t.stdout
// RUN: ls %t.dir | FileCheck %s --check-prefix=FILES
// RUN: FileCheck %s --check-prefix=PP0 --input-file=%t.dir/step.pp0.cpp
// RUN: FileCheck %s --check-prefix=PP1 --input-file=%t.dir/step.pp1.cpp
// RUN: count 0 < %t.stdout
// Each program is the one --braid-program emits, byte for byte.
// RUN: braid-translate --braid-to-cpp --braid-program=step.pp0 %t.pp.mlir -o %t.pp0.cpp
// RUN: diff %t.pp0.cpp %t.dir/step.pp0.cpp
// RUN: braid-translate --braid-to-cpp --braid-program=step.pp1 %t.pp.mlir -o %t.pp1.cpp
// RUN: diff %t.pp1.cpp %t.dir/step.pp1.cpp
// A module of one program: its entry point's name.
// RUN: braid-opt %s --braid-training-pipeline -o %t.one.mlir
// RUN: rm -rf %t.one && braid-translate --braid-to-cpp --braid-output-dir=%t.one %t.one.mlir
// RUN: ls %t.one | FileCheck %s --check-prefix=ONE
// RUN: braid-translate --braid-to-cpp %t.one.mlir -o %t.one.cpp
// RUN: diff %t.one.cpp %t.one/step.cpp

// --braid-output-dir emits every program of a pipelined module from one
// parse, one file per rank named after its step function. Every rank creates
// the communicators any rank uses, in one order; the lowest rank holding the
// tied embedding dumps it, the other mirrors it.
// FILES: step.pp0.cpp
// FILES-NEXT: step.pp1.cpp
// FILES-NOT: .cpp

// PP0: void fn_step_pp0(
// PP0: {"wte", BRAID_F32, 2, kShape0, BRAID_INIT_NORMAL, 0.02, 0, 0},
// PP0: const char *const kCommGroups[] = {"dp", "pp", "pp,dp"};
// PP0: const braid_program kProgram = {{.*}}, "pp=2,dp=2", 3, kCommGroups, "pp", 0,

// PP1: void fn_step_pp1(
// PP1: {"wte", BRAID_F32, 2, kShape0, BRAID_INIT_NORMAL, 0.02, 0, 0, nullptr, nullptr, 1},
// PP1: const char *const kCommGroups[] = {"dp", "pp", "pp,dp"};
// PP1: const braid_program kProgram = {{.*}}, "pp=2,dp=2", 3, kCommGroups, "pp", 1,

// ONE: step.cpp
// ONE-NOT: .cpp

// A two-layer model with a tied embedding and LM head.
module attributes {braid.model = {name = "mlp", family = "llama", vocab = 10 : i64, hidden = 8 : i64}} {
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
    %u0 = braid.get_param @l0.up : tensor<8x16xf32>
    %d0 = braid.get_param @l0.down : tensor<16x8xf32>
    %h1 = func.call @layer(%h0, %n0, %u0, %d0) : (tensor<4x6x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x6x8xf32>
    %n1 = braid.get_param @l1.norm : tensor<8xf32>
    %u1 = braid.get_param @l1.up : tensor<8x16xf32>
    %d1 = braid.get_param @l1.down : tensor<16x8xf32>
    %h2 = func.call @layer(%h1, %n1, %u1, %d1) : (tensor<4x6x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x6x8xf32>
    %logits = braid.linear %h2, %wte transpose_weight : tensor<4x6x8xf32>, tensor<10x8xf32> -> tensor<4x6x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<4x6x10xf32>, tensor<4x6xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
