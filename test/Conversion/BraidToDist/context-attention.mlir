// RUN: braid-opt %s --convert-braid-to-dist -split-input-file | FileCheck %s
// RUN: braid-opt %s --convert-braid-to-dist -split-input-file --mlir-print-op-generic | braid-opt -split-input-file | FileCheck %s
// RUN: braid-opt %s --convert-braid-to-dist -split-input-file -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// Ring attention on rank c of 2: the queries' positions are those of chunk
// c (zigzag order); the rank's own key/value block is computed while it
// shifts on to c + 1 (the next block arriving from c - 1), then the block
// of chunk (c + 1) mod 2, merged into the running result.
// CHECK-LABEL: func.func @ring
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x4xf32>, %[[K:.*]]: tensor<2x4x2x4xf32>, %[[V:.*]]: tensor<2x4x2x4xf32>)
// CHECK: %[[C:.*]] = dist.coordinate on @grid grid_axes = [0] : index
// CHECK: %[[QS:.*]] = arith.muli %[[C]], %{{.*}} : index
// CHECK: %[[QP:.*]] = braid.sequence_positions %[[QS]] of 8 {zigzag = 2 : i64} : tensor<4xi64>
// CHECK: %[[K1:.*]], %[[TK:.*]] = dist.shift %[[K]] on @grid grid_axes = [0] offset = 1 cyclic
// CHECK: %[[V1:.*]], %[[TV:.*]] = dist.shift %[[V]] on @grid grid_axes = [0] offset = 1 cyclic
// CHECK: %[[KP0:.*]] = braid.sequence_positions %{{.*}} of 8 {zigzag = 2 : i64}
// CHECK: %[[O0:.*]], %[[L0:.*]] = braid.attention_block %[[Q]], %[[K]], %[[V]], %[[QP]], %[[KP0]] causal scale 5.000000e-01 {rope_theta = 1.000000e+04 : f64}
// CHECK-NEXT: dist.wait %[[TK]], %[[TV]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[C]], %{{.*}} : index
// CHECK: %[[SRC:.*]] = arith.remui %[[NEXT]], %{{.*}} : index
// CHECK: %[[KS1:.*]] = arith.muli %[[SRC]], %{{.*}} : index
// CHECK: %[[KP1:.*]] = braid.sequence_positions %[[KS1]] of 8 {zigzag = 2 : i64}
// CHECK: %[[O1:.*]], %[[L1:.*]] = braid.attention_block %[[Q]], %[[K1]], %[[V1]], %[[QP]], %[[KP1]] causal
// CHECK: %[[MO:.*]], %{{.*}} = braid.attention_merge %[[O0]], %[[L0]], %[[O1]], %[[L1]]
// CHECK-NOT: dist.shift
// CHECK: return %[[MO]]
// The attention's name goes to the op giving its result.
// LOC-LABEL: func.func @ring
// LOC: braid.attention_merge {{.*}} loc(#[[ATTN:loc[0-9]*]])
// LOC: #[[ATTN]] = loc("attn"
shard.grid @grid(shape = 2) {braid.axes = ["cp"]}
func.func @ring(%q: tensor<2x4x4x4xf32>, %k: tensor<2x4x2x4xf32>, %v: tensor<2x4x2x4xf32>) -> tensor<2x4x4x4xf32> {
  %o = braid.attention %q, %k, %v causal {ring_axes = ["cp"], rope_theta = 1.000000e+04 : f64, sequence_zigzag = 2 : i64} : tensor<2x4x4x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32> -> tensor<2x4x4x4xf32> loc("attn")
  return %o : tensor<2x4x4x4xf32>
}

// -----

