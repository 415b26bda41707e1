// RUN: braid-opt --braid-derive-inference %S/../../examples/mamba-tiny.mlir -o %t.mamba.mlir
// RUN: braid-opt --braid-partition="grid=cp=2" %t.mamba.mlir | FileCheck %s --check-prefix=CP2
// RUN: braid-opt --braid-partition="grid=cp=2" %t.mamba.mlir | braid-opt --convert-braid-to-dist | FileCheck %s --check-prefix=DIST
// RUN: braid-opt --braid-derive-inference %S/../../examples/hybrid-tiny.mlir | braid-opt --braid-partition="grid=cp=2,tp=2" | braid-opt --convert-braid-to-dist | FileCheck %s --check-prefix=CPTP
// RUN: braid-opt --braid-derive-inference="prompt-len=4" %S/../../examples/mamba-tiny.mlir | braid-opt --braid-partition="grid=cp=2" | FileCheck %s --check-prefix=SHORT
// RUN: braid-opt --braid-training-pipeline="optimizer=none grid=cp=2 lower-to-dist=false" --braid-test-inject-fault=kind=drop-cp-prefill-carry %t.mamba.mlir | braid-opt --convert-braid-to-dist | FileCheck %s --check-prefix=FAULT
// RUN: not braid-opt --braid-training-pipeline="optimizer=none grid=tp=2 lower-to-dist=false" --braid-test-inject-fault=kind=drop-cp-prefill-carry %t.mamba.mlir 2>&1 | FileCheck %s --check-prefix=NO-CP

// Context parallelism of a prefill's Mamba layers (PartitionCacheContext.cpp,
// MambaContext.cpp of BraidToDist): the prompt's 16 rows are split over cp=2
// as training splits its sequence, and each rank convolves and scans its own
// 8 rows; the conv and SSM states stay whole on every cp rank (decode reads
// them whole).

// CP2: braid.state @cache.layers.0.conv zeros : tensor<2x3x128xf32>
// CP2: braid.state @cache.layers.0.ssm zeros : tensor<2x128x16xf32>
// CP2-LABEL: func.func private @mamba_layer.prefill(
// CP2-SAME: %arg0: tensor<2x8x64xf32> {braid.global_shape = array<i64: 2, 16, 64>, braid.split = {{\[}}[], ["cp"], []]}
// CP2-NOT: shard.all_gather
// CP2: braid.conv_step %arg16, %{{.*}}, %arg4 bias %arg5, %arg14 last %arg15 {context_axes = ["cp"]} : tensor<2x3x128xf32>, tensor<2x8x128xf32>
// CP2-NOT: shard.all_gather
// CP2: braid.scan_step %arg17, {{.*}} last %arg15 delta_softplus {context_axes = ["cp"]} : tensor<2x128x16xf32>, tensor<2x8x128xf32>
// CP2-NOT: shard.all_slice
// CP2: return
// Decode's one token per sequence is not split: its steps read the states
// whole, with no transfer.
// CP2-LABEL: func.func private @mamba_layer.decode(
// CP2: braid.conv_step %arg15, %{{.*}} : tensor<2x3x128xf32>, tensor<2x1x128xf32>
// CP2-NOT: context_axes
// CP2: return

