// RUN: braid-opt %S/braid-partition.mlir --braid-microbatch=count=2 --braid-partition=grid=pp=2 --braid-pipeline-stages=pp=2 --braid-autodiff --braid-pipeline=schedule=1f1b | FileCheck %s
// RUN: braid-opt %S/braid-partition.mlir --braid-microbatch=count=2 --braid-partition=grid=pp=2 --braid-pipeline-stages=pp=2 --braid-autodiff --braid-pipeline=schedule=gpipe | FileCheck %s --check-prefix=GPIPE
// RUN: braid-opt %S/braid-partition.mlir --braid-microbatch=count=2 --braid-partition=grid=pp=2 --braid-pipeline-stages=pp=2 --braid-autodiff --braid-pipeline=schedule=zb-h1 | FileCheck %s --check-prefix=ZB
// RUN: braid-opt %S/braid-partition.mlir --braid-microbatch=count=2 --braid-pipeline-stages="pp=1 virtual-stages=2" --braid-autodiff --braid-pipeline=schedule=interleaved | FileCheck %s --check-prefix=ONE
// RUN: braid-opt %S/braid-partition.mlir --braid-training-pipeline="grid=pp=2 microbatches=2 dtype=bf16" | FileCheck %s --check-prefix=MIXED
// RUN: not braid-opt %S/braid-partition.mlir --braid-autodiff --braid-pipeline 2>&1 | FileCheck %s --check-prefix=NOSTAGES
// RUN: not braid-opt %S/braid-partition.mlir --braid-pipeline-stages=pp=2 --braid-autodiff --braid-pipeline 2>&1 | FileCheck %s --check-prefix=NOGRID
// RUN: not braid-opt %S/braid-partition.mlir --braid-partition=grid=pp=2 --braid-pipeline-stages=pp=2 --braid-autodiff --braid-pipeline=schedule=zigzag 2>&1 | FileCheck %s --check-prefix=KIND

// Mixed precision (f32 master weights): a chunk's forward keeps only
// activations for its backward, which casts the weights it reads again, so
// no micro-batch in flight holds a copy of the stage's weights.
// MIXED-LABEL: func.func private @step.c0.fwd(%arg0: tensor<2x6xi32>) -> (tensor<2x6x8xbf16>, tensor<2x6x8xbf16>, tensor<2x6x8xbf16>, tensor<2x6x16xbf16>, tensor<2x6x16xbf16>) attributes
// MIXED-LABEL: func.func private @step.c0.bwd(%arg0: tensor<2x6x8xbf16>, %arg1: tensor<2x6x8xbf16>, %arg2: tensor<2x6x16xbf16>, %arg3: tensor<2x6x16xbf16>, %arg4: tensor<2x6x8xbf16>, %arg5: tensor<2x6xi32>) -> (tensor<10x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) attributes
// MIXED-NEXT: %[[UP:.*]] = braid.get_param @l0.up : tensor<8x16xf32>
// MIXED-NEXT: braid.convert %[[UP]] : tensor<8x16xf32> -> tensor<8x16xbf16>
// MIXED-NEXT: %[[DOWN:.*]] = braid.get_param @l0.down : tensor<16x8xf32>
// MIXED-NEXT: braid.convert %[[DOWN]] : tensor<16x8xf32> -> tensor<16x8xbf16>

// Two chunks on two ranks, two micro-batches, 1F1B. Chunk functions: the
// first chunk's forward takes the tokens and returns the activation it sends
// and what its backward needs; the last one's returns the loss first.
// CHECK: module attributes {{{.*}}braid.pipeline_entries = [@step.pp0, @step.pp1]}
// CHECK: func.func private @step.c0.fwd(%arg0: tensor<2x6xi32>) -> (tensor<2x6x8xf32>, {{.*}}) attributes {braid.pipeline_chunk}
// CHECK: func.func private @step.c0.bwd(
// CHECK-SAME: -> (tensor<10x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>)
// CHECK: func.func private @step.c1.fwd(%arg0: tensor<2x6x8xf32>, %arg1: tensor<2x6xi32>) -> (tensor<f32>,
// CHECK: func.func private @step.c1.bwd(
// CHECK-SAME: -> (tensor<2x6x8xf32>, tensor<10x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>)

