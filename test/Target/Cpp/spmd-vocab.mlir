// RUN: braid-opt %s --convert-braid-to-dist -mlir-print-debuginfo | braid-translate --braid-to-cpp | FileCheck %s

// Vocabulary parallelism over tp on a dp x tp grid: a 97-token vocabulary,
// 49 rows per rank (the last one padding). The embedding looks up this rank's rows
// (offset coord(tp) * 49) and the ranks' lookups are summed; positions are
// added once after. The cross-entropy runs as three passes with the max and
// the statistics all-reduced over tp, its gradient recomputes them the same
// way, and the table's gradient is this rank's rows, dumped as a slice of the
// global gradient.

module attributes {braid.model = {name = "vocab", family = "gpt", vocab = 97 : i64}} {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  braid.param @wte normal(0.02) {braid.global_shape = array<i64: 97, 8>, braid.split = [["tp"], []]} : tensor<49x8xf32>
  braid.param @wpe normal(0.01) : tensor<4x8xf32>

  func.func @step(%tok: tensor<2x4xi32> {braid.global_shape = array<i64: 4, 4>, braid.split = [["dp"], []]},
                  %labels: tensor<2x4xi32> {braid.global_shape = array<i64: 4, 4>, braid.split = [["dp"], []]}) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<49x8xf32>
    %part = braid.embedding %tok, %wte {vocab_axes = ["tp"]} : tensor<2x4xi32>, tensor<49x8xf32> -> tensor<2x4x8xf32> loc("part")
    %h0 = shard.all_reduce %part on @grid grid_axes = [1] : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("h0")
    %wpe = braid.get_param @wpe : tensor<4x8xf32>
    %h = braid.bias_add %h0, %wpe : tensor<2x4x8xf32>, tensor<4x8xf32> loc("h")
    %logits = braid.linear %h, %wte transpose_weight : tensor<2x4x8xf32>, tensor<49x8xf32> -> tensor<2x4x49xf32> loc("logits")
    %l = braid.cross_entropy %logits, %labels {vocab_axes = ["tp"], vocab_size = 97 : i64, denominator = 16 : i64} : tensor<2x4x49xf32>, tensor<2x4xi32> -> tensor<f32> loc("l")
    %loss = shard.all_reduce %l on @grid grid_axes = [0] : tensor<f32> -> tensor<f32> loc("loss")
    %one = braid.fill 1.0 : tensor<f32>
    %dlogits = braid.cross_entropy_grad %logits, %labels, %one {vocab_axes = ["tp"], vocab_size = 97 : i64, denominator = 16 : i64} : tensor<2x4x49xf32>, tensor<2x4xi32>, tensor<f32> -> tensor<2x4x49xf32> loc("dlogits")
    %dh = braid.linear %dlogits, %wte : tensor<2x4x49xf32>, tensor<49x8xf32> -> tensor<2x4x8xf32> loc("dh")
    %dwte = braid.embedding_grad %tok, %dh {vocab_axes = ["tp"]} : tensor<2x4xi32>, tensor<2x4x8xf32> -> tensor<49x8xf32> loc("grad.wte")
    %dwte_sum = shard.all_reduce %dwte on @grid grid_axes = [0] : tensor<49x8xf32> -> tensor<49x8xf32> loc("grad.wte")
    %dpos = shard.all_reduce %dh on @grid grid_axes = [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("dpos")
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: void fn_step(
// CHECK:        static const int64_t [[GSHAPE:kA[0-9]+]][] = {49, 8};
// CHECK-NEXT:   static const int64_t [[GGLOBAL:kA[0-9]+]][] = {97, 8};
// CHECK-NEXT:   static const char *const [[GSPLIT:kS[0-9]+]][] = {"tp", ""};

// CHECK:        braid_rt_op_begin(rt, "embedding_shard", "part");
// CHECK-NEXT:   braid_k_embedding_shard(rt, BRAID_F32, BRAID_I32, args[0], at(arena, 0), at(arena, frame + [[PART:[0-9]+]]), 8, 49, 8, (coord(rt, "tp") * int64_t(49)));
// CHECK:        braid_all_reduce(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[PART]]), at(arena, frame + [[H0:[0-9]+]]), 64, BRAID_F32, BRAID_RED_SUM)
// CHECK:        braid_k_bias_add(rt, BRAID_F32, at(arena, frame + [[H0]]), at(arena, 1600), at(arena, frame + {{[0-9]+}}), 64, 32);

// The loss's pieces, one call each, with the all-reduces between them as
// dist ops (--convert-braid-to-dist): each row's maximum over this rank's
// valid columns, reduced by max; the sum of exponentials and the label's
// logit, reduced by sum; the loss over the global batch's 16 rows.
// CHECK:        braid_rt_op_begin(rt, "cross_entropy_row_max",
// CHECK-NEXT:   braid_k_ce_shard_max(rt, BRAID_F32, at(arena, frame + [[LOGITS:[0-9]+]]), static_cast<float *>(at(arena, frame + [[M:[0-9]+]])), 8, 49, (coord(rt, "tp") * int64_t(49)), 97);
// CHECK:        [[EM:ev\[[0-9]+\]]] = braid_all_reduce(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[M]]), at(arena, frame + [[MR:[0-9]+]]), 8, BRAID_F32, BRAID_RED_MAX);
// CHECK:        braid_event_wait(rt, [[EM]]);
// CHECK:        braid_rt_op_begin(rt, "cross_entropy_stats",
// CHECK-NEXT:   braid_k_ce_shard_stats(rt, BRAID_F32, BRAID_I32, at(arena, frame + [[LOGITS]]), args[1], static_cast<float *>(at(arena, frame + [[MR]])), static_cast<float *>(at(arena, frame + [[ST:[0-9]+]])), 8, 49, (coord(rt, "tp") * int64_t(49)), 97);
// CHECK:        [[ES:ev\[[0-9]+\]]] = braid_all_reduce(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[ST]]), at(arena, frame + [[STR:[0-9]+]]), 16, BRAID_F32, BRAID_RED_SUM);
// CHECK:        braid_event_wait(rt, [[ES]]);
// CHECK:        braid_rt_op_begin(rt, "cross_entropy_from_stats", "l");
// CHECK-NEXT:   braid_k_ce_shard_loss(rt, static_cast<float *>(at(arena, frame + [[MR]])), static_cast<float *>(at(arena, frame + [[STR]])), static_cast<float *>(results[0]), 8, 16);

// The gradient recomputes the statistics: nothing is carried from the loss.
// CHECK:        braid_k_ce_shard_max(
// CHECK:        braid_all_reduce(rt, braid_rt_comm(rt, "tp"), {{.*}}, 8, BRAID_F32, BRAID_RED_MAX);
// CHECK:        braid_k_ce_shard_stats(
// CHECK:        braid_all_reduce(rt, braid_rt_comm(rt, "tp"), {{.*}}, 16, BRAID_F32, BRAID_RED_SUM);
// CHECK:        braid_rt_op_begin(rt, "cross_entropy_grad_shard", "dlogits");
// CHECK-NEXT:   braid_k_ce_shard_grad(rt, BRAID_F32, BRAID_I32, at(arena, frame + [[LOGITS]]), args[1], {{.*}}, 8, 49, (coord(rt, "tp") * int64_t(49)), 97, 16);

// CHECK:        braid_k_embedding_grad_shard(rt, BRAID_F32, BRAID_I32, args[0], at(arena, frame + {{[0-9]+}}), at(arena, frame + [[DW:[0-9]+]]), 8, 49, 8, (coord(rt, "tp") * int64_t(49)));
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_rt_value_sharded(rt, nullptr, "grad.wte", at(arena, frame + [[DW]]), BRAID_F32, 2, [[GSHAPE]], [[GGLOBAL]], [[GSPLIT]]);
// CHECK:        braid_rt_value_sharded(rt, nullptr, "grad.wte", {{.*}}, BRAID_F32, 2, {{.*}});
// Not a gradient: a plain (per-rank) dump.
// CHECK:        braid_rt_value(rt, nullptr, "dpos",

// Tokens are drawn from the model's vocabulary, not the rank's rows.
// CHECK:      {"wte", BRAID_F32, 2, kShape0, BRAID_INIT_NORMAL, 0.02, 0, 0, kGlobal0, kSplit0},
// CHECK:      {"tokens", BRAID_I32, 2, {{.*}}, BRAID_INIT_TOKENS, 0, 97,
