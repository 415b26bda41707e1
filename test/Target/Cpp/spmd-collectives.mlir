// RUN: braid-translate --braid-to-cpp %s | FileCheck %s

// Shard collectives as runtime collectives, each waited on at once. The
// runtime moves one contiguous block per rank in communicator order (the
// grid's), so a collective along a dimension that is not the outermost
// non-unit one, or over axes listed out of grid order, goes through a
// scratch buffer re-laid out with braid_k_transpose; the scratch is planned
// and announced around the op.

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

// CHECK-LABEL: void fn_seq(
// CHECK:        static const int64_t [[FROMSHAPE:kA[0-9]+]][] = {2, 2, 4, 4};
// CHECK-NEXT:   static const int64_t [[FROMPERM:kA[0-9]+]][] = {1, 0, 2, 3};
// CHECK:        static const int64_t [[TOSHAPE:kA[0-9]+]][] = {2, 2, 4, 4};
// CHECK-NEXT:   static const int64_t [[TOPERM:kA[0-9]+]][] = {1, 0, 2, 3};
// The gather lands in scratch as [tp, 2, 4, 4] and is moved to [2, tp, 4, 4].
// CHECK:        braid_rt_alloc(rt, frame + [[FULL:[0-9]+]], 256, "full");
// CHECK-NEXT:   braid_rt_alloc(rt, frame + [[S1:[0-9]+]], 256, "full.scratch");
// CHECK-NEXT:   braid_rt_op_begin(rt, "all_gather", "full");
// CHECK-NEXT:   braid_event_wait(rt, braid_all_gather(rt, braid_rt_comm(rt, "tp"), args[0], at(arena, frame + [[S1]]), 32, BRAID_F32));
// CHECK-NEXT:   braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[S1]]), at(arena, frame + [[FULL]]), 4, [[FROMSHAPE]], [[FROMPERM]]);
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_rt_free(rt, frame + [[S1]], 256);
// The adjoint: [2, tp, 4, 4] -> [tp, 2, 4, 4] in scratch, then summed.
// CHECK:        braid_rt_alloc(rt, frame + [[S2:[0-9]+]], 256, "back.scratch");
// CHECK-NEXT:   braid_rt_op_begin(rt, "reduce_scatter", "back");
// CHECK-NEXT:   braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[FULL]]), at(arena, frame + [[S2]]), 4, [[TOSHAPE]], [[TOPERM]]);
// CHECK-NEXT:   braid_event_wait(rt, braid_reduce_scatter(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[S2]]), results[0], 32, BRAID_F32, BRAID_RED_SUM));
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_rt_free(rt, frame + [[S2]], 256);

// CHECK-LABEL: void fn_step(
// CHECK:        static const int64_t [[ASENDSHAPE:kA[0-9]+]][] = {8, 2, 2};
// CHECK-NEXT:   static const int64_t [[ASENDPERM:kA[0-9]+]][] = {1, 0, 2};
// CHECK:        static const int64_t [[ARECVSHAPE:kA[0-9]+]][] = {2, 2, 4, 2};
// CHECK-NEXT:   static const int64_t [[ARECVPERM:kA[0-9]+]][] = {1, 0, 2, 3};
// CHECK:        static const int64_t [[ESHAPE:kA[0-9]+]][] = {2, 2, 4, 2};
// CHECK-NEXT:   static const int64_t [[EPERM:kA[0-9]+]][] = {1, 0, 2, 3};
// CHECK:        static const int64_t [[DSHAPE:kA[0-9]+]][] = {2, 2, 2, 16};
// CHECK-NEXT:   static const int64_t [[DPERM:kA[0-9]+]][] = {1, 0, 2, 3};

// all_slice keeps block coord(tp) of dim 1.
// CHECK:        braid_k_slice(rt, BRAID_F32, at(arena, frame + {{[0-9]+}}), at(arena, frame + [[X:[0-9]+]]), 2, 8, 4, 4, coord(rt, "tp") * 4);
// CHECK:        braid_rt_op_begin(rt, "unslice", "u");
// CHECK-NEXT:   braid_k_unslice(rt, BRAID_F32, at(arena, frame + [[X]]), at(arena, frame + {{[0-9]+}}), 2, 8, 4, 4, coord(rt, "tp") * 4);

