// RUN: braid-opt %s | braid-opt | FileCheck %s
// RUN: braid-opt %s --mlir-print-op-generic | braid-opt | FileCheck %s

// The local pieces of a KV cache split by sequence over cp ranks round-trip:
// a chunk's write, its attention (f32 out and log-sum-exp) and the merge of
// the ranks' gathered pairs.
// CHECK-LABEL: func.func @chunks
// CHECK: %[[K:.*]] = braid.cache_write_chunk %{{.*}}, %{{.*}}, %{{.*}} at %{{.*}} of 16 {rope_theta = 1.000000e+04 : f64} : tensor<2x8x2x16xbf16>, tensor<2x1x2x16xbf16>, tensor<2xi32>
// CHECK: %[[O:.*]], %[[L:.*]] = braid.cache_attention_chunk %{{.*}}, %[[K]], %{{.*}}, %{{.*}} at %{{.*}} of 16 {rope_theta = 1.000000e+04 : f64, scale = 2.500000e-01 : f64} : tensor<2x1x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2xi32> -> tensor<2x1x4x16xf32>, tensor<2x1x4xf32>
// CHECK: braid.cache_attention_merge %{{.*}}, %{{.*}} : tensor<4x1x4x16xf32>, tensor<4x1x4xf32> -> tensor<2x1x4x16xbf16>
func.func @chunks(%first: index, %q: tensor<2x1x4x16xbf16>, %kc: tensor<2x8x2x16xbf16>, %vc: tensor<2x8x2x16xbf16>, %k: tensor<2x1x2x16xbf16>, %pos: tensor<2xi32>, %outs: tensor<4x1x4x16xf32>, %lses: tensor<4x1x4xf32>) -> (tensor<2x1x4x16xf32>, tensor<2x1x4xf32>, tensor<2x1x4x16xbf16>) {
  %kc1 = braid.cache_write_chunk %kc, %k, %pos at %first of 16 {rope_theta = 1.0e4 : f64} : tensor<2x8x2x16xbf16>, tensor<2x1x2x16xbf16>, tensor<2xi32>
  %o, %l = braid.cache_attention_chunk %q, %kc1, %vc, %pos at %first of 16 {scale = 0.25 : f64, rope_theta = 1.0e4 : f64} : tensor<2x1x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2xi32> -> tensor<2x1x4x16xf32>, tensor<2x1x4xf32>
  %m = braid.cache_attention_merge %outs, %lses : tensor<4x1x4x16xf32>, tensor<4x1x4xf32> -> tensor<2x1x4x16xbf16>
  return %o, %l, %m : tensor<2x1x4x16xf32>, tensor<2x1x4xf32>, tensor<2x1x4x16xbf16>
}
