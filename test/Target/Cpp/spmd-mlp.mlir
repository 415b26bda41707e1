// RUN: braid-opt %s --convert-braid-to-dist -mlir-print-debuginfo | braid-translate --braid-to-cpp | FileCheck %s

// A hand-partitioned per-rank program on a dp x tp grid: the batch split over
// dp, a column-parallel linear then a row-parallel one over tp whose partial
// sums are all-reduced before the replicated bias is added once, the loss
// averaged over the global batch (denominator) and summed over dp. Checks
// the descriptor's grid, the sharded parameters and inputs, the collectives
// and that the step itself reduces nothing.

module attributes {braid.model = {name = "mlp-tp", family = "gpt", vocab = 16 : i64}} {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  braid.param @wte normal(0.02) : tensor<16x8xf32>
  braid.param @up normal(0.02) {braid.global_shape = array<i64: 8, 32>, braid.split = [[], ["tp"]]} : tensor<8x16xf32>
  braid.param @up.b zeros {braid.global_shape = array<i64: 32>, braid.split = [["tp"]]} : tensor<16xf32>
  braid.param @down normal(0.02) {braid.global_shape = array<i64: 32, 8>, braid.split = [["tp"], []]} : tensor<16x8xf32>
  braid.param @down.b ones : tensor<8xf32>

  func.func @step(%tok: tensor<2x4xi32> {braid.global_shape = array<i64: 4, 4>, braid.split = [["dp"], []]},
                  %labels: tensor<2x4xi32> {braid.global_shape = array<i64: 4, 4>, braid.split = [["dp"], []]}) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<16x8xf32>
    %h = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32> loc("h")
    %up = braid.get_param @up : tensor<8x16xf32>
    %upb = braid.get_param @up.b : tensor<16xf32>
    %a = braid.linear %h, %up bias %upb : tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16xf32> -> tensor<2x4x16xf32> loc("a")
    %g = braid.gelu %a : tensor<2x4x16xf32> loc("g")
    %down = braid.get_param @down : tensor<16x8xf32>
    %partial = braid.linear %g, %down : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32> loc("partial")
    %sum = shard.all_reduce %partial on @grid grid_axes = [1] : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("sum")
    %downb = braid.get_param @down.b : tensor<8xf32>
    %y = braid.bias_add %sum, %downb : tensor<2x4x8xf32>, tensor<8xf32> loc("y")
    %logits = braid.linear %y, %wte transpose_weight : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32> loc("logits")
    %part = braid.cross_entropy %logits, %labels {denominator = 16 : i64} : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32> loc("part")
    %loss = shard.all_reduce %part on @grid grid_axes = [0] : tensor<f32> -> tensor<f32> loc("loss")
    return %loss : tensor<f32>
  }
}

// CHECK:      inline int64_t coord(braid_rt *rt, const char *axes) {
// CHECK:      inline void *advance(void *base, int64_t bytes) {

// CHECK-LABEL: void fn_step(
// CHECK:        braid_k_linear(rt, BRAID_F32, {{.*}}, 8, 8, 16, 0);
// CHECK:        braid_k_linear(rt, BRAID_F32, {{.*}}, 8, 16, 8, 0);
// CHECK:        braid_rt_op_begin(rt, "all_reduce", "sum");
// CHECK-NEXT:   [[E:ev\[[0-9]+\]]] = braid_all_reduce(rt, braid_rt_comm(rt, "tp"), at(arena, frame + [[PARTIAL:[0-9]+]]), at(arena, frame + [[SUM:[0-9]+]]), 64, BRAID_F32, BRAID_RED_SUM);
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_event_wait(rt, [[E]]);
// CHECK:        braid_rt_op_begin(rt, "bias_add", "y");
// CHECK-NEXT:   braid_k_bias_add(rt, BRAID_F32, at(arena, frame + [[SUM]]), at(arena, 1600), at(arena, frame + [[Y:[0-9]+]]), 64, 8);