// Both sides of the Ulysses exchange: the result's buffer stages the chunks
// to send ([2, 4, tp, 2] -> [tp, 2, 4, 2], unit-free [8, tp, 2] -> [tp, 8, 2]),
// the received chunks land in scratch as [tp, 2, 4, 2] and move to
// [2, tp, 4, 2].
// CHECK:        braid_rt_alloc(rt, frame + [[A:[0-9]+]], 128, "a");
// CHECK-NEXT:   braid_rt_alloc(rt, frame + [[S3:[0-9]+]], 128, "a.scratch");
// CHECK-NEXT:   braid_rt_op_begin(rt, "all_to_all", "a");
// CHECK-NEXT:   braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[Y:[0-9]+]]), at(arena, frame + [[A]]), 3, [[ASENDSHAPE]], [[ASENDPERM]]);
// CHECK-NEXT:   braid_event_wait(rt, braid_all_to_all(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[A]]), at(arena, frame + [[S3]]), 16, BRAID_F32));
// CHECK-NEXT:   braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[S3]]), at(arena, frame + [[A]]), 4, [[ARECVSHAPE]], [[ARECVPERM]]);
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_rt_free(rt, frame + [[S3]], 128);

// CHECK:        braid_rt_op_begin(rt, "all_to_all", "b");
// CHECK-NEXT:   braid_event_wait(rt, braid_all_to_all(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[A]]), at(arena, frame + [[B:[0-9]+]]), 16, BRAID_F32));
// CHECK-NEXT:   braid_rt_op_end(rt);

// CHECK:        braid_rt_alloc(rt, frame + [[S4:[0-9]+]], 128, "e.scratch");
// CHECK-NEXT:   braid_rt_op_begin(rt, "all_to_all", "e");
// CHECK-NEXT:   braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[B]]), at(arena, frame + [[S4]]), 4, [[ESHAPE]], [[EPERM]]);
// CHECK-NEXT:   braid_event_wait(rt, braid_all_to_all(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[S4]]), at(arena, frame + {{[0-9]+}}), 16, BRAID_F32));
// CHECK-NEXT:   braid_rt_op_end(rt);

// CHECK:        braid_rt_op_begin(rt, "all_gather", "c");
// CHECK-NEXT:   braid_event_wait(rt, braid_all_gather(rt, braid_rt_comm(rt, "dp,tp"), at(arena, frame + [[B]]), at(arena, frame + {{[0-9]+}}), 32, BRAID_F32));
// CHECK-NEXT:   braid_rt_op_end(rt);

// CHECK:        braid_rt_alloc(rt, frame + [[S5:[0-9]+]], 512, "d.scratch");
// CHECK-NEXT:   braid_rt_op_begin(rt, "all_gather", "d");
// CHECK-NEXT:   braid_event_wait(rt, braid_all_gather(rt, braid_rt_comm(rt, "tp,dp"), at(arena, frame + [[B]]), at(arena, frame + [[S5]]), 32, BRAID_F32));
// CHECK-NEXT:   braid_k_transpose(rt, BRAID_F32, at(arena, frame + [[S5]]), at(arena, frame + {{[0-9]+}}), 4, [[DSHAPE]], [[DPERM]]);

// CHECK:        braid_event_wait(rt, braid_all_reduce(rt, braid_rt_comm(rt, "dp"), {{.*}}, 32, BRAID_F32, BRAID_RED_MAX));
// A coordinate over axes out of grid order, from the single-axis ones.
// CHECK:        braid_k_slice(rt, BRAID_F32, {{.*}}, 1, 4, 1, 8, (coord(rt, "tp") * 2 + coord(rt, "dp")) * 1);

// CHECK:      const braid_program kProgram = {"collectives", {{.*}}, step, "dp=2,tp=2", 0, nullptr, nullptr, 0, nullptr};
