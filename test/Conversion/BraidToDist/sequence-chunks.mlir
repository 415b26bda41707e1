// RUN: braid-opt %s --convert-braid-to-dist -split-input-file | FileCheck %s
// RUN: braid-opt %s --convert-braid-to-dist -split-input-file --mlir-print-op-generic | braid-opt -split-input-file | FileCheck %s

// The convolution over this rank's chunk takes the previous chunk's last
// K-1 rows (zeros on the first rank: the shift has open ends); its gradient
// shifts the halo's cotangent back and adds it into the chunk's last rows.
// CHECK-LABEL: func.func @conv
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xf32>, %[[W:.*]]: tensor<16x4xf32>, %[[B:.*]]: tensor<16xf32>, %[[DY:.*]]: tensor<2x8x16xf32>)
// CHECK: %[[T:.*]] = braid.tail %[[X]] : tensor<2x8x16xf32> -> tensor<2x3x16xf32>
// CHECK: %[[H:.*]], %[[TH:.*]] = dist.shift %[[T]] on @grid grid_axes = [0] offset = 1 : tensor<2x3x16xf32> -> tensor<2x3x16xf32>
// CHECK-NEXT: dist.wait %[[TH]]
// CHECK: %[[Y:.*]] = braid.conv1d_halo %[[X]], %[[H]], %[[W]] bias %[[B]]
// CHECK: %[[T2:.*]] = braid.tail %[[X]]
// CHECK: %[[H2:.*]], %{{.*}} = dist.shift %[[T2]] {{.*}} offset = 1 :
// CHECK: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]], %[[DH:.*]] = braid.conv1d_halo_grad %[[X]], %[[H2]], %[[W]], %[[DY]]
// CHECK: %[[NEXT:.*]], %[[TN:.*]] = dist.shift %[[DH]] on @grid grid_axes = [0] offset = -1 : tensor<2x3x16xf32>
// CHECK-NEXT: dist.wait %[[TN]]
// CHECK: %[[DX2:.*]] = braid.add_tail %[[DX]], %[[NEXT]] : tensor<2x8x16xf32>, tensor<2x3x16xf32>
// CHECK: return %[[Y]], %[[DX2]], %[[DW]], %[[DB]]
shard.grid @grid(shape = 2) {braid.axes = ["cp"]}
func.func @conv(%x: tensor<2x8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<16xf32>, %dy: tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<16xf32>) {
  %y = braid.conv1d %x, %w bias %b {context_axes = ["cp"]} : tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %dx, %dw, %db = braid.conv1d_grad %x, %w, %dy {context_axes = ["cp"]} : tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<16xf32>
  return %y, %dx, %dw, %db : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<16xf32>
}

// -----

// The scan from the state the previous chunks leave: every chunk's
// zero-start final state and decay, gathered and composed into this
// chunk's entering state. The gradient: the chunk's own backward from that
// state, the entering states' cotangents gathered and carried back to this
// chunk's final state and decay, and what flows through the zero-start
// pass added.
// CHECK-LABEL: func.func @scan
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x8x16xf32>, %[[D:[^:]*]]: tensor<2x8x16xf32>, %[[A:[^:]*]]: tensor<16x4xf32>, %[[B:[^:]*]]: tensor<2x8x4xf32>, %[[C:[^:]*]]: tensor<2x8x4xf32>, %[[DD:[^:]*]]: tensor<16xf32>, %[[DY:[^:]*]]: tensor<2x8x16xf32>)
// CHECK: %[[HE:.*]], %[[DE:.*]] = braid.scan_chunk_state %[[X]], %[[D]], %[[A]], %[[B]], %[[C]], %[[DD]] delta_softplus : {{.*}} -> (tensor<2x16x4xf32>, tensor<2x16x4xf32>)
// CHECK: %[[HA:.*]], %[[T1:.*]] = dist.all_gather %[[HE]] on @grid grid_axes = [0] gather_axis = 0 : tensor<2x16x4xf32> -> tensor<4x16x4xf32>
// CHECK: %[[DA:.*]], %[[T2:.*]] = dist.all_gather %[[DE]] on @grid grid_axes = [0] gather_axis = 0
// CHECK-NEXT: dist.wait %[[T1]], %[[T2]]
// CHECK: %[[CH:.*]] = dist.coordinate on @grid grid_axes = [0] : index
// CHECK: %[[H0:.*]] = braid.scan_carry %[[DA]], %[[HA]] chunk %[[CH]] : tensor<4x16x4xf32> -> tensor<2x16x4xf32>
// CHECK: %[[Y:.*]] = braid.scan_chunk %[[X]], %[[D]], %[[A]], %[[B]], %[[C]], %[[DD]] from %[[H0]] delta_softplus
// CHECK: braid.scan_chunk_state
// CHECK: %[[GH0:.*]] = braid.scan_carry
// CHECK: %[[G0:[^,]*]], %[[G1:[^,]*]], %[[G2:[^,]*]], %[[G3:[^,]*]], %[[G4:[^,]*]], %[[G5:[^,]*]], %[[DH0:[^,]*]] = braid.scan_chunk_grad %[[X]], %[[D]], %[[A]], %[[B]], %[[C]], %[[DD]] from %[[GH0]], %[[DY]] delta_softplus
// CHECK: %[[DHA:.*]], %[[T3:.*]] = dist.all_gather %[[DH0]] on @grid grid_axes = [0] gather_axis = 0
// CHECK-NEXT: dist.wait %[[T3]]
// CHECK: %[[DDECAY:.*]], %[[DHEND:.*]] = braid.scan_carry_grad %{{.*}}, %{{.*}}, %[[DHA]] chunk
// CHECK: %[[S0:[^,]*]], %[[S1:[^,]*]], %[[S2:[^,]*]], %[[S3:[^,]*]], %[[S4:[^,]*]], %[[S5:[^,]*]] = braid.scan_chunk_state_grad %[[X]], %[[D]], %[[A]], %[[B]], %[[C]], %[[DD]], %[[DHEND]], %[[DDECAY]] into %[[G0]], %[[G1]], %[[G2]], %[[G3]], %[[G4]], %[[G5]] delta_softplus
// CHECK: return %[[Y]], %[[S0]], %[[S1]], %[[S2]], %[[S3]], %[[S4]], %[[S5]]
shard.grid @grid(shape = 2) {braid.axes = ["cp"]}
func.func @scan(%x: tensor<2x8x16xf32>, %d: tensor<2x8x16xf32>, %a: tensor<16x4xf32>, %b: tensor<2x8x4xf32>, %c: tensor<2x8x4xf32>, %dd: tensor<16xf32>, %dy: tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32>) {
  %y = braid.selective_scan %x, %d, %a, %b, %c, %dd delta_softplus {context_axes = ["cp"]} : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %g:6 = braid.selective_scan_grad %x, %d, %a, %b, %c, %dd, %dy delta_softplus {context_axes = ["cp"]} : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32>
  return %y, %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32>
}
