// RUN: braid-opt --braid-partition="grid=dp=2,tp=2 plan=data" %s | FileCheck %s
// RUN: braid-opt --braid-partition="grid=dp=1" %s | FileCheck %s --check-prefix=ONE
// RUN: braid-opt --braid-partition="grid=dp=2,tp=2 plan=data record-layouts=true" %s | FileCheck %s --check-prefix=LAYOUT
// RUN: braid-opt --braid-partition %s | FileCheck %s --check-prefix=ONE

// Shard-annotated input (upstream `shard` dialect): one annotation of one
// weight, and propagation completes the rest. The column split of @l0.up
// ties the MLP's inner dimension across both layer calls: @l1.up is
// column-split and both down projections row-split, with one all-reduce per
// layer; the annotation is consumed and the user's grid reused.

// record-layouts (what braid-run asks for, so that dumps of activations are
// global): each op records its results' place in the global tensors, a
// row-parallel product's output as partial over tp, its all-reduce's as
// whole over tp; the layer's values split over dp by the batch.
// LAYOUT-LABEL: func.func private @layer(
// LAYOUT: braid.linear %{{.*}}, %arg2 {braid.result_layouts = [{braid.global_shape = array<i64: 4, 6, 16>, braid.split = {{\[}}["dp"], [], ["tp"]]}]}
// LAYOUT: %[[P:.*]] = braid.linear %{{.*}}, %arg3 {braid.result_layouts = [{braid.global_shape = array<i64: 4, 6, 8>, braid.partial = ["tp"], braid.split = {{\[}}["dp"], [], []]}]}
// LAYOUT-NEXT: shard.all_reduce %[[P]] on @grid grid_axes = [1] {braid.result_layouts = [{braid.global_shape = array<i64: 4, 6, 8>, braid.split = {{\[}}["dp"], [], []]}]}

// On one rank (--verify's reference run of an annotated model) the program
// is the unpartitioned one: the annotations and the user's grid go.
// ONE-NOT: shard.
// ONE: func.func @step(
// ONE-NOT: shard.

// CHECK: shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
// CHECK-NOT: shard.grid
// CHECK: braid.param @wte normal(2.000000e-02) : tensor<10x8xf32>
// CHECK: braid.param @l0.up {{.*}}braid.split = {{\[}}[], ["tp"]]} : tensor<8x8xf32>
// CHECK: braid.param @l0.down {{.*}}braid.split = {{\[}}["tp"], []]} : tensor<8x8xf32>
// CHECK: braid.param @l1.up {{.*}}braid.split = {{\[}}[], ["tp"]]} : tensor<8x8xf32>
// CHECK: braid.param @l1.down {{.*}}braid.split = {{\[}}["tp"], []]} : tensor<8x8xf32>
// CHECK-LABEL: func.func private @layer(
// CHECK: %[[P:.*]] = braid.linear %{{.*}}, %arg3 : tensor<2x6x8xf32>, tensor<8x8xf32> -> tensor<2x6x8xf32>
// CHECK-NEXT: shard.all_reduce %[[P]] on @grid grid_axes = [1]
// CHECK-LABEL: func.func @step(
// CHECK-NOT: shard.shard
// CHECK-NOT: shard.sharding
// CHECK: return

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
    %u0 = shard.shard %u0_read to %column : tensor<8x16xf32>
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
