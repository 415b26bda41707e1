// RUN: braid-opt --braid-derive-inference %S/../../examples/moe-tiny.mlir | braid-opt --braid-partition="grid=ep=2" | FileCheck %s --check-prefix=EP2
// RUN: braid-opt --braid-derive-inference="batch=4" %S/../../examples/moe-tiny.mlir | braid-opt --braid-partition="grid=dp=2,ep=2" | FileCheck %s --check-prefix=DPEP
// RUN: braid-opt --braid-derive-inference %S/../../examples/moe-tiny.mlir | braid-opt --braid-training-pipeline="optimizer=none grid=ep=2" -o %t.ep2.mlir
// RUN: FileCheck %s --check-prefix=DIST < %t.ep2.mlir
// RUN: rm -rf %t.ep2 && braid-translate --braid-to-cpp --braid-output-dir=%t.ep2 %t.ep2.mlir
// RUN: FileCheck %s --check-prefix=CPP < %t.ep2/decode.cpp
// RUN: braid-opt --braid-derive-inference="batch=1" %S/../../examples/moe-tiny.mlir | not braid-opt --braid-partition="grid=ep=2" 2>&1 | FileCheck %s --check-prefix=ONE

// Expert parallelism in the inference programs (issue 42). Tokens split over
// ep with their sequences (the cache too); each rank holds its experts'
// weights. A dispatch that drops nothing has one capacity group per token, so
// every rank fills its own tokens' slots, the expert buffers go to their
// experts' ranks by all-to-all and come back by all-to-all before the combine:
// a decode step sends each rank's one token per sequence.
// EP2: braid.param @layers.0.moe.w_up normal(2.000000e-02) {braid.global_shape = array<i64: 4, 64, 128>, braid.split = {{\[}}["ep"], [], []]} : tensor<2x64x128xf32>
// EP2: braid.state @cache.layers.0.k zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}["ep"], [], [], []]} : tensor<1x16x2x16xf32>
// EP2-LABEL: func.func private @moe_layer.prefill(
// EP2: %[[D:.*]] = braid.dispatch %{{.*}} group_size 1 : tensor<16x64xf32>, tensor<16x2xi32> -> tensor<4x16x64xf32>
// EP2-NEXT: %[[X:.*]] = shard.all_to_all %[[D]] on @grid grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<4x16x64xf32> -> tensor<2x32x64xf32>
// EP2-NEXT: %[[E:.*]] = braid.expert_ffn silu %[[X]], {{.*}} : tensor<2x32x64xf32>, tensor<2x64x128xf32>, tensor<2x128x64xf32>, tensor<2x64x128xf32> -> tensor<2x32x64xf32>
// EP2-NEXT: %[[B:.*]] = shard.all_to_all %[[E]] on @grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x32x64xf32> -> tensor<4x16x64xf32>
// EP2-NEXT: braid.combine %[[B]], {{.*}} group_size 1 : tensor<4x16x64xf32>, tensor<16x2xf32>, tensor<16x2xi32> -> tensor<16x64xf32>
// EP2-LABEL: func.func private @moe_layer.decode(
// EP2-SAME: %arg0: tensor<1x1x64xf32> {braid.global_shape = array<i64: 2, 1, 64>, braid.split = {{\[}}["ep"], [], []]}
// EP2: %[[D:.*]] = braid.dispatch %{{.*}} group_size 1 : tensor<1x64xf32>, tensor<1x2xi32> -> tensor<4x1x64xf32>
// EP2-NEXT: %[[X:.*]] = shard.all_to_all %[[D]] on @grid grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<4x1x64xf32> -> tensor<2x2x64xf32>
// EP2-NEXT: %[[E:.*]] = braid.expert_ffn silu %[[X]], {{.*}} -> tensor<2x2x64xf32>
// EP2-NEXT: %[[B:.*]] = shard.all_to_all %[[E]] on @grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x2x64xf32> -> tensor<4x1x64xf32>
// EP2-NEXT: braid.combine %[[B]], {{.*}} group_size 1 : tensor<4x1x64xf32>, tensor<1x2xf32>, tensor<1x2xi32> -> tensor<1x64xf32>
// EP2-LABEL: func.func private @moe_layer.forward(
// EP2: braid.dispatch %{{.*}} group_size 1 : tensor<16x64xf32>, tensor<16x2xi32> -> tensor<4x16x64xf32>
// EP2-NEXT: shard.all_to_all {{.*}} grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<4x16x64xf32> -> tensor<2x32x64xf32>
// EP2-LABEL: func.func @decode(
// EP2-SAME: %arg0: tensor<1x1xi32> {braid.global_shape = array<i64: 2, 1>, braid.split = {{\[}}["ep"], []]}
// EP2: shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 0 : tensor<1x97xf32> -> tensor<2x97xf32>

