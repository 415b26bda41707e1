// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=3 schedule-overlap=false" | braid-opt --braid-schedule-overlap=memory-growth=1 | FileCheck %s
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=3" | FileCheck %s --check-prefix=BUDGET
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=3 schedule-overlap=false dtype=bf16" | braid-opt --braid-schedule-overlap=memory-growth=1 | FileCheck %s --check-prefix=BF16

// In bf16 a layer's forward and backward gathers read one compute copy of
// the parameter (a convert of its f32 shard): still prefetches, each started
// one call ahead of its own use, so the backward's waits for layer 1's
// forward to be under way instead of leaving with the forward's at the
// start of the step (holding every layer's gathered copy through the
// forward).
// BF16-LABEL: func.func @step(
// BF16:         braid.get_param @layers.0.attn.wq
// BF16-NEXT:    %[[COPY:.*]] = braid.convert
// BF16-NEXT:    dist.all_gather %[[COPY]]
// BF16-NOT:     dist.all_gather %[[COPY]]
// BF16:         call @llama_layer.fwd(
// BF16-NOT:     dist.all_gather %[[COPY]]
// BF16:         call @llama_layer.fwd(
// BF16-NOT:     call
// BF16:         dist.all_gather %[[COPY]]
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