// Its gradient (bf16 operands, f32 accumulators): the forward again, then
// around the ring a second time, the cotangents of each block shifting on
// with it after this rank added to them; the second shift takes them home.
// CHECK-LABEL: func.func @ring_grad
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x4xbf16>, %[[K:.*]]: tensor<2x4x2x4xbf16>, %[[V:.*]]: tensor<2x4x2x4xbf16>, %[[G:.*]]: tensor<2x4x4x4xbf16>)
// CHECK: %[[MO:.*]], %[[ML:.*]] = braid.attention_merge
// CHECK: %[[D:.*]] = braid.attention_delta %[[G]], %[[MO]] : tensor<2x4x4x4xbf16>, tensor<2x4x4x4xf32> -> tensor<2x4x4xf32>
// CHECK: %[[DQ0:.*]] = braid.fill 0.000000e+00 : tensor<2x4x4x4xf32>
// CHECK: %[[DK0:.*]] = braid.fill 0.000000e+00 : tensor<2x4x2x4xf32>
// CHECK: %[[DV0:.*]] = braid.fill 0.000000e+00 : tensor<2x4x2x4xf32>
// CHECK: %[[K1:.*]], %[[TK:.*]] = dist.shift %[[K]] {{.*}} offset = 1 cyclic
// CHECK: %[[V1:.*]], %[[TV:.*]] = dist.shift %[[V]] {{.*}} offset = 1 cyclic
// CHECK: %[[DQ1:.*]], %[[DK1:.*]], %[[DV1:.*]] = braid.attention_block_grad %[[Q]], %[[K]], %[[V]], %[[G]], %{{.*}}, %{{.*}}, %[[ML]], %[[D]] into %[[DQ0]], %[[DK0]], %[[DV0]] causal
// CHECK: %[[DKS:.*]], %[[TDK:.*]] = dist.shift %[[DK1]] {{.*}} offset = 1 cyclic : tensor<2x4x2x4xf32>
// CHECK: %[[DVS:.*]], %[[TDV:.*]] = dist.shift %[[DV1]] {{.*}} offset = 1 cyclic : tensor<2x4x2x4xf32>
// CHECK: dist.wait %[[TDK]], %[[TDV]], %[[TK]], %[[TV]]
// CHECK: %[[DQ2:.*]], %[[DK2:.*]], %[[DV2:.*]] = braid.attention_block_grad %[[Q]], %[[K1]], %[[V1]], %[[G]], {{.*}} into %[[DQ1]], %[[DKS]], %[[DVS]]
// CHECK: %[[HK:.*]], %[[THK:.*]] = dist.shift %[[DK2]]
// CHECK: %[[HV:.*]], %[[THV:.*]] = dist.shift %[[DV2]]
// CHECK: dist.wait %[[THK]], %[[THV]]
// CHECK: %[[RQ:.*]] = braid.convert %[[DQ2]] : tensor<2x4x4x4xf32> -> tensor<2x4x4x4xbf16>
// CHECK: %[[RK:.*]] = braid.convert %[[HK]]
// CHECK: %[[RV:.*]] = braid.convert %[[HV]]
// CHECK: return %[[RQ]], %[[RK]], %[[RV]]

shard.grid @grid(shape = 2) {braid.axes = ["cp"]}
func.func @ring_grad(%q: tensor<2x4x4x4xbf16>, %k: tensor<2x4x2x4xbf16>, %v: tensor<2x4x2x4xbf16>, %g: tensor<2x4x4x4xbf16>) -> (tensor<2x4x4x4xbf16>, tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>) {
  %dq, %dk, %dv = braid.attention_grad %q, %k, %v, %g causal {ring_axes = ["cp"], sequence_zigzag = 2 : i64} : tensor<2x4x4x4xbf16>, tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>, tensor<2x4x4x4xbf16> -> tensor<2x4x4x4xbf16>, tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>
  return %dq, %dk, %dv : tensor<2x4x4x4xbf16>, tensor<2x4x2x4xbf16>, tensor<2x4x2x4xbf16>
}

// -----

// Gathered keys over a zigzag sequence: one block, the queries at their
// chunk's positions, the keys at every stored row's.
// CHECK-LABEL: func.func @gathered
// CHECK: %[[C:.*]] = dist.coordinate
// CHECK: %[[QS:.*]] = arith.muli %[[C]]
// CHECK: %[[QP:.*]] = braid.sequence_positions %[[QS]] of 8 {zigzag = 2 : i64} : tensor<4xi64>
// CHECK: %[[KP:.*]] = braid.sequence_positions %{{.*}} of 8 {zigzag = 2 : i64} : tensor<8xi64>
// CHECK: %[[O:.*]], %{{.*}} = braid.attention_block %{{.*}}, %{{.*}}, %{{.*}}, %[[QP]], %[[KP]] causal
// CHECK-NOT: dist.shift
// CHECK: return %[[O]]

shard.grid @grid(shape = 2) {braid.axes = ["cp"]}
func.func @gathered(%q: tensor<2x4x4x4xf32>, %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x4xf32>) -> tensor<2x4x4x4xf32> {
  %o = braid.attention %q, %k, %v causal {query_offset_axes = ["cp"], sequence_zigzag = 2 : i64} : tensor<2x4x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x4x4x4xf32>
  return %o : tensor<2x4x4x4xf32>
}
