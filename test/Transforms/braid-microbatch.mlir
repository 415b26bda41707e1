// RUN: braid-opt --braid-microbatch="count=2" %S/braid-partition.mlir | FileCheck %s
// RUN: braid-opt --braid-microbatch="count=1" %S/braid-partition.mlir | FileCheck %s --check-prefix=ONE
// RUN: not braid-opt --braid-microbatch="count=3" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=UNEVEN
// RUN: not braid-opt --braid-microbatch="count=0" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: braid-opt --braid-microbatch="count=2" --braid-partition="grid=dp=2" %S/braid-partition.mlir | FileCheck %s --check-prefix=DP

// The step and the layer it calls compute one micro-batch (4 -> 2 rows); the
// loss divides by the global batch's 24 tokens, so micro-batch losses sum to
// the step's.
// CHECK-LABEL: func.func private @layer(
// CHECK-SAME: %arg0: tensor<2x6x8xf32>
// CHECK-SAME: -> tensor<2x6x8xf32>
// CHECK: braid.linear {{.*}} -> tensor<2x6x16xf32>
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %arg0: tensor<2x6xi32>, %arg1: tensor<2x6xi32>) -> tensor<f32> attributes {braid.microbatches = 2 : i64}
// CHECK: braid.embedding {{.*}} -> tensor<2x6x8xf32>
// CHECK: call @layer({{.*}}) : (tensor<2x6x8xf32>, {{.*}}) -> tensor<2x6x8xf32>
// CHECK: braid.linear {{.*}} transpose_weight : tensor<2x6x8xf32>, tensor<10x8xf32> -> tensor<2x6x10xf32>
// CHECK: braid.cross_entropy {{.*}} {denominator = 24 : i64} : tensor<2x6x10xf32>, tensor<2x6xi32> -> tensor<f32>

// ONE-NOT: braid.microbatches
// ONE: func.func @step(%arg0: tensor<4x6xi32>

// UNEVEN: error: the batch (4) of input #0 is not a multiple of the 3 micro-batches
// ZERO: error: --braid-microbatch: count must be at least 1, found 0

// Data parallelism splits the micro-batch; the denominator stays global.
// DP: func.func @step(%arg0: tensor<1x6xi32> {braid.global_shape = array<i64: 2, 6>, braid.split = {{\[}}["dp"], []]}
// DP: braid.cross_entropy {{.*}}denominator = 24 : i64

