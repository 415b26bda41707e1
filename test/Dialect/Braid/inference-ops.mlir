// RUN: braid-opt %s | braid-opt | FileCheck %s

// CHECK-LABEL: func.func @decode_layer
// CHECK: %[[K:.*]] = braid.cache_write %arg1, %arg3, %arg5 {rope_theta = 1.000000e+04 : f64} : tensor<2x8x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>
// CHECK: %[[V:.*]] = braid.cache_write %arg2, %arg4, %arg5 : tensor<2x8x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>
// CHECK: braid.cache_attention %arg0, %[[K]], %[[V]], %arg5 {rope_theta = 1.000000e+04 : f64, scale = 5.000000e-01 : f64} : tensor<2x1x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2xi32> -> tensor<2x1x4x4xf32>
func.func @decode_layer(%q: tensor<2x1x4x4xf32>, %kc: tensor<2x8x2x4xf32>, %vc: tensor<2x8x2x4xf32>,
                        %k: tensor<2x1x2x4xf32>, %v: tensor<2x1x2x4xf32>, %pos: tensor<2xi32>) -> tensor<2x1x4x4xf32> {
  %k1 = braid.cache_write %kc, %k, %pos {rope_theta = 1.000000e+04 : f64} : tensor<2x8x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>
  %v1 = braid.cache_write %vc, %v, %pos : tensor<2x8x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>
  %o = braid.cache_attention %q, %k1, %v1, %pos {rope_theta = 1.000000e+04 : f64, scale = 0.5 : f64} : tensor<2x1x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2xi32> -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// CHECK-LABEL: func.func @rows
// CHECK: braid.take_rows %arg0, %arg2 : tensor<2x6x8xbf16>, tensor<2xi32> -> tensor<2x8xbf16>
// CHECK: braid.add_positions %arg0, %arg1, %arg2 : tensor<2x6x8xbf16>, tensor<16x8xbf16>, tensor<2xi32> -> tensor<2x6x8xbf16>
func.func @rows(%x: tensor<2x6x8xbf16>, %table: tensor<16x8xbf16>, %i: tensor<2xi32>) -> (tensor<2x8xbf16>, tensor<2x6x8xbf16>) {
  %r = braid.take_rows %x, %i : tensor<2x6x8xbf16>, tensor<2xi32> -> tensor<2x8xbf16>
  %p = braid.add_positions %x, %table, %i : tensor<2x6x8xbf16>, tensor<16x8xbf16>, tensor<2xi32> -> tensor<2x6x8xbf16>
  return %r, %p : tensor<2x8xbf16>, tensor<2x6x8xbf16>
}
