// RUN: braid-opt %s | braid-opt | FileCheck %s

// CHECK-LABEL: func.func @whole
// CHECK: braid.sample nucleus %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 {top_k_cap = 16 : i64, vocab = 97 : i64} : (tensor<2x98xbf16>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
func.func @whole(%l: tensor<2x98xbf16>, %s: tensor<2xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) -> tensor<2xi32> {
  %ids = braid.sample nucleus %l, %s, %st, %t, %k, %p {top_k_cap = 16, vocab = 97} : (tensor<2x98xbf16>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
  return %ids : tensor<2xi32>
}

// CHECK-LABEL: func.func @pieces
// CHECK: %[[W:.*]] = braid.sample_local max %arg0, %arg1, %arg2, %arg3 at %arg4 {top_k_cap = 4 : i64, vocab = 97 : i64}
// CHECK: %[[S:.*]] = braid.sample_merge max %arg5, %arg1, %arg2, %arg3, %arg6, %arg7 {top_k_cap = 4 : i64, vocab = 97 : i64} : {{.*}} -> tensor<2x16xi64>
// CHECK: braid.sample_local mass %arg0 state %[[S]], %arg1, %arg2, %arg3 at %arg4 {{.*}} -> tensor<2x10xi64>
// CHECK: %[[S2:.*]] = braid.sample_merge draw %arg8 state %[[S]], {{.*}} -> tensor<2x16xi64>
// CHECK: braid.sample_ids %[[S2]] : tensor<2x16xi64> -> tensor<2xi32>
func.func @pieces(%l: tensor<2x49xf32>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %o: index,
                  %g: tensor<4x2xi64>, %s: tensor<2xi64>, %st: tensor<2xi64>, %g1: tensor<4x1xi64>) -> (tensor<2x2xi64>, tensor<2x10xi64>, tensor<2xi32>) {
  %w = braid.sample_local max %l, %t, %k, %p at %o {top_k_cap = 4, vocab = 97} : (tensor<2x49xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, index) -> tensor<2x2xi64>
  %m = braid.sample_merge max %g, %t, %k, %p, %s, %st {top_k_cap = 4, vocab = 97} : (tensor<4x2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x16xi64>
  %w1 = braid.sample_local mass %l state %m, %t, %k, %p at %o {top_k_cap = 4, vocab = 97} : (tensor<2x49xf32>, tensor<2x16xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, index) -> tensor<2x10xi64>
  %m2 = braid.sample_merge draw %g1 state %m, %t, %k, %p, %s, %st {top_k_cap = 4, vocab = 97} : (tensor<4x1xi64>, tensor<2x16xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x16xi64>
  %ids = braid.sample_ids %m2 : tensor<2x16xi64> -> tensor<2xi32>
  return %w, %w1, %ids : tensor<2x2xi64>, tensor<2x10xi64>, tensor<2xi32>
}
