// RUN: braid-translate --braid-to-cpp %s -split-input-file | FileCheck %s
// RUN: braid-translate --braid-to-cpp --braid-roll-repeats=false %s -split-input-file | FileCheck %s --check-prefix=PLAIN

// Four calls of one layer function print as one loop. The layers' parameters
// lie one after another (offset 320 + 512 * rep); the memory plan's
// ping-pong of the hidden state does not step evenly and goes to a table, one
// row per repetition, a column per distinct sequence (a buffer's allocation
// and the call writing it share one); the scope names are a table of strings.

// CHECK-LABEL: void fn_step(
// CHECK:         static const int64_t kRoll0[4][2] = {
// CHECK-NEXT:      {1024, 768},
// CHECK-NEXT:      {768, 1024},
// CHECK-NEXT:      {1024, 768},
// CHECK-NEXT:      {768, 1024},
// CHECK-NEXT:    };
// CHECK-NEXT:    static const char *const kRollNames0[4][2] = {
// CHECK-NEXT:      {"v3", "l0"},
// CHECK-NEXT:      {"v5", "l1"},
// CHECK-NEXT:      {"v7", "l2"},
// CHECK-NEXT:      {"v9", "l3"},
// CHECK-NEXT:    };
// CHECK:         braid_k_embedding(
// CHECK:         for (int64_t rep = 0; rep < 4; ++rep) {
// CHECK-NEXT:      braid_rt_alloc(rt, frame + kRoll0[rep][0], 256, kRollNames0[rep][0]);
// CHECK-NEXT:      {
// CHECK-NEXT:        braid_rt_push_scope(rt, kRollNames0[rep][1]);
// CHECK-NEXT:        void *const a[] = {(void *)at(arena, frame + kRoll0[rep][1]), (void *)at(arena, (320 + 512 * rep))};
// CHECK-NEXT:        void *const r[] = {(void *)at(arena, frame + kRoll0[rep][0])};
// CHECK-NEXT:        fn_layer(rt, arena, frame + 0, a, r);
// CHECK-NEXT:        braid_rt_pop_scope(rt);
// CHECK-NEXT:      }
// CHECK-NEXT:      braid_rt_free(rt, frame + kRoll0[rep][1], 256);
// CHECK-NEXT:    }
// CHECK-NEXT:    braid_rt_alloc(rt, frame + 0, 320, "logits");

// PLAIN-LABEL: void fn_step(
// PLAIN-NOT:     for (
// PLAIN-COUNT-4: fn_layer(rt, arena, frame + 0, a, r);
// PLAIN-NOT:     for (
// PLAIN:         }

module attributes {braid.model = {name = "mlp", family = "gpt", vocab = 10 : i64}} {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  braid.param @l0.up normal(0.02) : tensor<8x16xf32>
  braid.param @l1.up normal(0.02) : tensor<8x16xf32>
  braid.param @l2.up normal(0.02) : tensor<8x16xf32>
  braid.param @l3.up normal(0.02) : tensor<8x16xf32>

  func.func private @layer(%x: tensor<8x8xf32>, %up: tensor<8x16xf32>) -> tensor<8x8xf32> {
    %h = braid.linear %x, %up : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32> loc("h")
    %y = braid.linear %h, %up transpose_weight : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x8xf32> loc("y")
    %r = braid.add %x, %y : tensor<8x8xf32> loc("r")
    return %r : tensor<8x8xf32>
  }

