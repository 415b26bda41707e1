// RUN: %python -m braid.models gpt-tiny --batch 8 | braid-opt --braid-training-pipeline="grid=pp=2,dp=2 microbatches=4" | FileCheck %s --check-prefix=BUCKET
// RUN: %python -m braid.models gpt-tiny --batch 8 | braid-opt --braid-training-pipeline="grid=pp=2,dp=2 microbatches=4 bucket-mb=0" | FileCheck %s
// RUN: %python -m braid.models gpt-tiny --batch 8 | braid-opt --braid-training-pipeline="grid=pp=2,dp=2 microbatches=4 schedule-overlap=false" | FileCheck %s --check-prefix=OFF
// RUN: %python -m braid.models gpt-tiny --batch 8 | braid-opt --braid-training-pipeline="grid=pp=2,dp=2 microbatches=4 zero=1" | FileCheck %s --check-prefix=ZERO

// A pipeline stage's data-parallel gradient reductions follow its chunk's
// last backward (micro-batch 3 of 4). The scheduler moves them into a copy
// of the chunk's backward made for that call, @step.c1.bwd.last, taking the
// gradient sums of micro-batches 0-2 as arguments: each reduction starts as
// soon as the layer's backward has produced its gradient (the head's before
// the layer's), the cotangent's send to stage 0 leaves right after the layer
// backward produces it, and the copy waits for them all before returning.
// Dumps still announce the reduced gradients (dist.announce). Here buckets
// are off (bucket-mb=0), so that each reduction is one.
// CHECK-LABEL: func.func private @step.c1.bwd.last(
// CHECK:         dist.all_reduce {{.*}} grid_axes = [1] reduction = sum {dist.announce} : tensor<64xf32>
// CHECK:         %[[LAYER:.*]]:17 = call @gpt_layer.bwd(
// CHECK-NEXT:    %[[SEND:.*]] = dist.send %[[LAYER]]#0 to 0 on @grid grid_axes = [0] tag = 8
// CHECK:         dist.all_reduce {{.*}} grid_axes = [1] reduction = sum {dist.announce} : tensor<64x64xf32>
// CHECK:         dist.wait %[[SEND]]
// CHECK:         return

// At the defaults, the stage's gradients (49 KiB) are one bucket, under
// the first bucket's 1 MiB: one all-reduce of their pack after the last of
// them, each taken out by an unpack that dumps announce.
// BUCKET-LABEL: func.func private @step.c1.bwd.last(
// BUCKET:         %[[LAYER:.*]]:17 = call @gpt_layer.bwd(
// BUCKET-NEXT:    %[[SEND:.*]] = dist.send %[[LAYER]]#0 to 0 on @grid grid_axes = [0] tag = 8
// BUCKET:         %[[B:.*]] = dist.pack {{.*}} parts 1 : {{.*}} -> tensor<50112xf32>
// BUCKET-NEXT:    %[[R:.*]], %{{.*}} = dist.all_reduce %[[B]] on @grid grid_axes = [1] reduction = sum : tensor<50112xf32>
// BUCKET:         dist.unpack %[[R]] offset 0 parts 1 {dist.announce} : tensor<50112xf32> -> tensor<64xf32>
// BUCKET:         dist.wait %[[SEND]]
// BUCKET:         return
// BUCKET-LABEL: func.func @step.pp1(
// BUCKET-NOT:     dist.all_reduce {{.*}} grid_axes = [1] reduction = sum : tensor<64x64xf32>
// BUCKET:         return

// The stage calls the chunk's backward for micro-batches 0-2 and the copy
// for the last, as the same pipeline action; no reduction over dp of a
// layer's gradient is left after it.
// CHECK-LABEL: func.func @step.pp1(
// CHECK-COUNT-3: call @step.c1.bwd({{.*}}dist.action = "B"
// CHECK:         call @step.c1.bwd.last({{.*}}) {dist.action = "B", dist.chunk = 1 : i64, dist.microbatch = 3 : i64}
// CHECK-NOT:     dist.send {{.*}} tag = 8
// CHECK-NOT:     dist.all_reduce {{.*}} grid_axes = [1] reduction = sum : tensor<64x64xf32>
// CHECK:         return

// OFF-NOT: bwd.last
// OFF:     func.func @step.pp1(
// OFF:     dist.all_reduce {{.*}} grid_axes = [1] reduction = sum : tensor<64x64xf32>

// ZeRO-1 reduce-scatters each gradient sum in its flat form: the
// accumulation and the reshape move into the copy with the reduce-scatter,
// and the flat sums are one bucket, each rank's halves together.
// ZERO-LABEL: func.func private @step.c1.bwd.last(
// ZERO:         call @gpt_layer.bwd(
// ZERO:         braid.add {{.*}} {dist.announce} : tensor<64x64xf32>
// ZERO-NEXT:    braid.reshape {{.*}} {dist.announce} : tensor<64x64xf32> -> tensor<4096xf32>
// ZERO:         %[[B:.*]] = dist.pack {{.*}} parts 2 : {{.*}} -> tensor<50112xf32>
// ZERO-NEXT:    %[[S:.*]], %{{.*}} = dist.reduce_scatter %[[B]] on @grid grid_axes = [1] reduction = sum scatter_axis = 0 : tensor<50112xf32> -> tensor<25056xf32>
// ZERO:         dist.unpack %[[S]] offset 128 parts 1 {dist.announce} : tensor<25056xf32> -> tensor<2048xf32>
// ZERO-LABEL: func.func @step.pp1(
// ZERO-NOT:     dist.reduce_scatter {{.*}} : tensor<4096xf32>
// ZERO:         return
