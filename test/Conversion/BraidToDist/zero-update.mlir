// RUN: braid-opt %s --convert-braid-to-dist | FileCheck %s
// RUN: braid-opt %s --convert-braid-to-dist --mlir-print-op-generic | braid-opt | FileCheck %s

// ZeRO-1 over dp=2 (a whole gradient) and ZeRO-2 (this rank's range): each
// rank updates its range of 32 of the flat parameter's 64 elements, at
// offset c * 32, then the ranges are all-gathered into the parameter. The
// parameter records its group for the dumps of ZeRO-2 gradients.
// CHECK: braid.param @w normal(2.000000e-02) {braid.zero_axes = ["dp"]} : tensor<8x8xf32>
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[G:.*]]: tensor<8x8xf32>, %[[R:.*]]: tensor<32xf32>, %[[COEF:.*]]: tensor<f32>)
// CHECK: %[[C:.*]] = dist.coordinate on @grid grid_axes = [0] : index
// CHECK: %[[OFF:.*]] = arith.muli %[[C]], %{{.*}} : index
// CHECK: braid.adamw_update @w at %[[OFF]], %[[G]], %[[COEF]] moments @m, @v step @counter {{{.*}}range = 32 : i64{{.*}}} : tensor<8x8xf32>, tensor<f32>
// CHECK-NOT: zero_axes
// CHECK: %[[PART:.*]] = braid.get_param_range @w at %[[OFF]] : tensor<32xf32>
// CHECK: %[[WHOLE:.*]], %[[T:.*]] = dist.all_gather %[[PART]] on @grid grid_axes = [0] gather_axis = 0 : tensor<32xf32> -> tensor<64xf32>
// CHECK-NEXT: dist.wait %[[T]]
// CHECK-NEXT: braid.set_param @w, %[[WHOLE]] : tensor<64xf32>
// CHECK: %[[OFF2:.*]] = arith.muli
// CHECK: braid.sgd_update @u at %[[OFF2]], %[[R]], %[[COEF]] {{{.*}}range = 32 : i64{{.*}}} : tensor<32xf32>, tensor<f32>
// CHECK: braid.get_param_range @u at %[[OFF2]] : tensor<32xf32>
// CHECK: dist.all_gather
// CHECK: braid.set_param @u
module {
  shard.grid @grid(shape = 2) {braid.axes = ["dp"]}
  braid.param @w normal(0.02) : tensor<8x8xf32>
  braid.param @u normal(0.02) : tensor<64xf32>
  braid.state @m zeros : tensor<32xf32>
  braid.state @v zeros : tensor<32xf32>
  braid.state @counter zeros : tensor<f32>
  func.func @step(%g: tensor<8x8xf32>, %r: tensor<32xf32>, %coef: tensor<f32>) {
    braid.adamw_update @w, %g, %coef moments @m, @v step @counter {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64, zero_axes = ["dp"]} : tensor<8x8xf32>, tensor<f32>
    braid.sgd_update @u, %r, %coef {lr = 1.0e-2 : f64, weight_decay = 0.0 : f64, zero_axes = ["dp"]} : tensor<32xf32>, tensor<f32>
    return
  }
}
