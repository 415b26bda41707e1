// RUN: braid-opt --braid-partition="grid=dp=2,tp=2" %s | FileCheck %s --check-prefix=DPTP
// RUN: braid-opt --braid-partition="grid=tp=2 sequence-parallel=true" %s | FileCheck %s --check-prefix=SP
// RUN: braid-opt --braid-partition="grid=dp=2 zero=3" %s | FileCheck %s --check-prefix=ZERO3
// RUN: braid-opt --braid-partition="grid=dp=2,tp=2 plan=data" %s | FileCheck %s --check-prefix=DATA
// RUN: braid-opt --braid-partition %s | FileCheck %s --check-prefix=NONE

// A two-layer model with a tied, vocabulary-parallel embedding and LM head.

// Megatron over tp, batch over dp: column- then row-parallel weights, one
// all-reduce per row-parallel output, the vocabulary split (10 over 2), the
// loss a partial sum over dp.
// DPTP: shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
// DPTP: braid.param @wte {{.*}} {braid.global_shape = array<i64: 10, 8>, braid.split = {{\[}}["tp"], []]} : tensor<5x8xf32>
// DPTP: braid.param @l0.norm ones : tensor<8xf32>
// DPTP: braid.param @l0.up {{.*}}braid.split = {{\[}}[], ["tp"]]} : tensor<8x8xf32>
// DPTP: braid.param @l0.down {{.*}}braid.split = {{\[}}["tp"], []]} : tensor<8x8xf32>
// DPTP-LABEL: func.func private @layer(
// DPTP-SAME: tensor<2x6x8xf32> {braid.global_shape = array<i64: 4, 6, 8>, braid.split = {{\[}}["dp"], [], []]}
// DPTP: braid.rms_norm {{.*}} -> tensor<2x6x8xf32>
// DPTP-NEXT: braid.linear {{.*}} : tensor<2x6x8xf32>, tensor<8x8xf32> -> tensor<2x6x8xf32>
// DPTP-NEXT: braid.gelu
// DPTP-NEXT: %[[DOWN:.*]] = braid.linear
// DPTP-NEXT: %[[SUM:.*]] = shard.all_reduce %[[DOWN]] on @grid grid_axes = [1]
// DPTP-NEXT: braid.add %arg0, %[[SUM]]
// DPTP-LABEL: func.func @step(
// DPTP-SAME: %arg0: tensor<2x6xi32> {braid.global_shape = array<i64: 4, 6>, braid.split = {{\[}}["dp"], []]}
// DPTP: %[[LOOKUP:.*]] = braid.embedding %arg0, %{{.*}} {vocab_axes = ["tp"]} : tensor<2x6xi32>, tensor<5x8xf32> -> tensor<2x6x8xf32>
// DPTP: %[[H0:.*]] = shard.all_reduce %[[LOOKUP]] on @grid grid_axes = [1]
// DPTP: call @layer(%[[H0]],
// DPTP: braid.linear {{.*}} transpose_weight : tensor<2x6x8xf32>, tensor<5x8xf32> -> tensor<2x6x5xf32>
// DPTP: %[[CE:.*]] = braid.cross_entropy {{.*}} {denominator = 24 : i64, vocab_axes = ["tp"], vocab_size = 10 : i64}
// DPTP: %[[LOSS:.*]] = shard.all_reduce %[[CE]] on @grid grid_axes = [0] : tensor<f32>
// DPTP: return %[[LOSS]]

// Sequence parallelism: the residual stream split along the sequence, gathered
// before the column-parallel linear, reduce-scattered after the row-parallel one.
// SP-LABEL: func.func private @layer(
// SP-SAME: tensor<4x3x8xf32> {braid.global_shape = array<i64: 4, 6, 8>, braid.split = {{\[}}[], ["tp"], []]}
// SP: %[[N:.*]] = braid.rms_norm {{.*}} -> tensor<4x3x8xf32>
// SP-NEXT: %[[G:.*]] = shard.all_gather %[[N]] on @grid grid_axes = [0] gather_axis = 1 : tensor<4x3x8xf32> -> tensor<4x6x8xf32>
// SP-NEXT: braid.linear %[[G]]
// SP: %[[P:.*]] = braid.linear
// SP-NEXT: %[[RS:.*]] = shard.reduce_scatter %[[P]] on @grid grid_axes = [0] scatter_axis = 1 : tensor<4x6x8xf32> -> tensor<4x3x8xf32>
// SP-NEXT: braid.add %arg0, %[[RS]] : tensor<4x3x8xf32>
// SP-LABEL: func.func @step(
// SP: %[[E:.*]] = braid.embedding {{.*}} {vocab_axes = ["tp"]}
// SP: shard.reduce_scatter %[[E]] on @grid grid_axes = [0] scatter_axis = 1
// SP: shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 1 : tensor<4x3x8xf32> -> tensor<4x6x8xf32>
// SP: braid.cross_entropy {{.*}} {vocab_axes = ["tp"], vocab_size = 10 : i64}

// ZeRO-3: every parameter stored split over dp (its first dimension dp
// divides) and gathered where it is read.
// ZERO3: braid.zero = 3
// ZERO3: braid.param @l0.norm ones {braid.global_shape = array<i64: 8>, braid.split = {{\[}}["dp"]]} : tensor<4xf32>
// ZERO3: braid.param @l0.up {{.*}}braid.split = {{\[}}["dp"], []]} : tensor<4x16xf32>
// ZERO3-LABEL: func.func private @layer(
// ZERO3: %[[G:.*]] = shard.all_gather %arg1 on @grid grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
// ZERO3-NEXT: braid.rms_norm %arg0, %[[G]]
// ZERO3-NEXT: shard.all_gather %arg2 on @grid grid_axes = [0] gather_axis = 0 : tensor<4x16xf32> -> tensor<8x16xf32>
// ZERO3-LABEL: func.func @step(
// ZERO3: %[[WTE:.*]] = shard.all_gather %{{.*}} : tensor<5x8xf32> -> tensor<10x8xf32>
// ZERO3: braid.embedding %arg0, %[[WTE]] :

// plan=data: weights replicated, only the batch is split (over dp; tp ranks
// hold copies).
// DATA: braid.param @l0.up normal(2.000000e-02) : tensor<8x16xf32>
// DATA-LABEL: func.func private @layer(
// DATA-NOT: shard.
// DATA: return
// DATA-LABEL: func.func @step(
// DATA: braid.embedding %arg0, %{{.*}} : tensor<2x6xi32>, tensor<10x8xf32>
// DATA: braid.cross_entropy {{.*}} {denominator = 24 : i64}

// Without a grid the pass changes nothing.
// NONE-NOT: shard.
// NONE: braid.param @l0.up normal(2.000000e-02) : tensor<8x16xf32>
// NONE-NOT: shard.

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

// RUN: braid-opt --braid-partition="grid=dp=2,pp=2,tp=2" %s | FileCheck %s --check-prefix=PP-ANY-ORDER
// Grid axes in any order: pp is placed outermost (its stages are contiguous
// blocks of ranks), the others keep the order written.
// PP-ANY-ORDER: shard.grid @grid(shape = 2x2x2) {braid.axes = ["pp", "dp", "tp"]}