// dp x ep: the sequences split over both axes, the experts over ep alone;
// the exchanges stay within an ep group.
// DPEP: braid.param @layers.0.moe.w_up {{.*}}braid.split = {{\[}}["ep"], [], []]} : tensor<2x64x128xf32>
// DPEP: braid.state @cache.layers.0.k zeros {braid.global_shape = array<i64: 4, 16, 2, 16>, braid.split = {{\[}}["dp", "ep"], [], [], []]} : tensor<1x16x2x16xf32>
// DPEP-LABEL: func.func private @moe_layer.decode(
// DPEP: braid.dispatch %{{.*}} group_size 1 : tensor<1x64xf32>, tensor<1x2xi32> -> tensor<4x1x64xf32>
// DPEP-NEXT: shard.all_to_all {{.*}} grid_axes = [1] split_axis = 0 concat_axis = 1 : tensor<4x1x64xf32> -> tensor<2x2x64xf32>
// DPEP: shard.all_to_all {{.*}} grid_axes = [1] split_axis = 1 concat_axis = 0 : tensor<2x2x64xf32> -> tensor<4x1x64xf32>

// Through the forward-only lowering: the exchanges are dist ops, each waited
// on before the expert FFN (expanded into batched matmuls) reads it.
// DIST-LABEL: func.func private @moe_layer.decode(
// DIST: braid.dispatch %{{.*}} group_size 1 : tensor<1x64xf32>, tensor<1x2xi32> -> tensor<4x1x64xf32>
// DIST: %[[R:.*]], %[[T:.*]] = dist.all_to_all %{{.*}} on @grid grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<2x128xf32> -> tensor<2x128xf32>
// DIST-NEXT: dist.wait %[[T]]
// DIST: braid.batch_matmul %{{.*}} : tensor<2x2x64xf32>, tensor<2x64x128xf32> -> tensor<2x2x128xf32>
// DIST: dist.all_to_all %{{.*}} on @grid grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<2x128xf32> -> tensor<2x128xf32>
// DIST: braid.combine %{{.*}} group_size 1 : tensor<4x1x64xf32>, tensor<1x2xf32>, tensor<1x2xi32> -> tensor<1x64xf32>

// The emitted decode: one token per rank, one slot per expert in one group,
// the buffers exchanged over the ep communicator.
// CPP: braid_k_dispatch(rt, BRAID_F32, {{.*}}, 1, 64, 2, 4, 1, 1);
// CPP: braid_all_to_all(rt, braid_rt_comm(rt, "ep"), {{.*}}, 128, BRAID_F32);
// CPP: braid_all_to_all(rt, braid_rt_comm(rt, "ep"), {{.*}}, 128, BRAID_F32);
// CPP: braid_k_combine(rt, BRAID_F32, {{.*}}, 1, 64, 2, 4, 1, 1);

// One sequence cannot be split over two ep ranks: a located error.
// ONE: error: cannot split dimension 0 of 'tensor<1x16x2x16xf32>' over ep (2 ranks): 1 is not a multiple of 2
