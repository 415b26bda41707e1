// RUN: braid-opt %s --convert-braid-to-dist -mlir-print-debuginfo | braid-translate --braid-to-cpp | FileCheck %s

// ZeRO over dp: each rank updates its range [c L, (c + 1) L) of the flat
// parameter (c = coord(dp), L = numel / 2) with moments of shape [L], reading
// its range of a whole gradient (ZeRO-1) or a gradient already reduced to
// its range (ZeRO-2), then all-gathers the parameter in place (send = this
// rank's range of the parameter, a view of it; recv = the parameter). A
// ZeRO-2 gradient is dumped as a slice of the flat gradient.

module attributes {braid.model = {name = "zero", family = "gpt", vocab = 16 : i64}} {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  braid.param @wte normal(0.02) : tensor<16x8xf32>
  braid.param @w normal(0.02) {braid.global_shape = array<i64: 8, 12>, braid.split = [[], ["tp"]]} : tensor<8x6xf32>
  braid.param @b zeros : tensor<6xf32>
  braid.state @opt.step zeros : tensor<f32>
  braid.state @opt.m.wte zeros {braid.global_shape = array<i64: 128>, braid.split = [["dp"]]} : tensor<64xf32>
  braid.state @opt.v.wte zeros {braid.global_shape = array<i64: 128>, braid.split = [["dp"]]} : tensor<64xf32>
  braid.state @opt.m.w zeros : tensor<24xf32>
  braid.state @opt.v.w zeros : tensor<24xf32>

  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<16x8xf32>
    %h = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<16x8xf32> -> tensor<2x4x8xf32> loc("h")
    %logits = braid.linear %h, %wte transpose_weight : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32> loc("logits")
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32> loc("loss")
    %gwte = braid.embedding_grad %tok, %h : tensor<2x4xi32>, tensor<2x4x8xf32> -> tensor<16x8xf32> loc("grad.wte")
    %gwfull = braid.fill 5.000000e-01 : tensor<8x6xf32> loc("gwfull")
    %flat = braid.reshape %gwfull : tensor<8x6xf32> -> tensor<48xf32>
    %gw = shard.reduce_scatter %flat on @grid grid_axes = [0] scatter_axis = 0 : tensor<48xf32> -> tensor<24xf32> loc("grad.w")
    %gb = braid.fill 2.500000e-01 : tensor<6xf32> loc("grad.b")
    %ss = braid.sum_squares %gwte, %gw, %gb : tensor<16x8xf32>, tensor<24xf32>, tensor<6xf32> -> tensor<f32>
    %coef = braid.clip_coefficient %ss max_norm 1.000000e+00 : tensor<f32>
    braid.increment @opt.step
    braid.adamw_update @wte, %gwte, %coef moments @opt.m.wte, @opt.v.wte step @opt.step {beta1 = 9.000000e-01 : f64, beta2 = 0.95 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-01 : f64, zero_axes = ["dp"]} : tensor<16x8xf32>, tensor<f32>
    braid.adamw_update @w, %gw, %coef moments @opt.m.w, @opt.v.w step @opt.step {beta1 = 9.000000e-01 : f64, beta2 = 0.95 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 0.000000e+00 : f64, zero_axes = ["dp"]} : tensor<24xf32>, tensor<f32>
    braid.sgd_update @b, %gb, %coef {lr = 5.000000e-01 : f64, weight_decay = 0.000000e+00 : f64, zero_axes = ["dp"]} : tensor<6xf32>, tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: void fn_step(
// CHECK:        static const int64_t [[WSHAPE:kA[0-9]+]][] = {8, 6};
// CHECK-NEXT:   static const int64_t [[WGLOBAL:kA[0-9]+]][] = {8, 12};
// CHECK-NEXT:   static const char *const [[WSPLIT:kS[0-9]+]][] = {"", "tp"};

// A whole gradient of an unsharded parameter: a plain dump.
// CHECK:        braid_rt_value(rt, nullptr, "grad.wte", {{.*}}, BRAID_F32, 2, {{.*}});
// CHECK:        [[E:ev\[[0-9]+\]]] = braid_reduce_scatter(rt, braid_rt_comm(rt, "dp"), at(arena, frame + {{[0-9]+}}), at(arena, frame + [[GW:[0-9]+]]), 24, BRAID_F32, BRAID_RED_SUM);
// CHECK-NEXT:   braid_rt_op_end(rt);
// CHECK-NEXT:   braid_event_wait(rt, [[E]]);
// w is split over tp: its gradient's range is gathered over dp into the
// [8, 6] block, which then lies in the [8, 12] gradient as w does.
// CHECK-NEXT:   braid_rt_value_zero_sharded(rt, nullptr, "grad.w", at(arena, frame + [[GW]]), BRAID_F32, 24, "dp", 2, [[WSHAPE]], [[WGLOBAL]], [[WSPLIT]]);

// ZeRO-1: this rank's range of the whole gradient (64 elements at offset
// coord(dp) * 64, 256 bytes), then (--convert-braid-to-dist) the range is
// all-gathered into the parameter from a view of it: nothing is copied, the
// plan stores the gathered parameter in the parameter, so braid.set_param
// copies nothing either, and this rank's block is in place (the runtime
// sends it with MPI_IN_PLACE, as NCCL takes it).
// CHECK:        braid_rt_op_begin(rt, "adamw_update", "");
// CHECK-NEXT:   braid_k_adamw_update(rt, BRAID_F32, advance(at(arena, 0), (coord(rt, "dp") * int64_t(64)) * 4), advance(at(arena, frame + [[GWTE:[0-9]+]]), (coord(rt, "dp") * int64_t(64)) * 4), static_cast<float *>(at(arena, [[MWTE:[0-9]+]])), static_cast<float *>(at(arena, [[VWTE:[0-9]+]])), static_cast<const float *>(at(arena, frame + [[COEF:[0-9]+]])), static_cast<const float *>(at(arena, [[STEP:[0-9]+]])), 64, braid::params(braid_adamw_params{.lr = 0.001, .beta1 = 0.90000000000000002, .beta2 = 0.94999999999999996, .eps = 1e-08, .weight_decay = 0.10000000000000001}));
// CHECK-NOT:    braid_rt_copy
// CHECK:        [[E1:ev\[[0-9]+\]]] = braid_all_gather(rt, braid_rt_comm(rt, "dp"), advance(at(arena, 0), ((coord(rt, "dp") * int64_t(64))) * 4), at(arena, 0), 64, BRAID_F32);
// CHECK:        braid_event_wait(rt, [[E1]]);
// CHECK-NOT:    braid_rt_op_begin(rt, "set_param"

// ZeRO-2: the gradient is the range already.
// CHECK:        braid_k_adamw_update(rt, BRAID_F32, advance(at(arena, 512), (coord(rt, "dp") * int64_t(24)) * 4), at(arena, frame + [[GW]]), {{.*}}, 24, braid::params(braid_adamw_params{.lr = 0.001, .beta1 = 0.90000000000000002, .beta2 = 0.94999999999999996, .eps = 1e-08, .weight_decay = 0}));
// CHECK:        braid_all_gather(rt, braid_rt_comm(rt, "dp"), advance(at(arena, 512), ((coord(rt, "dp") * int64_t(24))) * 4), at(arena, 512), 24, BRAID_F32);

// CHECK:        braid_k_sgd_update(rt, BRAID_F32, advance(at(arena, 704), (coord(rt, "dp") * int64_t(3)) * 4), advance(at(arena, frame + {{[0-9]+}}), (coord(rt, "dp") * int64_t(3)) * 4), static_cast<const float *>(at(arena, frame + [[COEF]])), 3, 0.5, 0);
// CHECK:        braid_all_gather(rt, braid_rt_comm(rt, "dp"), advance(at(arena, 704), ((coord(rt, "dp") * int64_t(3))) * 4), at(arena, 704), 3, BRAID_F32);

// CHECK:      {"opt.m.wte", BRAID_F32, 1, {{.*}}, BRAID_INIT_ZEROS, 0, 0, [[MWTE]], kGlobal{{[0-9]+}}, kSplit{{[0-9]+}}},
