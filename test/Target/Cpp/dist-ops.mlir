// RUN: braid-translate --braid-to-cpp --braid-roll-repeats=false %s | FileCheck %s

// Every dist op family as the emitter prints it (EmitDist.cpp, a method per
// family): a transfer starts into its token's event slot, bracketed for the
// trace, and dist.wait waits for the slots; a broadcast first copies its
// input into the result (the runtime broadcasts in place); an open shift
// zeroes the result where it has no source; block and assemble copy blocks
// at the rank's coordinate; pack and unpack copy a bucket's blocks;
// microbatch copies a block of rows.

module attributes {braid.model = {name = "dist", family = "gpt", vocab = 16 : i64}} {
  shard.grid @grid(shape = 2x4) {braid.axes = ["dp", "tp"]}
  braid.param @wte normal(0.02) : tensor<16x8xf32>
  braid.param @a normal(0.02) : tensor<4x8xf32>
  braid.param @b normal(0.02) : tensor<6xf32>

  func.func @step(%tok: tensor<4x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<16x8xf32>
    %mb = dist.microbatch %tok[1 of 2] : tensor<4x4xi32> -> tensor<2x4xi32>
    %h = braid.embedding %mb, %wte : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32> loc("h")
    %logits = braid.linear %h, %wte transpose_weight : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32> loc("logits")
    %part = braid.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32> loc("part")
    %loss, %t0 = dist.all_reduce %part on @grid grid_axes = [0] reduction = sum : tensor<f32> -> tensor<f32>
    dist.wait %t0
    %ga = braid.get_param @a : tensor<4x8xf32>
    %bc, %tb = dist.broadcast %ga on @grid grid_axes = [0] root = 1 : tensor<4x8xf32> -> tensor<4x8xf32> loc("bc")
    %g, %tg = dist.all_gather %ga on @grid grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32> loc("g")
    %rs, %trs = dist.reduce_scatter %ga on @grid grid_axes = [0] reduction = max scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32> loc("rs")
    %e, %te = dist.all_to_all %ga on @grid grid_axes = [1] split_axis = 0 concat_axis = 0 : tensor<4x8xf32> -> tensor<4x8xf32> loc("e")
    dist.wait %tb, %tg, %trs, %te
    %s = dist.send %bc to 1 on @grid grid_axes = [0] : tensor<4x8xf32>
    %st = dist.send %bc to 1 on @grid grid_axes = [0] tag = 7 : tensor<4x8xf32>
    %r, %tr = dist.recv from 0 on @grid grid_axes = [0] : tensor<4x8xf32> loc("r")
    %r2, %tr2 = dist.recv from 0 on @grid grid_axes = [0] tag = 7 : tensor<4x8xf32> loc("r2")
    dist.wait %s, %st, %tr, %tr2
    %hl, %thl = dist.shift %r on @grid grid_axes = [1] offset = -1 : tensor<4x8xf32> -> tensor<4x8xf32> loc("hl")
    %hr, %thr = dist.shift %r on @grid grid_axes = [0, 1] offset = 2 : tensor<4x8xf32> -> tensor<4x8xf32> loc("hr")
    %k, %tk = dist.shift %r2 on @grid grid_axes = [1] offset = 1 cyclic : tensor<4x8xf32> -> tensor<4x8xf32> loc("k")
    dist.wait %thl, %thr, %tk
    %blk = dist.block %hl along 1 offset 1 on @grid grid_axes = [1] : tensor<4x8xf32> -> tensor<4x2xf32> loc("blk")
    %asm = dist.assemble %blk, %blk, %blk, %blk along 1 on @grid grid_axes = [1] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x8xf32> loc("asm")
    %gb = braid.get_param @b : tensor<6xf32>
    %p = dist.pack %asm, %gb parts 2 : tensor<4x8xf32>, tensor<6xf32> -> tensor<38xf32> loc("p")
    %u = dist.unpack %p offset 16 parts 2 : tensor<38xf32> -> tensor<6xf32> loc("u")
    braid.set_param @b, %u : tensor<6xf32>
    braid.set_param @a, %asm : tensor<4x8xf32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: void fn_step(
// CHECK:         braid_event *ev[12];
// CHECK:         braid_rt_op_begin(rt, "microbatch", "v1");
// CHECK-NEXT:    braid_rt_copy(rt, at(arena, frame + {{[0-9]+}}), static_cast<const char *>(args[0]) + 32, 32);
// CHECK-NEXT:    braid_rt_op_end(rt);
// CHECK:         ev[0] = braid_all_reduce(rt, braid_rt_comm(rt, "dp"), results[0], results[0], 1, BRAID_F32, BRAID_RED_SUM);
// CHECK-NEXT:    braid_rt_op_end(rt);
// CHECK-NEXT:    braid_event_wait(rt, ev[0]);
// CHECK:         braid_rt_op_begin(rt, "broadcast", "bc");
// CHECK-NEXT:    braid_rt_copy(rt, [[BC:at\(arena, frame \+ [0-9]+\)]], [[A:at\(arena, [0-9]+\)]], 128);
// CHECK-NEXT:    ev[1] = braid_broadcast(rt, braid_rt_comm(rt, "dp"), [[BC]], 32, BRAID_F32, 1);
// CHECK:         ev[2] = braid_all_gather(rt, braid_rt_comm(rt, "dp"), [[A]], {{.*}}, 32, BRAID_F32);
// CHECK:         ev[3] = braid_reduce_scatter(rt, braid_rt_comm(rt, "dp"), [[A]], {{.*}}, 16, BRAID_F32, BRAID_RED_MAX);
// CHECK:         ev[4] = braid_all_to_all(rt, braid_rt_comm(rt, "tp"), [[A]], {{.*}}, 8, BRAID_F32);
// CHECK:         braid_event_wait(rt, ev[1]);
// CHECK-NEXT:    braid_event_wait(rt, ev[2]);
// CHECK-NEXT:    braid_event_wait(rt, ev[3]);
// CHECK-NEXT:    braid_event_wait(rt, ev[4]);
// CHECK:         ev[5] = braid_send(rt, braid_rt_comm(rt, "dp"), [[BC]], 32, BRAID_F32, 1);
// CHECK:         ev[6] = braid_send_tagged(rt, braid_rt_comm(rt, "dp"), [[BC]], 32, BRAID_F32, 1, 7);
// CHECK:         ev[7] = braid_recv(rt, braid_rt_comm(rt, "dp"), [[R:at\(arena, frame \+ [0-9]+\)]], 32, BRAID_F32, 0);
// CHECK:         ev[8] = braid_recv_tagged(rt, braid_rt_comm(rt, "dp"), {{.*}}, 32, BRAID_F32, 0, 7);
// CHECK:         braid_rt_op_begin(rt, "shift", "hl");
// CHECK-NEXT:    if (((coord(rt, "tp") + 1) < 4 ? (coord(rt, "tp") + 1) : -1) < 0) braid_k_zero(rt, BRAID_F32, [[HL:at\(arena, frame \+ [0-9]+\)]], 32);
// CHECK-NEXT:    ev[9] = braid_sendrecv(rt, braid_rt_comm(rt, "tp"), [[R]], 32, ((coord(rt, "tp") - 1) >= 0 ? (coord(rt, "tp") - 1) : -1), [[HL]], 32, ((coord(rt, "tp") + 1) < 4 ? (coord(rt, "tp") + 1) : -1), BRAID_F32);
// CHECK:         ev[10] = braid_sendrecv(rt, braid_rt_comm(rt, "dp,tp"), [[R]], 32, ((coord(rt, "dp,tp") + 2) < 8 ? (coord(rt, "dp,tp") + 2) : -1),
// CHECK:         braid_rt_op_begin(rt, "shift", "k");
// CHECK-NEXT:    ev[11] = braid_sendrecv(rt, braid_rt_comm(rt, "tp"), {{.*}}, 32, (coord(rt, "tp") + 1) % 4, {{.*}}, 32, (coord(rt, "tp") + 3) % 4, BRAID_F32);
// CHECK:         braid_rt_op_begin(rt, "block", "blk");
// CHECK-NEXT:    braid_k_slice(rt, BRAID_F32, [[HL]], [[BLK:at\(arena, frame \+ [0-9]+\)]], 4, 8, 2, 1, ((coord(rt, "tp") + 1) % 4) * 2);
// CHECK:         braid_rt_op_begin(rt, "assemble", "asm");
// CHECK-NEXT:    braid_k_place(rt, BRAID_F32, [[BLK]], [[ASM:at\(arena, frame \+ [0-9]+\)]], 4, 8, 2, 1, ((coord(rt, "tp") + 0) % 4) * 2);
// CHECK-NEXT:    braid_k_place(rt, BRAID_F32, [[BLK]], [[ASM]], 4, 8, 2, 1, ((coord(rt, "tp") + 1) % 4) * 2);
// CHECK-NEXT:    braid_k_place(rt, BRAID_F32, [[BLK]], [[ASM]], 4, 8, 2, 1, ((coord(rt, "tp") + 2) % 4) * 2);
// CHECK-NEXT:    braid_k_place(rt, BRAID_F32, [[BLK]], [[ASM]], 4, 8, 2, 1, ((coord(rt, "tp") + 3) % 4) * 2);
// CHECK-NEXT:    braid_rt_op_end(rt);
// Block r of each input after block r of the ones before it.
// CHECK:         braid_rt_op_begin(rt, "pack", "p");
// CHECK-NEXT:    braid_rt_copy(rt, static_cast<char *>([[P:at\(arena, frame \+ [0-9]+\)]]) + 0, static_cast<const char *>([[ASM]]) + 0, 64);
// CHECK-NEXT:    braid_rt_copy(rt, static_cast<char *>([[P]]) + 64, static_cast<const char *>([[B:at\(arena, [0-9]+\)]]) + 0, 12);
// CHECK-NEXT:    braid_rt_copy(rt, static_cast<char *>([[P]]) + 76, static_cast<const char *>([[ASM]]) + 64, 64);
// CHECK-NEXT:    braid_rt_copy(rt, static_cast<char *>([[P]]) + 140, static_cast<const char *>([[B]]) + 12, 12);
// CHECK-NEXT:    braid_rt_op_end(rt);
// The memory plan unpacks straight into @b: set_param @b copies nothing.
// CHECK:         braid_rt_op_begin(rt, "unpack", "u");
// CHECK-NEXT:    braid_rt_copy(rt, static_cast<char *>([[B]]) + 0, static_cast<const char *>([[P]]) + 64, 12);
// CHECK-NEXT:    braid_rt_copy(rt, static_cast<char *>([[B]]) + 12, static_cast<const char *>([[P]]) + 140, 12);
// CHECK:         braid_rt_op_begin(rt, "set_param", "");
// CHECK-NEXT:    braid_rt_copy(rt, [[A]], [[ASM]], 128);
// CHECK-NEXT:    braid_rt_op_end(rt);
// CHECK-NOT:     braid_rt_op_begin(rt, "set_param"
// CHECK:         }
