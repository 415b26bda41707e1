// RUN: braid-opt %s | braid-opt | FileCheck %s
// RUN: braid-opt %s --mlir-print-op-generic | braid-opt | FileCheck %s

// The local pieces of context-parallel attention round-trip: positions of a
// stored range, a block's attention and its merge, the backward's delta and
// a block's accumulated share.
// CHECK-LABEL: func.func @blocks
// CHECK: %[[QP:.*]] = braid.sequence_positions %{{.*}} of 16 {zigzag = 2 : i64} : tensor<8xi64>
// CHECK: %[[KP:.*]] = braid.sequence_positions %{{.*}} of 16 : tensor<8xi64>
// CHECK: %[[O:.*]], %[[L:.*]] = braid.attention_block %{{.*}}, %{{.*}}, %{{.*}}, %[[QP]], %[[KP]] causal scale 2.500000e-01 {rope_theta = 1.000000e+04 : f64} : tensor<2x8x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<8xi64>, tensor<8xi64> -> tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
// CHECK: %[[MO:.*]], %[[ML:.*]] = braid.attention_merge %[[O]], %[[L]], %[[O]], %[[L]] : tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
// CHECK: %[[D:.*]] = braid.attention_delta %{{.*}}, %[[MO]] : tensor<2x8x4x16xbf16>, tensor<2x8x4x16xf32> -> tensor<2x8x4xf32>
// CHECK: braid.attention_block_grad {{.*}}, %[[ML]], %[[D]] into {{.*}} causal scale 2.500000e-01 : (tensor<2x8x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x4x16xbf16>, tensor<8xi64>, tensor<8xi64>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>)
func.func @blocks(%start: index, %q: tensor<2x8x4x16xbf16>, %k: tensor<2x8x2x16xbf16>, %v: tensor<2x8x2x16xbf16>, %dout: tensor<2x8x4x16xbf16>, %dq: tensor<2x8x4x16xf32>, %dk: tensor<2x8x2x16xf32>, %dv: tensor<2x8x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) {
  %qp = braid.sequence_positions %start of 16 {zigzag = 2 : i64} : tensor<8xi64>
  %kp = braid.sequence_positions %start of 16 : tensor<8xi64>
  %o, %l = braid.attention_block %q, %k, %v, %qp, %kp causal scale 0.25 {rope_theta = 1.0e4 : f64} : tensor<2x8x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<8xi64>, tensor<8xi64> -> tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
  %mo, %ml = braid.attention_merge %o, %l, %o, %l : tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
  %d = braid.attention_delta %dout, %mo : tensor<2x8x4x16xbf16>, tensor<2x8x4x16xf32> -> tensor<2x8x4xf32>
  %gq, %gk, %gv = braid.attention_block_grad %q, %k, %v, %dout, %qp, %kp, %ml, %d into %dq, %dk, %dv causal scale 0.25 : (tensor<2x8x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x4x16xbf16>, tensor<8xi64>, tensor<8xi64>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>)
  return %gq, %gk, %gv : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
}
