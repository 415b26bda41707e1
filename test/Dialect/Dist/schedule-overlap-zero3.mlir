// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=3 schedule-overlap=false" | braid-opt --braid-schedule-overlap=memory-growth=1 | FileCheck %s
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=3" | FileCheck %s --check-prefix=BUDGET
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=3 schedule-overlap=false dtype=bf16" | braid-opt --braid-schedule-overlap=memory-growth=1 | FileCheck %s --check-prefix=BF16
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=3 microbatches=2 schedule-overlap=false" | braid-opt --braid-schedule-overlap=memory-growth=1 | FileCheck %s --check-prefix=MICRO

// Micro-batched, the layers' gathers move into the model chunk's forward
// and backward (their callers) and no further: moved out of the chunk's
// backward into the stage's program, every layer's would be gathered before
// the chunk runs (held all at once), where inside it each layer's are
// gathered a call ahead of that layer.
// MICRO-LABEL: func.func private @step.c0.fwd(
// MICRO:         dist.all_gather
// MICRO:         call @llama_layer.fwd(
// MICRO:         dist.all_gather
// MICRO:         call @llama_layer.fwd(
// MICRO-LABEL: func.func private @step.c0.bwd(
// MICRO:         dist.all_gather
// MICRO:         call @llama_layer.bwd(
// MICRO:         call @llama_layer.bwd(
// MICRO-LABEL: func.func @step.pp0(
// MICRO-NOT:     dist.all_gather {{.*}} grid_axes = [0] gather_axis
// MICRO:         return

// In bf16 each gather reads a compute copy of the parameter's shard (a
// convert of its f32 read): moved to the caller, every gather gets a read
// and a convert of its own, which move with it, so the backward's gather of
// layer 0 starts one call ahead of its use (after layer 1's forward, while
// layer 1's backward runs) instead of with the forward's at the step's start.
// BF16-LABEL: func.func @step(
// BF16:         braid.get_param @layers.0.attn.wq
// BF16-NEXT:    %[[C0:.*]] = braid.convert
// BF16-NEXT:    dist.all_gather %[[C0]]
// BF16:         call @llama_layer.fwd(
// BF16-NOT:     braid.get_param @layers.0.attn.wq
// BF16:         call @llama_layer.fwd(
// BF16-NOT:     call
// BF16:         braid.get_param @layers.0.attn.wq
// BF16-NEXT:    %[[C1:.*]] = braid.convert
// BF16-NEXT:    dist.all_gather %[[C1]]
// BF16:         call @llama_layer.bwd(
// BF16:         call @llama_layer.bwd(

// ZeRO-3 gathers each layer's parameters inside the layer's functions. The
// scheduler moves every gather of an argument to the callers (the functions
// then take whole parameters) and starts it one call ahead of its use: layer
// 1's forward parameters are gathered while layer 0's forward runs, layer
// 1's again for its backward while layer 1's forward runs, and layer 0's
// while layer 1's backward runs.
// CHECK-LABEL: func.func private @llama_layer.fwd(
// CHECK-SAME:    %arg1: tensor<64xf32>, %arg2: tensor<64x64xf32>
// CHECK-NOT:     dist.all_gather
// CHECK:         return
// CHECK-LABEL: func.func private @llama_layer.bwd(
// CHECK-NOT:     dist.all_gather
// CHECK:         return
// CHECK-LABEL: func.func @step(
// CHECK:         braid.get_param @layers.1.attn.wq
// CHECK-NEXT:    dist.all_gather
// CHECK:         call @llama_layer.fwd(
// CHECK:         braid.get_param @layers.1.attn.wq
// CHECK-NEXT:    dist.all_gather
// CHECK:         call @llama_layer.fwd(
// CHECK:         braid.get_param @layers.0.attn.wq
// CHECK-NEXT:    dist.all_gather
// CHECK:         call @llama_layer.bwd(
// CHECK:         call @llama_layer.bwd(

// Held through the call and a layer ahead, the gathered parameters of this
// small model exceed the default budget (5% and one layer's parameters):
// the program keeps its gathers inside the layers (and is still scheduled).
// BUDGET-LABEL: func.func private @llama_layer.fwd(
// BUDGET-SAME:    %arg1: tensor<32xf32>
// BUDGET:         dist.all_gather %arg1