  func.func @step(%tok: tensor<8xi32>, %labels: tensor<8xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tok, %wte : tensor<8xi32>, tensor<10x8xf32> -> tensor<8x8xf32> loc("h0")
    %u0 = braid.get_param @l0.up : tensor<8x16xf32>
    %h1 = func.call @layer(%h0, %u0) : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
    %u1 = braid.get_param @l1.up : tensor<8x16xf32>
    %h2 = func.call @layer(%h1, %u1) : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
    %u2 = braid.get_param @l2.up : tensor<8x16xf32>
    %h3 = func.call @layer(%h2, %u2) : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
    %u3 = braid.get_param @l3.up : tensor<8x16xf32>
    %h4 = func.call @layer(%h3, %u3) : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
    %logits = braid.linear %h4, %wte transpose_weight : tensor<8x8xf32>, tensor<10x8xf32> -> tensor<8x10xf32> loc("logits")
    %loss = braid.cross_entropy %logits, %labels : tensor<8x10xf32>, tensor<8xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Transfers repeat with their event slots: the slot steps with the
// repetition (ev[(1 + rep)]), so a start and its wait roll together; the
// parameters' offsets (each reduced in place: the value is set into it) and
// sizes go to the table. The loss's all-reduce (in place, in the step's
// result buffer) starts the chain: each repetition waits for the transfer
// before it and starts its own.

// CHECK-LABEL: void fn_step(
// CHECK:         braid_event *ev[4];
// CHECK:         ev[0] = braid_all_reduce(rt, braid_rt_comm(rt, "dp"), results[0], results[0], 1, BRAID_F32, BRAID_RED_SUM);
// CHECK:         for (int64_t rep = 0; rep < 3; ++rep) {
// CHECK:           braid_event_wait(rt, ev[(0 + rep)]);
// CHECK:           ev[(1 + rep)] = braid_all_reduce(rt, braid_rt_comm(rt, "dp"), at(arena, kRoll0[rep][0]), at(arena, kRoll0[rep][0]), kRoll0[rep][1], BRAID_F32, BRAID_RED_SUM);
// CHECK:         }
// CHECK:         braid_event_wait(rt, ev[3]);

// PLAIN-LABEL: void fn_step(
// PLAIN:         ev[1] = braid_all_reduce(
// PLAIN:         braid_event_wait(rt, ev[1]);
// PLAIN:         ev[2] = braid_all_reduce(
// PLAIN:         ev[3] = braid_all_reduce(

module attributes {braid.model = {name = "grads", family = "gpt", vocab = 16 : i64}} {
  shard.grid @grid(shape = 2) {braid.axes = ["dp"]}
  braid.param @wte normal(0.02) : tensor<16x8xf32>
  braid.param @a normal(0.02) : tensor<8x8xf32>
  braid.param @b normal(0.02) : tensor<8x16xf32>
  braid.param @c normal(0.02) : tensor<4x8xf32>

  func.func @step(%tok: tensor<2x4xi32> {braid.global_shape = array<i64: 4, 4>, braid.split = [["dp"], []]},
                  %labels: tensor<2x4xi32> {braid.global_shape = array<i64: 4, 4>, braid.split = [["dp"], []]}) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<16x8xf32>
    %h = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32> loc("h")
    %logits = braid.linear %h, %wte transpose_weight : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32> loc("logits")
    %part = braid.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32> loc("part")
    %loss, %t0 = dist.all_reduce %part on @grid grid_axes = [0] reduction = sum : tensor<f32> -> tensor<f32>
    dist.wait %t0
    %ga = braid.get_param @a : tensor<8x8xf32>
    %ra, %ta = dist.all_reduce %ga on @grid grid_axes = [0] reduction = sum : tensor<8x8xf32> -> tensor<8x8xf32>
    dist.wait %ta
    %gb = braid.get_param @b : tensor<8x16xf32>
    %rb, %tb = dist.all_reduce %gb on @grid grid_axes = [0] reduction = sum : tensor<8x16xf32> -> tensor<8x16xf32>
    dist.wait %tb
    %gc = braid.get_param @c : tensor<4x8xf32>
    %rc, %tc = dist.all_reduce %gc on @grid grid_axes = [0] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>
    dist.wait %tc
    braid.set_param @a, %ra : tensor<8x8xf32>
    braid.set_param @b, %rb : tensor<8x16xf32>
    braid.set_param @c, %rc : tensor<4x8xf32>
    return %loss : tensor<f32>
  }
}
