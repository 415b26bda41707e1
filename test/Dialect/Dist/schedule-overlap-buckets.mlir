// RUN: braid-opt %s --braid-schedule-overlap="memory-growth=1" -split-input-file | FileCheck %s
// RUN: braid-opt %s --braid-schedule-overlap="memory-growth=1 bucket-mb=0.03125 first-bucket-mb=0.015625" -split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: braid-opt %s --braid-schedule-overlap="memory-growth=1 bucket-mb=0" -split-input-file | FileCheck %s --check-prefix=OFF

// Gradient buckets (the budget is memory-growth=1 here: the schedule keeps
// all four gradients live, which schedule-overlap.mlir's budget cases test).
// Four layers' backward, top down, then their gradients' all-reduces in
// parameter order. At the defaults (a first bucket of 1 MiB) the four
// 16 KiB gradients are one bucket, packed in the order the backward
// produces them, reduced by one all-reduce that starts after the last of
// them, and all taken out before the first update (so that the bucket is
// freed there).
// CHECK-LABEL: func.func @step
// CHECK:         %[[G3:.*]] = call @layer_bwd(%arg0)
// CHECK-NEXT:    %[[G2:.*]] = call @layer_bwd(%[[G3]])
// CHECK-NEXT:    %[[G1:.*]] = call @layer_bwd(%[[G2]])
// CHECK-NEXT:    %[[G0:.*]] = call @layer_bwd(%[[G1]])
// CHECK-NEXT:    %[[B:.*]] = dist.pack %[[G3]], %[[G2]], %[[G1]], %[[G0]] parts 1 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<16384xf32>
// CHECK-NEXT:    %[[R:.*]], %[[T:.*]] = dist.all_reduce %[[B]] on @grid grid_axes = [0] reduction = sum : tensor<16384xf32> -> tensor<16384xf32>
// CHECK-NEXT:    %[[L:.*]] = braid.sum_squares
// CHECK-NEXT:    dist.wait %[[T]]
// CHECK-NEXT:    %[[U3:.*]] = dist.unpack %[[R]] offset 0 parts 1 : tensor<16384xf32> -> tensor<64x64xf32>
// CHECK-NEXT:    %[[U2:.*]] = dist.unpack %[[R]] offset 4096 parts 1
// CHECK-NEXT:    %[[U1:.*]] = dist.unpack %[[R]] offset 8192 parts 1
// CHECK-NEXT:    %[[U0:.*]] = dist.unpack %[[R]] offset 12288 parts 1
// CHECK-NEXT:    braid.sgd_update @w0, %[[U0]], %[[L]]
// CHECK-NEXT:    braid.sgd_update @w1, %[[U1]], %[[L]]
// CHECK-NEXT:    braid.sgd_update @w2, %[[U2]], %[[L]]
// CHECK-NEXT:    braid.sgd_update @w3, %[[U3]], %[[L]]

// With a first bucket of 16 KiB and then 32 KiB, the top layer's gradient
// is reduced alone as soon as its layer returns (a bucket of one is left as
// it is), the next two together after the second of them, the last alone.
// SMALL-LABEL: func.func @step
// SMALL:         %[[G3:.*]] = call @layer_bwd(%arg0)
// SMALL-NEXT:    %[[R3:.*]], %[[T3:.*]] = dist.all_reduce %[[G3]] on @grid grid_axes = [0] reduction = sum : tensor<64x64xf32>
// SMALL-NEXT:    %[[G2:.*]] = call @layer_bwd(%[[G3]])
// SMALL-NEXT:    %[[G1:.*]] = call @layer_bwd(%[[G2]])
// SMALL-NEXT:    %[[B:.*]] = dist.pack %[[G2]], %[[G1]] parts 1 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<8192xf32>
// SMALL-NEXT:    %[[R:.*]], %[[T:.*]] = dist.all_reduce %[[B]] on @grid grid_axes = [0] reduction = sum : tensor<8192xf32>
// SMALL-NEXT:    %[[G0:.*]] = call @layer_bwd(%[[G1]])
// SMALL-NEXT:    %[[R0:.*]], %[[T0:.*]] = dist.all_reduce %[[G0]] on @grid grid_axes = [0] reduction = sum : tensor<64x64xf32>
// SMALL:         braid.sgd_update @w0, %[[R0]]
// SMALL-NEXT:    %[[U2:.*]] = dist.unpack %[[R]] offset 0 parts 1
// SMALL-NEXT:    %[[U1:.*]] = dist.unpack %[[R]] offset 4096 parts 1
// SMALL-NEXT:    braid.sgd_update @w1, %[[U1]]
// SMALL-NEXT:    braid.sgd_update @w2, %[[U2]]
// SMALL-NEXT:    braid.sgd_update @w3, %[[R3]]

// OFF-LABEL: func.func @step
// OFF-NOT:     dist.pack
// OFF-COUNT-4: dist.all_reduce
// OFF-NOT:     dist.pack

