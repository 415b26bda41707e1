// RUN: braid-opt %s --convert-braid-to-dist -mlir-print-debuginfo | braid-translate --braid-to-cpp | FileCheck %s
// RUN: not braid-translate --braid-to-cpp %s 2>&1 | FileCheck %s --check-prefix=RAW

// Shard collectives, lowered to dist (--convert-braid-to-dist), as runtime
// collectives: each starts into its token's event, which dist.wait waits
// for. The runtime moves one contiguous block per rank in communicator order
// (the grid's), so a collective along a dimension that is not the outermost
// non-unit one, or over axes listed out of grid order, moves whole blocks and
// the lowering re-lays them out with braid.transpose (braid_k_transpose) on
// the side that needs it. Unlowered, the emitter refuses a shard transfer.

module attributes {braid.model = {name = "collectives", family = "gpt", vocab = 16 : i64}} {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  braid.param @wte normal(0.02) : tensor<16x4xf32>

  // %x [2, 4, 4]: this rank's block of a [2, 8, 4] sequence split over tp.
  func.func private @seq(%x: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
    %full = shard.all_gather %x on @grid grid_axes = [1] gather_axis = 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32> loc("full")
    %back = shard.reduce_scatter %full on @grid grid_axes = [1] scatter_axis = 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32> loc("back")
    return %back : tensor<2x4x4xf32>
  }