// Rank 0: forwards of both micro-batches (warm-up), each sent on; then the
// backwards, each after receiving its gradient. The tied embedding's
// gradient is exchanged with rank 1 and summed in rank order; the loss is
// summed over pp.
// CHECK-LABEL: func.func @step.pp0(%arg0: tensor<4x6xi32>) -> (tensor<f32>, tensor<10x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>)
// CHECK-SAME: braid.gradient_copies = array<i64: 2, 1, 1, 1>, braid.gradients = [@wte, @l0.norm, @l0.up, @l0.down], braid.peak_live_microbatches = 2 : i64, braid.pipeline_rank = 0 : i64
// CHECK: %[[MB0:.*]] = dist.microbatch %arg0[0 of 2] : tensor<4x6xi32> -> tensor<2x6xi32>
// CHECK-NEXT: %[[F0:.*]]:5 = call @step.c0.fwd(%[[MB0]]) {dist.action = "F", dist.chunk = 0 : i64, dist.microbatch = 0 : i64}
// CHECK-NEXT: %[[ST1:.*]] = dist.send %[[F0]]#0 to 1 on @grid grid_axes = [0] tag = 5 : tensor<2x6x8xf32>
// CHECK-NEXT: dist.wait %[[ST1]]
// CHECK-NEXT: %[[MB1:.*]] = dist.microbatch %arg0[1 of 2]
// CHECK-NEXT: %[[F1:.*]]:5 = call @step.c0.fwd(%[[MB1]]) {dist.action = "F", dist.chunk = 0 : i64, dist.microbatch = 1 : i64}
// CHECK-NEXT: %[[ST2:.*]] = dist.send %[[F1]]#0 to 1 on @grid grid_axes = [0] tag = 7
// CHECK-NEXT: dist.wait %[[ST2]]
// CHECK-NEXT: %[[G0:.*]], %[[RT3:.*]] = dist.recv from 1 on @grid grid_axes = [0] tag = 2 : tensor<2x6x8xf32>
// CHECK-NEXT: dist.wait %[[RT3]]
// CHECK-NEXT: %[[B0:.*]]:4 = call @step.c0.bwd(%[[F0]]#1, %[[F0]]#2, %[[F0]]#3, %[[F0]]#4, %[[G0]], %[[MB0]]) {dist.action = "B", dist.chunk = 0 : i64, dist.microbatch = 0 : i64}
// CHECK-NEXT: %[[G1:.*]], %[[RT4:.*]] = dist.recv from 1 on @grid grid_axes = [0] tag = 4
// CHECK-NEXT: dist.wait %[[RT4]]
// CHECK-NEXT: %[[B1:.*]]:4 = call @step.c0.bwd({{.*}}, %[[G1]], %[[MB1]]) {dist.action = "B", dist.chunk = 0 : i64, dist.microbatch = 1 : i64}
// CHECK-NEXT: %[[WTE:.*]] = braid.add %[[B0]]#0, %[[B1]]#0
// CHECK: %[[ZERO:.*]] = braid.fill 0.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[LOSS:.*]] = shard.all_reduce %[[ZERO]] on @grid grid_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK-NEXT: %[[ST5:.*]] = dist.send %[[WTE]] to 1 on @grid grid_axes = [0] tag = 11 : tensor<10x8xf32>
// CHECK-NEXT: dist.wait %[[ST5]]
// CHECK-NEXT: %[[OTHER:.*]], %[[RT6:.*]] = dist.recv from 1 on @grid grid_axes = [0] tag = 11 : tensor<10x8xf32>
// CHECK-NEXT: dist.wait %[[RT6]]
// CHECK-NEXT: %[[SUM:.*]] = braid.add %[[WTE]], %[[OTHER]] : tensor<10x8xf32>
// CHECK: return %[[LOSS]], %[[SUM]],

