// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=1 schedule-overlap=false" | braid-opt --braid-schedule-overlap=memory-growth=1 | FileCheck %s
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=1 schedule-overlap=false" | braid-opt --braid-schedule-overlap="memory-growth=1 defer-param-gather=false" | FileCheck %s --check-prefix=OFF
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=pp=2,dp=2 zero=2 microbatches=2 schedule-overlap=false" | braid-opt --braid-schedule-overlap=memory-growth=1 | FileCheck %s --check-prefix=PP
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=1" | FileCheck %s --check-prefix=DEFAULT
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=1" | braid-translate --braid-to-cpp --braid-roll-repeats=false | FileCheck %s --check-prefix=EMIT

// ZeRO-1's gathers of the updated parameter ranges leave the end of the step
// for the next step's start: all of them start before the first layer runs
// (the embedding's, read first, first), and each is waited for just before
// its parameter's first read, layer 1's after layer 0's forward. Nothing is
// gathered after the updates.
// CHECK-LABEL: func.func @step(
// CHECK-SAME:    braid.finish = @step.finish
// CHECK:         %[[R0:.*]] = braid.get_param_range @tok_embeddings at
// CHECK-NEXT:    %{{.*}}, %[[T0:.*]] = dist.all_gather %[[R0]]
// CHECK-COUNT-20: dist.all_gather
// CHECK-NOT:     call
// CHECK:         dist.wait %[[T0]]
// CHECK-NEXT:    braid.set_param @tok_embeddings
// CHECK-NEXT:    braid.get_param @tok_embeddings
// CHECK:         call @llama_layer.fwd(
// CHECK:         braid.set_param @layers.1.attn.wq
// CHECK:         braid.get_param @layers.1.attn.wq
// CHECK:         call @llama_layer.fwd(
// CHECK:         braid.adamw_update @output
// CHECK-NOT:     dist.all_gather
// CHECK:         return

// The finish function holds the same gathers, started together and waited
// for after, every parameter set from its gather.
// CHECK-LABEL: func.func private @step.finish() {
// CHECK:         %[[F0:.*]] = braid.get_param_range @tok_embeddings at
// CHECK-NEXT:    %[[G0:.*]], %[[FT0:.*]] = dist.all_gather %[[F0]]
// CHECK-COUNT-20: dist.all_gather
// CHECK:         dist.wait %[[FT0]]
// CHECK-NEXT:    braid.set_param @tok_embeddings, %[[G0]]
// CHECK-COUNT-20: braid.set_param
// CHECK-NEXT:    return

// defer-param-gather=false: each gather follows its update, no finish.
// OFF-LABEL: func.func @step(
// OFF-NOT:     braid.finish
// OFF:         braid.adamw_update @tok_embeddings
// OFF-NEXT:    braid.get_param_range @tok_embeddings
// OFF-NEXT:    dist.all_gather
// OFF-NOT:     func.func private @step.finish

// A pipeline stage reads its parameters inside its model chunk's forward:
// the gathers move into a copy of it made for the stage's first forward
// (micro-batch 0), before each layer's reads; later micro-batches call the
// chunk as it was. Each stage has its finish.
// PP-LABEL: func.func private @step.c0.fwd(
// PP-NOT:     dist.all_gather
// PP:         return
// PP-LABEL: func.func private @step.c0.fwd.first(
// PP:         dist.all_gather {{.*}} grid_axes = [1]
// PP:         braid.set_param @tok_embeddings
// PP-NEXT:    braid.get_param @tok_embeddings
// PP:         call @llama_layer.fwd(
// PP:         braid.set_param @layers.1.attn.wq
// PP:         call @llama_layer.fwd(
// PP-LABEL: func.func @step.pp0(
// PP-SAME:    braid.finish = @step.pp0.finish
// PP:         call @step.c0.fwd.first({{.*}}dist.microbatch = 0
// PP:         call @step.c0.fwd({{.*}}dist.microbatch = 1
// PP-NOT:     dist.all_gather {{.*}} grid_axes = [1] gather_axis
// PP:         return
// PP-LABEL: func.func private @step.pp0.finish() {
// PP-LABEL: func.func @step.pp1(
// PP-SAME:    braid.finish = @step.pp1.finish
// PP:         call @step.c1.fwd.first({{.*}}dist.microbatch = 0
// PP-LABEL: func.func private @step.pp1.finish() {

// At the default memory budget the step keeps the deferred gathers (they
// take no memory: each sends from a view of its parameter, into which it
// gathers).
// DEFAULT-LABEL: func.func @step(
// DEFAULT-SAME:    braid.finish = @step.finish
// DEFAULT:         braid.get_param_range @tok_embeddings
// DEFAULT:         call @llama_layer.fwd(
// DEFAULT:         braid.adamw_update @output
// DEFAULT-NOT:     dist.all_gather
// DEFAULT:         return

// The program descriptor names the finish function, which runs the step's
// frame-less gathers: each sends this rank's range in place (a view of the
// parameter, which it gathers into).
// EMIT-LABEL: void fn_step_finish(
// EMIT:         braid_all_gather(rt, braid_rt_comm(rt, "dp"), advance(at(arena, [[P:[0-9]+]]), ((coord(rt, "dp") * int64_t(8192))) * 4), at(arena, [[P]]), 8192, BRAID_F32);
// EMIT-NOT:     braid_rt_copy
// EMIT:       void finish(braid_rt *rt, char *arena) {
// EMIT-NEXT:    fn_step_finish(rt, arena, {{[0-9]+}}, nullptr, nullptr);
// EMIT:       const braid_program kProgram = {{.*}}, "dp=2", {{.*}}, finish, BRAID_ENTRY_TRAIN_STEP, 1, kOutputs};