  func.func @step(%tok: tensor<2x8xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<16x4xf32>
    %h = braid.embedding %tok, %wte : tensor<2x8xi32>, tensor<16x4xf32> -> tensor<2x8x4xf32> loc("h")
    %x = shard.all_slice %h on @grid grid_axes = [1] slice_axis = 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32> loc("x")
    // The adjoint of all_slice: this rank's block placed in zeros.
    %u = braid.unslice %x along 1 over ["tp"] : tensor<2x4x4xf32> -> tensor<2x8x4xf32> loc("u")
    %x2 = shard.all_slice %u on @grid grid_axes = [1] slice_axis = 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32> loc("x2")
    %y = func.call @seq(%x2) : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    // Heads for sequence (Ulysses): both sides re-laid out.
    %a = shard.all_to_all %y on @grid grid_axes = [1] split_axis = 2 concat_axis = 1 : tensor<2x4x4xf32> -> tensor<2x8x2xf32> loc("a")
    // Outermost on both sides: straight through.
    %b = shard.all_to_all %a on @grid grid_axes = [1] split_axis = 0 concat_axis = 0 : tensor<2x8x2xf32> -> tensor<2x8x2xf32> loc("b")
    // Only the chunks sent need a re-layout.
    %e = shard.all_to_all %b on @grid grid_axes = [1] split_axis = 1 concat_axis = 0 : tensor<2x8x2xf32> -> tensor<4x4x2xf32> loc("e")
    %c = shard.all_gather %b on @grid grid_axes = [0, 1] gather_axis = 0 : tensor<2x8x2xf32> -> tensor<8x8x2xf32> loc("c")
    // Axes out of grid order: block tp * 2 + dp arrives as rank dp * 2 + tp.
    %d = shard.all_gather %b on @grid grid_axes = [1, 0] gather_axis = 0 : tensor<2x8x2xf32> -> tensor<8x8x2xf32> loc("d")
    %m = shard.all_reduce %e on @grid grid_axes = [0] reduction = max : tensor<4x4x2xf32> -> tensor<4x4x2xf32> loc("m")
    %s = shard.all_slice %m on @grid grid_axes = [1, 0] slice_axis = 0 : tensor<4x4x2xf32> -> tensor<1x4x2xf32> loc("s")
    %loss = braid.sum_squares %c, %d, %s : tensor<8x8x2xf32>, tensor<8x8x2xf32>, tensor<1x4x2xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// RAW: error: loc("full"): a transfer reaches the emitter as a dist op: run --convert-braid-to-dist first

// CHECK-LABEL: void fn_seq(
// The gathered blocks, then their elements in sequence order.
// CHECK:        braid_rt_alloc(rt, frame + [[BLOCKS:[0-9]+]], 256, "v1");
// CHECK-NEXT:   braid_rt_op_begin(rt, "all_gather", "v1");
// CHECK-NEXT:   [[EG:ev\[[0-9]+\]]] = braid_all_gather(rt, braid_rt_comm(rt, "tp"), args[0], at(arena, frame + [[BLOCKS]]), 32, BRAID_F32);
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_event_wait(rt, [[EG]]);
// CHECK:        braid_rt_op_begin(rt, "transpose",
// CHECK-NEXT:   braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[BLOCKS]]), at(arena, frame + [[FULL:[0-9]+]]), 4,
// The blocks to scatter first, then the transfer into the result.
// CHECK:        braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[FULL]]), at(arena, frame + [[SEND:[0-9]+]]), 4,
// CHECK:        braid_rt_op_begin(rt, "reduce_scatter",
// CHECK-NEXT:   [[ES:ev\[[0-9]+\]]] = braid_reduce_scatter(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[SEND]]), results[0], 32, BRAID_F32, BRAID_RED_SUM);
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_event_wait(rt, [[ES]]);

// CHECK-LABEL: void fn_step(
// CHECK:        braid_k_slice(rt, BRAID_F32, at(arena, frame + {{[0-9]+}}), at(arena, frame + [[X:[0-9]+]]), 2, 8, 4, 4, coord(rt, "tp") * 4);
// CHECK:        braid_rt_op_begin(rt, "unslice", "u");
// CHECK-NEXT:   braid_k_unslice(rt, BRAID_F32, at(arena, frame + [[X]]), at(arena, frame + {{[0-9]+}}), 2, 8, 4, 4, coord(rt, "tp") * 4);
// Heads for sequence (Ulysses): the chunks sent re-laid out first, the
// chunks received after the wait.
// CHECK:        braid_k_transpose(rt, BRAID_F32, at(arena, frame + {{[0-9]+}}), at(arena, frame + [[ASEND:[0-9]+]]), 3,
// CHECK:        [[EA:ev\[[0-9]+\]]] = braid_all_to_all(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[ASEND]]), at(arena, frame + [[ARECV:[0-9]+]]), 16, BRAID_F32);
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_event_wait(rt, [[EA]]);
// CHECK:        braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[ARECV]]), at(arena, frame + [[A:[0-9]+]]), 4,
// Outermost on both sides: straight through.
// CHECK:        braid_rt_op_begin(rt, "all_to_all", "b");
// CHECK-NEXT:   [[EB:ev\[[0-9]+\]]] = braid_all_to_all(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[A]]), at(arena, frame + [[B:[0-9]+]]), 16, BRAID_F32);
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_event_wait(rt, [[EB]]);
// Only the chunks sent need a re-layout.
// CHECK:        braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[B]]), at(arena, frame + [[ESEND:[0-9]+]]), 4,
// CHECK:        braid_all_to_all(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[ESEND]]), at(arena, frame + {{[0-9]+}}), 16, BRAID_F32);
// CHECK:        braid_rt_op_begin(rt, "all_gather", "c");
// CHECK-NEXT:   [[EC:ev\[[0-9]+\]]] = braid_all_gather(rt, braid_rt_comm(rt, "dp,tp"), at(arena, frame + [[B]]), at(arena, frame + {{[0-9]+}}), 32, BRAID_F32);
// Axes listed out of grid order: the communicator of the grid order, its
// blocks re-laid out after the wait.
// CHECK:        [[ED:ev\[[0-9]+\]]] = braid_all_gather(rt, braid_rt_comm(rt, "dp,tp"), at(arena, frame + [[B]]), at(arena, frame + [[DBLOCKS:[0-9]+]]), 32, BRAID_F32);
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_event_wait(rt, [[ED]]);
// CHECK:        braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[DBLOCKS]]), at(arena, frame + {{[0-9]+}}), 4,
// CHECK:        braid_all_reduce(rt, braid_rt_comm(rt, "dp"), {{.*}}, 32, BRAID_F32, BRAID_RED_MAX);
// A coordinate over axes out of grid order, from the single-axis ones.
// CHECK:        braid_k_slice(rt, BRAID_F32, {{.*}}, 1, 4, 1, 8, (coord(rt, "tp") * 2 + coord(rt, "dp")) * 1);

// CHECK:      const braid_program kProgram = {"collectives", {{.*}}, step, "dp=2,tp=2", 0, nullptr, nullptr, 0, nullptr, nullptr, BRAID_ENTRY_TRAIN_STEP, 1, kOutputs};
