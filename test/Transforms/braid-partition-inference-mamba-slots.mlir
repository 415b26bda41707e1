// RUN: braid-opt --braid-partition="grid=tp=2 plan=data" %s | FileCheck %s --check-prefix=TP
// RUN: sed -e 's/shape = 2)/shape = 2x2)/' -e 's/split_axes = \[\[0\]\]/split_axes = [[1]]/' %s | braid-opt --braid-partition="grid=dp=2,tp=2 plan=data" | FileCheck %s --check-prefix=DP
// RUN: braid-opt --braid-partition="grid=cp=2 plan=data" %s | not braid-opt --convert-braid-to-dist 2>&1 | FileCheck %s --check-prefix=CP
// RUN: braid-opt --braid-training-pipeline="optimizer=none grid=tp=2" %s -o %t.mlir
// RUN: rm -rf %t.cpp && braid-translate --braid-to-cpp --braid-output-dir=%t.cpp %t.mlir -o /dev/null
// RUN: FileCheck %s --check-prefix=CPP < %t.cpp/prefill.cpp

// A serving prefill's Mamba steps with their sequences in state slots
// (braid.conv_step's and braid.scan_step's `slots`): the states hold 6 slots
// for 2 sequences. The sharding rules split the channels over tp as without
// slots, but never the slots: any sequence may name any slot, so the batch
// factor (split over dp) covers the rows, positions, last rows and slots,
// and the states keep their 6 slots on every rank.

// TP: braid.state @cache.conv zeros {braid.global_shape = array<i64: 6, 3, 8>, braid.split = {{\[}}[], [], ["tp"]]} : tensor<6x3x4xf32>
// TP: braid.state @cache.ssm zeros {braid.global_shape = array<i64: 6, 8, 4>, braid.split = {{\[}}[], ["tp"], []]} : tensor<6x4x4xf32>
// TP-LABEL: func.func @prefill(
// TP: braid.conv_step %{{.*}}, %{{.*}}, %{{.*}}, %arg1 last %arg2 slots %arg3 : tensor<6x3x4xf32>, tensor<2x8x4xf32>, tensor<4x4xf32>, tensor<2xi32>, tensor<2xi32> slots tensor<2xi32>
// TP: braid.scan_step {{.*}}, %arg1 last %arg2 slots %arg3 delta_softplus : tensor<6x4x4xf32>, tensor<2x8x4xf32>

// DP: braid.state @cache.conv zeros {braid.global_shape = array<i64: 6, 3, 8>, braid.split = {{\[}}[], [], ["tp"]]} : tensor<6x3x4xf32>
// DP-LABEL: func.func @prefill(
// DP-SAME: %arg3: tensor<1xi32> {braid.global_shape = array<i64: 2>, braid.split = {{\[}}["dp"]]}
// DP: braid.conv_step %{{.*}} slots %arg3 : tensor<6x3x4xf32>, tensor<1x8x4xf32>, tensor<4x4xf32>, tensor<1xi32>, tensor<1xi32> slots tensor<1xi32>
// DP: braid.scan_step {{.*}} slots %arg3 delta_softplus : tensor<6x4x4xf32>, tensor<1x8x4xf32>

// Under cp the prompt's 8 rows are split (chunks of 4 rows hold the
// convolution's 3-row halo), but the chunk ops carry states by sequence:
// a located error.
// CP: error: a Mamba state in slots is not split over cp (the prompt rows of a step with `slots` must stay whole)
// CP-NEXT: braid.conv_step

// The kernels are told the slots and the states' 6 slots (batch 2, 6 slots,
// 8 rows, 4 channels per tp rank, kernel 4); the descriptor names the input
// the driver fills.
// CPP: braid_k_conv_step(rt, BRAID_F32, {{.*}}, nullptr, static_cast<const int32_t *>(args[1]), static_cast<const int32_t *>(args[2]), static_cast<const int32_t *>(args[3]), {{.*}}, 2, 6, 8, 4, 4);
// CPP: braid_k_scan_step(rt, BRAID_F32, {{.*}}, static_cast<const int32_t *>(args[1]), static_cast<const int32_t *>(args[2]), static_cast<const int32_t *>(args[3]), {{.*}}, 6, braid::params(braid_scan_params{.batch = 2, .seq = 8, .channels = 4, .state = 4, .delta_softplus = static_cast<int32_t>(1)}));
// CPP: {"slots", BRAID_I32, 1,

module {
  shard.grid @grid(shape = 2)
  braid.param @embed normal(0.02) : tensor<16x8xf32>
  braid.param @conv_w normal(0.3) : tensor<8x4xf32>
  braid.param @A normal(0.1) : tensor<8x4xf32>
  braid.param @D ones : tensor<8xf32>
  braid.state @cache.conv zeros : tensor<6x3x8xf32>
  braid.state @cache.ssm zeros : tensor<6x8x4xf32>
  func.func @prefill(%tokens: tensor<2x8xi32>, %pos: tensor<2xi32>, %last: tensor<2xi32>, %slots: tensor<2xi32>) -> tensor<2x8x8xf32> attributes {braid.entry = "prefill"} {
    %e = braid.get_param @embed : tensor<16x8xf32>
    %x = braid.embedding %tokens, %e : tensor<2x8xi32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    %cs = braid.get_param @cache.conv : tensor<6x3x8xf32>
    %w0 = braid.get_param @conv_w : tensor<8x4xf32>
    // The channels split over tp (the annotation stands for a Mamba layer's
    // column-parallel input projection).
    %channels = shard.sharding @grid split_axes = [[0]] : !shard.sharding
    %w = shard.shard %w0 to %channels : tensor<8x4xf32>
    %y, %cs1 = braid.conv_step %cs, %x, %w, %pos last %last slots %slots : tensor<6x3x8xf32>, tensor<2x8x8xf32>, tensor<8x4xf32>, tensor<2xi32>, tensor<2xi32> slots tensor<2xi32>
    %h = braid.get_param @cache.ssm : tensor<6x8x4xf32>
    %A = braid.get_param @A : tensor<8x4xf32>
    %D = braid.get_param @D : tensor<8xf32>
    %B = braid.linear %y, %A : tensor<2x8x8xf32>, tensor<8x4xf32> -> tensor<2x8x4xf32>
    %z, %h1 = braid.scan_step %h, %y, %y, %A, %B, %B, %D, %pos last %last slots %slots delta_softplus : tensor<6x8x4xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<8xf32>, tensor<2xi32>, tensor<2xi32> slots tensor<2xi32>
    return %z : tensor<2x8x8xf32>
  }
}
