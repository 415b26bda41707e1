// The Mamba states of the inference programs under --braid-partition on dp x tp:
// a state splits with its sequences over dp and with the channels (d_inner) over
// tp, as the convolution's and the scan's channels do (braid.conv_step's and
// braid.scan_step's sharding rules); B and C of the scan are whole on each rank
// (summed over tp after their row-parallel projections), so a rank's steps
// read and update its own channels' states with no other transfer.
// RUN: braid-opt --braid-derive-inference %S/../../examples/mamba-tiny.mlir | braid-opt --braid-partition="grid=dp=2,tp=2" | FileCheck %s

// CHECK: braid.state @cache.layers.0.conv zeros {braid.global_shape = array<i64: 2, 3, 128>, braid.split = {{\[}}["dp"], [], ["tp"]]} : tensor<1x3x64xf32>
// CHECK: braid.state @cache.layers.0.ssm zeros {braid.global_shape = array<i64: 2, 128, 16>, braid.split = {{\[}}["dp"], ["tp"], []]} : tensor<1x64x16xf32>

// CHECK-LABEL: func.func private @mamba_layer.decode(
// CHECK:         %[[Y:.*]], %{{.*}} = braid.conv_step %{{.*}} : tensor<1x3x64xf32>, tensor<1x1x64xf32>, tensor<64x4xf32> bias tensor<64xf32>, tensor<1xi32>
// CHECK-NOT:     shard.all_gather
// CHECK:         %[[B:.*]] = shard.all_reduce %{{.*}} grid_axes = [1] : tensor<1x1x16xf32>
// CHECK:         %[[C:.*]] = shard.all_reduce %{{.*}} grid_axes = [1] : tensor<1x1x16xf32>
// CHECK:         braid.scan_step %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[B]], %[[C]], %{{.*}}, %{{.*}} delta_softplus : tensor<1x64x16xf32>, tensor<1x1x64xf32>