module {
  shard.grid @grid(shape = 2) {braid.axes = ["dp"]}
  braid.param @w0 normal(0.02) : tensor<64x64xf32>
  braid.param @w1 normal(0.02) : tensor<64x64xf32>
  braid.param @w2 normal(0.02) : tensor<64x64xf32>
  braid.param @w3 normal(0.02) : tensor<64x64xf32>

  func.func private @layer_bwd(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %w = braid.linear %x, %x transpose_weight : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    return %w : tensor<64x64xf32>
  }

  func.func @step(%a: tensor<64x64xf32>) -> tensor<f32> {
    %g3 = func.call @layer_bwd(%a) : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %g2 = func.call @layer_bwd(%g3) : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %g1 = func.call @layer_bwd(%g2) : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %g0 = func.call @layer_bwd(%g1) : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %l = braid.sum_squares %a : tensor<64x64xf32> -> tensor<f32>
    %r0, %t0 = dist.all_reduce %g0 on @grid grid_axes = [0] reduction = sum : tensor<64x64xf32> -> tensor<64x64xf32>
    dist.wait %t0
    %r1, %t1 = dist.all_reduce %g1 on @grid grid_axes = [0] reduction = sum : tensor<64x64xf32> -> tensor<64x64xf32>
    dist.wait %t1
    %r2, %t2 = dist.all_reduce %g2 on @grid grid_axes = [0] reduction = sum : tensor<64x64xf32> -> tensor<64x64xf32>
    dist.wait %t2
    %r3, %t3 = dist.all_reduce %g3 on @grid grid_axes = [0] reduction = sum : tensor<64x64xf32> -> tensor<64x64xf32>
    dist.wait %t3
    braid.sgd_update @w0, %r0, %l {lr = 1.0e-3 : f64, weight_decay = 0.0 : f64} : tensor<64x64xf32>, tensor<f32>
    braid.sgd_update @w1, %r1, %l {lr = 1.0e-3 : f64, weight_decay = 0.0 : f64} : tensor<64x64xf32>, tensor<f32>
    braid.sgd_update @w2, %r2, %l {lr = 1.0e-3 : f64, weight_decay = 0.0 : f64} : tensor<64x64xf32>, tensor<f32>
    braid.sgd_update @w3, %r3, %l {lr = 1.0e-3 : f64, weight_decay = 0.0 : f64} : tensor<64x64xf32>, tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// ZeRO's reduce-scatters of flat gradients (along dimension 0): the bucket
// holds each gradient's two blocks part by part, so that each rank's half
// of the bucket is its block of the first gradient, then of the second
// (the list scheduler orders the unpacks and their readers by its costs).
// CHECK-LABEL: func.func @zero
// CHECK:         %[[F0:.*]] = braid.reshape %arg0 : tensor<64x64xf32> -> tensor<4096xf32>
// CHECK-NEXT:    %[[F1:.*]] = braid.reshape %arg1 : tensor<32x64xf32> -> tensor<2048xf32>
// CHECK-NEXT:    %[[B:.*]] = dist.pack %[[F0]], %[[F1]] parts 2 : tensor<4096xf32>, tensor<2048xf32> -> tensor<6144xf32>
// CHECK-NEXT:    %[[S:.*]], %[[T:.*]] = dist.reduce_scatter %[[B]] on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<6144xf32> -> tensor<3072xf32>
// CHECK-NEXT:    dist.wait %[[T]]
// CHECK-DAG:     %[[U0:.*]] = dist.unpack %[[S]] offset 0 parts 1 : tensor<3072xf32> -> tensor<2048xf32>
// CHECK-DAG:     %[[U1:.*]] = dist.unpack %[[S]] offset 2048 parts 1 : tensor<3072xf32> -> tensor<1024xf32>
// CHECK-DAG:     braid.mul %[[U0]], %[[U0]]
// CHECK-DAG:     braid.mul %[[U1]], %[[U1]]

module {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  func.func @zero(%g0: tensor<64x64xf32>, %g1: tensor<32x64xf32>) -> (tensor<2048xf32>, tensor<1024xf32>) {
    %f0 = braid.reshape %g0 : tensor<64x64xf32> -> tensor<4096xf32>
    %s0, %t0 = dist.reduce_scatter %f0 on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<4096xf32> -> tensor<2048xf32>
    dist.wait %t0
    %f1 = braid.reshape %g1 : tensor<32x64xf32> -> tensor<2048xf32>
    %s1, %t1 = dist.reduce_scatter %f1 on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<2048xf32> -> tensor<1024xf32>
    dist.wait %t1
    %o0 = braid.mul %s0, %s0 : tensor<2048xf32>
    %o1 = braid.mul %s1, %s1 : tensor<1024xf32>
    return %o0, %o1 : tensor<2048xf32>, tensor<1024xf32>
  }
}

// -----

// What a bucket never takes: a reduction of another's result (it is needed
// before the second is ready), another group, another element type, another
// reduction.
// CHECK-LABEL: func.func @apart
// CHECK-NOT:     dist.pack
// CHECK:         return

module {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  func.func @apart(%x: tensor<64xf32>, %y: tensor<64xbf16>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<64xf32>) {
    %a, %ta = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<64xf32> -> tensor<64xf32>
    dist.wait %ta
    %m = braid.mul %a, %a : tensor<64xf32>
    %b, %tb = dist.all_reduce %m on @grid grid_axes = [0] reduction = sum : tensor<64xf32> -> tensor<64xf32>
    dist.wait %tb
    %c, %tc = dist.all_reduce %x on @grid grid_axes = [1] reduction = sum : tensor<64xf32> -> tensor<64xf32>
    dist.wait %tc
    %d, %td = dist.all_reduce %y on @grid grid_axes = [0] reduction = sum : tensor<64xbf16> -> tensor<64xbf16>
    dist.wait %td
    %e, %te = dist.all_reduce %x on @grid grid_axes = [0] reduction = max : tensor<64xf32> -> tensor<64xf32>
    dist.wait %te
    return %b, %c, %d, %e : tensor<64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<64xf32>
  }
}
