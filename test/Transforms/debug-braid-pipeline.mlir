// RUN: braid-opt %S/braid-partition.mlir --braid-microbatch=count=2 --braid-partition=grid=pp=2 --braid-pipeline-stages=pp=2 --braid-autodiff --braid-pipeline=schedule=zb-h1 -debug-only=braid-pipeline-stages,braid-pipeline -o /dev/null 2>&1 | FileCheck %s
// RUN: braid-opt %S/braid-partition.mlir --braid-microbatch=count=4 --braid-partition=grid=pp=2 --braid-pipeline-stages=pp=2 --braid-autodiff --braid-pipeline=schedule=gpipe -debug-only=braid-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPIPE

// -debug-only=braid-pipeline-stages,braid-pipeline explains why a layer went
// to a stage and the schedule each rank runs, on the two-layer model of
// braid-partition.mlir over pp=2.

// The layers' costs (the embedding counted with the first, the head and
// loss with the last) and the balanced split.
// CHECK: layer costs (forward FLOPs, {{.*}}): 7584 9984
// CHECK-NEXT: 2 model chunks (2 ranks x 1) balanced: the largest chunk's cost is the smallest possible
// CHECK-NEXT: chunk 0 (rank 0): layers 0..0, cost 7584
// CHECK-NEXT: chunk 1 (rank 1): layers 1..1, cost 9984
// The tied embedding's read is used by both chunks.
// CHECK: 'braid.get_param' at {{.*}} reads only parameters and inputs and 2 chunks use it: chunk 0 computes it, each other one a copy

// ZB-H1 on 2 ranks and 2 micro-batches: the residual stream crosses the
// boundary (4x6x8 f32 halved by the micro-batches: 384 bytes), and each
// backward splits into the part the previous chunk waits for and the rest.
// CHECK: schedule zb-h1: 2 ranks x 1 model chunks (chunk c on rank c mod 2), 2 micro-batches
// CHECK: boundary 0|1: forward carries 384 bytes a micro-batch in 1 values
// CHECK: boundary 0|1: backward carries 384 bytes a micro-batch in 1 values
// CHECK: chunk 1: of its {{[0-9]+}} backward ops, {{[0-9]+}} make the cotangents the previous chunk waits for (B), {{[0-9]+}} only weight gradients, which can wait (W)
// CHECK: rank 0 runs F0 F1 B0 W0 B1 W1
// CHECK-NEXT: at most 2 micro-batch-chunks' activations alive at once
// CHECK: rank 0: @wte is read by chunks of ranks 0, 1: each sends its gradient to the others
// CHECK: rank 1 runs F0 B0 F1 B1 W0 W1
// CHECK-NEXT: at most 1 micro-batch-chunks' activations alive at once

// GPipe keeps every micro-batch's activations until the backward.
// GPIPE: rank 0 runs F0 F1 F2 F3 B0 B1 B2 B3
// GPIPE-NEXT: at most 4 micro-batch-chunks' activations alive at once
