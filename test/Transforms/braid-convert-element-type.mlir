// RUN: braid-opt %s --braid-convert-element-type=to=bf16 | FileCheck %s
// RUN: braid-opt %s --braid-convert-element-type=to=f16 | FileCheck %s --check-prefix=F16
// RUN: not braid-opt %s --braid-convert-element-type=to=f64 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not braid-opt %s --braid-convert-element-type=to=f32 2>&1 | FileCheck %s --check-prefix=SAME

// CHECK: braid.param @w normal(2.000000e-02) : tensor<8x8xbf16>
// F16: braid.param @w normal(2.000000e-02) : tensor<8x8xf16>
// BAD: for the --to option: expected f32, bf16 or f16, found 'f64'
// SAME: error: --braid-convert-element-type: 'to' must be bf16 or f16, found 'f32' (the model's own)
braid.param @w normal(0.02) : tensor<8x8xf32>

// CHECK-LABEL: func.func private @layer
// CHECK-SAME: (%{{.*}}: tensor<4x8xbf16>, %{{.*}}: tensor<8x8xbf16>) -> tensor<4x8xbf16>
func.func private @layer(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // CHECK: braid.linear {{.*}} : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  %y = braid.linear %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Integer tensors and the loss keep their types.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%{{.*}}: tensor<4xi32>, %{{.*}}: tensor<4xi32>, %{{.*}}: tensor<4x8xbf16>) -> tensor<f32>
func.func @step(%tok: tensor<4xi32>, %labels: tensor<4xi32>, %x: tensor<4x8xf32>) -> tensor<f32> {
  %w = braid.get_param @w : tensor<8x8xf32>
  // CHECK: call @layer({{.*}}) : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %y = func.call @layer(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // CHECK: braid.cross_entropy {{.*}} : tensor<4x8xbf16>, tensor<4xi32> -> tensor<f32>
  %loss = braid.cross_entropy %y, %labels : tensor<4x8xf32>, tensor<4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
