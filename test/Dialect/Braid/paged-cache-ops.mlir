// RUN: braid-opt %s | braid-opt | FileCheck %s

// CHECK-LABEL: func.func @decode_layer
// CHECK: %[[K:.*]] = braid.paged_cache_write %arg1, %arg3, %arg5, %arg6, %arg7 {rope_theta = 1.000000e+04 : f64} : tensor<8x4x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
// CHECK: %[[V:.*]] = braid.paged_cache_write %arg2, %arg4, %arg5, %arg6, %arg7 : tensor<8x4x2x6xf32>, tensor<2x1x2x6xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
// CHECK: braid.paged_cache_attention %arg0, %[[K]], %[[V]], %arg5, %arg6, %arg7 {rope_theta = 1.000000e+04 : f64, scale = 5.000000e-01 : f64} : tensor<2x1x4x4xf32>, tensor<8x4x2x4xf32>, tensor<8x4x2x6xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x4x6xf32>
func.func @decode_layer(%q: tensor<2x1x4x4xf32>, %kp: tensor<8x4x2x4xf32>, %vp: tensor<8x4x2x6xf32>,
                        %k: tensor<2x1x2x4xf32>, %v: tensor<2x1x2x6xf32>, %pos: tensor<2xi32>,
                        %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<2x1x4x6xf32> {
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last {rope_theta = 1.000000e+04 : f64} : tensor<8x4x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
  %v1 = braid.paged_cache_write %vp, %v, %pos, %pages, %last : tensor<8x4x2x6xf32>, tensor<2x1x2x6xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
  %o = braid.paged_cache_attention %q, %k1, %v1, %pos, %pages, %last {rope_theta = 1.000000e+04 : f64, scale = 0.5 : f64} : tensor<2x1x4x4xf32>, tensor<8x4x2x4xf32>, tensor<8x4x2x6xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x4x6xf32>
  return %o : tensor<2x1x4x6xf32>
}

// A prefill chunk in bf16: 3 sequences of up to 5 new rows, MQA.
// CHECK-LABEL: func.func @prefill_chunk
// CHECK: braid.paged_cache_write %arg1, %arg2, %arg3, %arg4, %arg5 : tensor<16x8x1x8xbf16>, tensor<3x5x1x8xbf16>, tensor<3xi32>, tensor<3x2xi32>, tensor<3xi32>
// CHECK: braid.paged_cache_attention %arg0, %{{.*}}, %{{.*}}, %arg3, %arg4, %arg5 : tensor<3x5x2x8xbf16>, tensor<16x8x1x8xbf16>, tensor<16x8x1x8xbf16>, tensor<3xi32>, tensor<3x2xi32>, tensor<3xi32> -> tensor<3x5x2x8xbf16>
func.func @prefill_chunk(%q: tensor<3x5x2x8xbf16>, %kp: tensor<16x8x1x8xbf16>, %k: tensor<3x5x1x8xbf16>,
                         %pos: tensor<3xi32>, %pages: tensor<3x2xi32>, %last: tensor<3xi32>) -> tensor<3x5x2x8xbf16> {
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last : tensor<16x8x1x8xbf16>, tensor<3x5x1x8xbf16>, tensor<3xi32>, tensor<3x2xi32>, tensor<3xi32>
  %o = braid.paged_cache_attention %q, %k1, %k1, %pos, %pages, %last : tensor<3x5x2x8xbf16>, tensor<16x8x1x8xbf16>, tensor<16x8x1x8xbf16>, tensor<3xi32>, tensor<3x2xi32>, tensor<3xi32> -> tensor<3x5x2x8xbf16>
  return %o : tensor<3x5x2x8xbf16>
}