// A cross-entropy with only a denominator: the vocabulary-parallel pieces
// on the whole vocabulary (offset 0, no reduction).
// CHECK:        braid_rt_op_begin(rt, "cross_entropy_row_max",
// CHECK-NEXT:   braid_k_ce_shard_max(rt, BRAID_F32, at(arena, frame + [[LOGITS:[0-9]+]]), static_cast<float *>(at(arena, frame + [[CE:[0-9]+]])), 8, 16, int64_t(0), 16);
// CHECK-NOT:    braid_all_reduce
// CHECK:        braid_k_ce_shard_stats(rt, BRAID_F32, BRAID_I32, at(arena, frame + [[LOGITS]]), args[1], static_cast<float *>(at(arena, frame + [[CE]])), static_cast<float *>(at(arena, frame + {{[0-9]+}})), 8, 16, int64_t(0), 16);
// CHECK-NOT:    braid_all_reduce
// CHECK:        braid_rt_op_begin(rt, "cross_entropy_from_stats", "part");
// The step's loss is computed in its result buffer and reduced there.
// CHECK-NEXT:   braid_k_ce_shard_loss(rt, {{.*}}, static_cast<float *>(results[0]), 8, 16);
// CHECK:        [[EL:ev\[[0-9]+\]]] = braid_all_reduce(rt, braid_rt_comm(rt, "dp"), results[0], results[0], 1, BRAID_F32, BRAID_RED_SUM);
// CHECK:        braid_event_wait(rt, [[EL]]);

// CHECK:      constexpr int64_t kGlobal0[] = {8, 32};
// CHECK-NEXT: const char *const kSplit0[] = {"", "tp"};
// CHECK:      constexpr int64_t kGlobal1[] = {32};
// CHECK-NEXT: const char *const kSplit1[] = {"tp"};
// CHECK:      constexpr int64_t kGlobal2[] = {32, 8};
// CHECK-NEXT: const char *const kSplit2[] = {"tp", ""};
// CHECK:      constexpr int64_t kGlobal3[] = {4, 4};
// CHECK-NEXT: const char *const kSplit3[] = {"dp", ""};
// CHECK:      const braid_tensor_desc kParams[] = {
// CHECK-NEXT:   {"wte", BRAID_F32, 2, kShape0, BRAID_INIT_NORMAL, 0.02, 0, 0},
// CHECK-NEXT:   {"up", BRAID_F32, 2, kShape1, BRAID_INIT_NORMAL, 0.02, 0, 512, kGlobal0, kSplit0},
// CHECK-NEXT:   {"up.b", BRAID_F32, 1, kShape2, BRAID_INIT_ZEROS, 0, 0, 1024, kGlobal1, kSplit1},
// One array per shape and per sharding: wte and down share {16, 8}, the
// tokens and labels their shape and sharding.
// CHECK-NEXT:   {"down", BRAID_F32, 2, kShape0, BRAID_INIT_NORMAL, 0.02, 0, 1088, kGlobal2, kSplit2},
// CHECK-NEXT:   {"down.b", BRAID_F32, 1, kShape3, BRAID_INIT_ONES, 0, 0, 1600},
// CHECK:      const braid_tensor_desc kInputs[] = {
// CHECK-NEXT:   {"tokens", BRAID_I32, 2, kShape4, BRAID_INIT_TOKENS, 0, 16, 1664, kGlobal3, kSplit3},
// CHECK-NEXT:   {"labels", BRAID_I32, 2, kShape4, BRAID_INIT_TOKENS, 0, 16, 1728, kGlobal3, kSplit3},
// CHECK:      void step(braid_rt *rt, char *arena) {
// CHECK-NOT:  braid_all_reduce
// CHECK:      }
// CHECK:      const braid_program kProgram = {"mlp-tp", {{[0-9]+}}, 5, kParams, 2, kInputs, {{[0-9]+}}, step, "dp=2,tp=2", 0, nullptr, nullptr, 0, nullptr, nullptr, BRAID_ENTRY_TRAIN_STEP, 1, kOutputs};