// Rank 1: receive, forward, backward at once (1F1B), send the gradient back.
// CHECK-LABEL: func.func @step.pp1(%arg0: tensor<4x6xi32>)
// CHECK-SAME: braid.gradients = [@wte, @l1.norm, @l1.up, @l1.down], braid.peak_live_microbatches = 1 : i64, braid.pipeline_rank = 1 : i64
// CHECK-NEXT: %[[X0:.*]], %[[RT7:.*]] = dist.recv from 0 on @grid grid_axes = [0] tag = 5
// CHECK-NEXT: dist.wait %[[RT7]]
// CHECK-NEXT: %[[L0:.*]] = dist.microbatch %arg0[0 of 2]
// CHECK-NEXT: %[[Y0:.*]]:6 = call @step.c1.fwd(%[[X0]], %[[L0]]) {dist.action = "F", dist.chunk = 1 : i64, dist.microbatch = 0 : i64}
// CHECK-NEXT: %[[D0:.*]]:5 = call @step.c1.bwd({{.*}}) {dist.action = "B", dist.chunk = 1 : i64, dist.microbatch = 0 : i64}
// CHECK-NEXT: %[[ST8:.*]] = dist.send %[[D0]]#0 to 0 on @grid grid_axes = [0] tag = 2
// CHECK-NEXT: dist.wait %[[ST8]]
// CHECK-NEXT: %{{.*}}, %[[RT9:.*]] = dist.recv from 0 on @grid grid_axes = [0] tag = 7
// CHECK-NEXT: dist.wait %[[RT9]]
// CHECK: %[[LSUM:.*]] = braid.add %[[Y0]]#0, %{{.*}}#0 : tensor<f32>
// CHECK: shard.all_reduce %[[LSUM]] on @grid grid_axes = [0]
// CHECK: %[[OTHER1:.*]], %[[RT10:.*]] = dist.recv from 0 on @grid grid_axes = [0] tag = 11
// CHECK-NEXT: dist.wait %[[RT10]]
// CHECK-NEXT: braid.add %[[OTHER1]], %{{.*}} : tensor<10x8xf32>

// GPipe: all forwards, then all backwards.
// GPIPE-LABEL: func.func @step.pp1(
// GPIPE: dist.action = "F", dist.chunk = 1 : i64, dist.microbatch = 0
// GPIPE-NOT: dist.action = "B"
// GPIPE: dist.action = "F", dist.chunk = 1 : i64, dist.microbatch = 1
// GPIPE: dist.action = "B", dist.chunk = 1 : i64, dist.microbatch = 0
// GPIPE: dist.action = "B", dist.chunk = 1 : i64, dist.microbatch = 1

// ZB-H1: the backward split into its input- and weight-gradient parts; the
// last rank runs its weight gradients after both input gradients.
// ZB: func.func private @step.c1.bwd_input(
// ZB: func.func private @step.c1.bwd_weight(
// ZB-LABEL: func.func @step.pp1(
// ZB: call @step.c1.bwd_input({{.*}}) {dist.action = "B", dist.chunk = 1 : i64, dist.microbatch = 0
// ZB: call @step.c1.bwd_input({{.*}}) {dist.action = "B", dist.chunk = 1 : i64, dist.microbatch = 1
// ZB: call @step.c1.bwd_weight({{.*}}) {dist.action = "W", dist.chunk = 1 : i64, dist.microbatch = 0
// ZB: call @step.c1.bwd_weight({{.*}}) {dist.action = "W", dist.chunk = 1 : i64, dist.microbatch = 1

// One rank, two chunks (gradient accumulation with virtual stages): values
// pass between chunks without transfers, and the loss is not reduced.
// ONE: braid.pipeline_entries = [@step.pp0]
// ONE-LABEL: func.func @step.pp0(%arg0: tensor<4x6xi32>, %arg1: tensor<4x6xi32>)
// ONE-NOT: dist.send
// ONE-NOT: dist.recv
// ONE: %[[A:.*]]:5 = call @step.c0.fwd(
// ONE: call @step.c1.fwd(%[[A]]#0,
// ONE-NOT: shard.all_reduce

// NOSTAGES: error: --braid-pipeline needs the step's model chunks (run --braid-pipeline-stages first)
// NOGRID: error: a pipeline of 2 ranks needs a grid whose pp axis has size 2
// KIND: for the --schedule option: expected gpipe, 1f1b, interleaved or zb-h1, found 'zigzag'