// The carry, as dist ops: the convolution's halo is the previous rank's
// last 3 inputs (dist.shift, zeros on the first rank, which starts from the
// cache's conv state); the scan's chunks' zero-start decays and final states
// are all-gathered and composed from the carried SSM state; each sequence's
// new states, taken on the rank holding its last row (%arg15), are
// all-gathered and copied into the states on every rank, in place.
// DIST-LABEL: func.func private @mamba_layer.prefill(
// DIST: %[[X:.*]] = braid.linear %{{.*}}, %arg2 : tensor<2x8x64xf32>, tensor<64x128xf32> -> tensor<2x8x128xf32>
// DIST: %[[C:.*]] = dist.coordinate on @grid grid_axes = [0] : index
// DIST: %[[FIRST:.*]] = arith.muli %[[C]], %{{.*}} : index
// DIST: %[[TAIL:.*]] = braid.tail %[[X]] : tensor<2x8x128xf32> -> tensor<2x3x128xf32>
// DIST-NEXT: %[[HALO:.*]], %[[T0:.*]] = dist.shift %[[TAIL]] on @grid grid_axes = [0] offset = 1 : tensor<2x3x128xf32> -> tensor<2x3x128xf32>
// DIST-NEXT: dist.wait %[[T0]]
// DIST-NEXT: %[[Y:.*]], %[[CS:.*]] = braid.conv_step_chunk %arg16, %[[HALO]], %[[X]], %arg4 bias %arg5, %arg14 last %arg15 at %[[FIRST]] of 16 : tensor<2x3x128xf32>, tensor<2x8x128xf32>, tensor<128x4xf32> bias tensor<128xf32>, tensor<2xi32>
// DIST-NEXT: %[[CSALL:.*]], %[[T1:.*]] = dist.all_gather %[[CS]] on @grid grid_axes = [0] gather_axis = 0 : tensor<2x3x128xf32> -> tensor<4x3x128xf32>
// DIST-NEXT: dist.wait %[[T1]]
// DIST-NEXT: braid.take_chunk_state %arg16, %[[CSALL]], %arg15 of 8 : tensor<2x3x128xf32>, tensor<4x3x128xf32>, tensor<2xi32>
// DIST: %[[HEND:.*]], %[[DECAY:.*]] = braid.scan_chunk_state %{{.*}} delta_softplus : {{.*}} -> (tensor<2x128x16xf32>, tensor<2x128x16xf32>)
// DIST-NEXT: %[[DECAYS:.*]], %[[T2:.*]] = dist.all_gather %[[DECAY]] on @grid grid_axes = [0] gather_axis = 0 : tensor<2x128x16xf32> -> tensor<4x128x16xf32>
// DIST-NEXT: %[[HENDS:.*]], %[[T3:.*]] = dist.all_gather %[[HEND]] on @grid grid_axes = [0] gather_axis = 0 : tensor<2x128x16xf32> -> tensor<4x128x16xf32>
// DIST-NEXT: dist.wait %[[T2]], %[[T3]]
// DIST-NEXT: %[[SY:.*]], %[[SS:.*]] = braid.scan_step_chunk %arg17, %[[DECAYS]], %[[HENDS]], {{.*}}, %arg14 last %arg15 at %{{.*}} of 16 delta_softplus : tensor<2x128x16xf32>, tensor<4x128x16xf32>, tensor<2x8x128xf32>
// DIST-NEXT: %[[SSALL:.*]], %[[T4:.*]] = dist.all_gather %[[SS]] on @grid grid_axes = [0] gather_axis = 0 : tensor<2x128x16xf32> -> tensor<4x128x16xf32>
// DIST-NEXT: dist.wait %[[T4]]
// DIST-NEXT: braid.take_chunk_state %arg17, %[[SSALL]], %arg15 of 8 : tensor<2x128x16xf32>, tensor<4x128x16xf32>, tensor<2xi32>
// DIST-NEXT: braid.glu silu %{{.*}}, %[[SY]] : tensor<2x8x128xf32>
// DIST: return

// The hybrid on cp=2 x tp=2: the states split with the channels over tp
// (64 of 128 per rank) and stay whole over cp; the carry runs over cp alone.
// CPTP: braid.state @cache.layers.0.conv zeros {braid.global_shape = array<i64: 2, 3, 128>, braid.split = {{\[}}[], [], ["tp"]]} : tensor<2x3x64xf32>
// CPTP: braid.state @cache.layers.0.ssm zeros {braid.global_shape = array<i64: 2, 128, 16>, braid.split = {{\[}}[], ["tp"], []]} : tensor<2x64x16xf32>
// CPTP-LABEL: func.func private @mamba_mlp_layer.prefill(
// CPTP: dist.shift %{{.*}} on @grid grid_axes = [0] offset = 1 : tensor<2x3x64xf32> -> tensor<2x3x64xf32>
// CPTP: braid.conv_step_chunk {{.*}} of 16 : tensor<2x3x64xf32>, tensor<2x8x64xf32>, tensor<64x4xf32> bias tensor<64xf32>, tensor<2xi32>
// CPTP: dist.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 0 : tensor<2x3x64xf32> -> tensor<4x3x64xf32>
// CPTP: braid.take_chunk_state {{.*}} of 8 : tensor<2x3x64xf32>, tensor<4x3x64xf32>, tensor<2xi32>
// CPTP: braid.scan_step_chunk {{.*}} of 16 delta_softplus : tensor<2x64x16xf32>, tensor<4x64x16xf32>, tensor<2x8x64xf32>
// CPTP: braid.take_chunk_state {{.*}} of 8 : tensor<2x64x16xf32>, tensor<4x64x16xf32>, tensor<2xi32>
// CPTP-LABEL: func.func private @mamba_mlp_layer.decode(
// CPTP-NOT: _chunk
// CPTP: return

// A prompt of 4 rows on cp=2 makes chunks of 2 rows, shorter than the
// convolution's halo of 3: prefill runs whole on every cp rank.
// SHORT-LABEL: func.func private @mamba_layer.prefill(
// SHORT-SAME: %arg0: tensor<2x4x64xf32>,
// SHORT: braid.conv_step %arg16, %{{.*}} : tensor<2x3x128xf32>, tensor<2x4x128xf32>
// SHORT-NOT: context_axes
// SHORT: return

// The negative test's fault: the earlier chunks' decays and final states are
// zeros, so each rank's chunk starts from the cache's state as if it were the
// first.
// FAULT-LABEL: func.func private @mamba_layer.prefill(
// FAULT: %[[Z0:.*]] = braid.fill 0.000000e+00 : tensor<4x128x16xf32>
// FAULT: %[[Z1:.*]] = braid.fill 0.000000e+00 : tensor<4x128x16xf32>
// FAULT: braid.scan_step_chunk %arg17, %[[Z0]], %[[Z1]],
// NO-CP: drop-cp-prefill-carry: no braid.scan_step with context_axes
