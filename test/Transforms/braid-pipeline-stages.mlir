// RUN: braid-opt --braid-pipeline-stages="pp=2" %S/braid-partition.mlir | FileCheck %s
// RUN: braid-opt --braid-pipeline-stages="pp=1 virtual-stages=2 layout=1,1" %S/braid-partition.mlir | FileCheck %s --check-prefix=LAYOUT
// RUN: not braid-opt --braid-pipeline-stages="pp=2 layout=2" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not braid-opt --braid-pipeline-stages="pp=2 layout=2,1" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=COVER
// RUN: not braid-opt --braid-pipeline-stages="pp=3" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=FEW
// RUN: not braid-opt --braid-pipeline-stages="pp=0" %S/braid-partition.mlir 2>&1 | FileCheck %s --check-prefix=ZERO

// Two layers on two chunks: the embedding goes with the first layer, the head
// and the loss with the last; the tied embedding table is read by both
// chunks, each reading it itself.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: braid.pipeline = {layers = array<i64: 1, 1>, pp = 2 : i64, virtual_stages = 1 : i64}
// CHECK-DAG: %[[W0:.*]] = braid.get_param @wte {braid.stage = 0 : i64}
// CHECK-DAG: %[[W1:.*]] = braid.get_param @wte {braid.stage = 1 : i64}
// CHECK: %[[H0:.*]] = braid.embedding %arg0, %[[W0]] {braid.stage = 0 : i64}
// CHECK: braid.get_param @l0.norm {braid.stage = 0 : i64}
// CHECK: %[[H1:.*]] = call @layer(%[[H0]], {{.*}}) {braid.stage = 0 : i64}
// CHECK: braid.get_param @l1.norm {braid.stage = 1 : i64}
// CHECK: %[[H2:.*]] = call @layer(%[[H1]], {{.*}}) {braid.stage = 1 : i64}
// CHECK: %[[LOGITS:.*]] = braid.linear %[[H2]], %[[W1]] transpose_weight {braid.stage = 1 : i64}
// CHECK: braid.cross_entropy %[[LOGITS]], %arg1 {braid.stage = 1 : i64}

// LAYOUT: braid.pipeline = {layers = array<i64: 1, 1>, pp = 1 : i64, virtual_stages = 2 : i64}
// LAYOUT: call @layer({{.*}}) {braid.stage = 0 : i64}
// LAYOUT: call @layer({{.*}}) {braid.stage = 1 : i64}

// COUNT: braid-partition.mlir:95:3: error: pipeline layout has 1 entries but the pipeline has 2 chunks (pp x virtual-stages)
// COVER: braid-partition.mlir:95:3: error: pipeline layout covers 3 layers but the model has 2
// FEW: error: cannot split 2 layers into 3 pipeline chunks: every chunk needs at least one layer
// ZERO: error: --braid-pipeline-stages: pp and virtual-stages must be at least 1, found 0 and 1
