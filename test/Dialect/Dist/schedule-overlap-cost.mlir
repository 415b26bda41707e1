// RUN: braid-opt %s --braid-schedule-overlap -split-input-file | FileCheck %s
// RUN: braid-opt %s --braid-schedule-overlap=move-compute=false -split-input-file | FileCheck %s --check-prefix=KEPT
// RUN: braid-opt %s --braid-schedule-overlap="link=dp:1us,100GB/s;tp:1ms,1GB/s" -split-input-file | FileCheck %s --check-prefix=SLOWTP
// RUN: braid-opt %s --braid-schedule-overlap="link=dp:1ms,1GB/s;tp:1us,100GB/s" -split-input-file | FileCheck %s --check-prefix=SLOWDP

// The list scheduler's choices follow the timing model. Both all-reduces
// start at once, each on its group's link (the larger first: the longer
// path); of the three ops after them, the product that reads neither runs
// first (it stalls on nothing), then the one reading the small sum (8x8
// over tp, done first), then the one reading the large sum (64 MiB over
// dp, hundreds of microseconds on an H100's NVLink), whatever their order
// in the program. move-compute=false keeps the program's order: the first
// product waits for the large sum while the rest could have run.
// CHECK-LABEL: func.func @pick
// CHECK:         %[[B:.*]], %[[TB:.*]] = dist.all_reduce %arg1
// CHECK-NEXT:    %[[A:.*]], %[[TA:.*]] = dist.all_reduce %arg0
// CHECK-NEXT:    braid.linear %arg2, %arg2
// CHECK-NEXT:    dist.wait %[[TA]]
// CHECK-NEXT:    braid.mul %[[A]], %[[A]]
// CHECK-NEXT:    dist.wait %[[TB]]
// CHECK-NEXT:    braid.mul %[[B]], %[[B]]

// KEPT-LABEL: func.func @pick
// KEPT:         %{{.*}}, %[[TA:.*]] = dist.all_reduce %arg0
// KEPT-NEXT:    %[[B:.*]], %[[TB:.*]] = dist.all_reduce %arg1
// KEPT-NEXT:    dist.wait %[[TB]]
// KEPT-NEXT:    braid.mul %[[B]], %[[B]]
// KEPT-NEXT:    dist.wait %[[TA]]

module {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  func.func @pick(%small: tensor<8x8xf32>, %large: tensor<4096x4096xf32>, %x: tensor<64x64xf32>) -> (tensor<4096x4096xf32>, tensor<8x8xf32>, tensor<64x64xf32>) {
    %a, %ta = dist.all_reduce %small on @grid grid_axes = [1] reduction = sum : tensor<8x8xf32> -> tensor<8x8xf32>
    %b, %tb = dist.all_reduce %large on @grid grid_axes = [0] reduction = sum : tensor<4096x4096xf32> -> tensor<4096x4096xf32>
    dist.wait %tb
    %u = braid.mul %b, %b : tensor<4096x4096xf32>
    dist.wait %ta
    %v = braid.mul %a, %a : tensor<8x8xf32>
    %w = braid.linear %x, %x : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    return %u, %v, %w : tensor<4096x4096xf32>, tensor<8x8xf32>, tensor<64x64xf32>
  }
}

// -----

// Two equal sums over different groups: which one ends first is the links'
// business. With tp's link slow (SLOWTP), tp's sum starts first (the
// longer path) and the product of dp's sum runs first; with dp's slow
// (SLOWDP), the other way round.
// SLOWTP-LABEL: func.func @links
// SLOWTP:         %[[T:.*]], %[[TT:.*]] = dist.all_reduce %arg1 on @grid grid_axes = [1]
// SLOWTP-NEXT:    %[[D:.*]], %[[TD:.*]] = dist.all_reduce %arg0 on @grid grid_axes = [0]
// SLOWTP-NEXT:    dist.wait %[[TD]]
// SLOWTP-NEXT:    braid.mul %[[D]], %[[D]]
// SLOWTP-NEXT:    dist.wait %[[TT]]
// SLOWTP-NEXT:    braid.mul %[[T]], %[[T]]

// SLOWDP-LABEL: func.func @links
// SLOWDP:         %[[D:.*]], %[[TD:.*]] = dist.all_reduce %arg0 on @grid grid_axes = [0]
// SLOWDP-NEXT:    %[[T:.*]], %[[TT:.*]] = dist.all_reduce %arg1 on @grid grid_axes = [1]
// SLOWDP-NEXT:    dist.wait %[[TT]]
// SLOWDP-NEXT:    braid.mul %[[T]], %[[T]]
// SLOWDP-NEXT:    dist.wait %[[TD]]
// SLOWDP-NEXT:    braid.mul %[[D]], %[[D]]

module {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  func.func @links(%x: tensor<256x256xf32>, %y: tensor<256x256xf32>) -> (tensor<256x256xf32>, tensor<256x256xf32>) {
    %d, %td = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<256x256xf32> -> tensor<256x256xf32>
    %t, %tt = dist.all_reduce %y on @grid grid_axes = [1] reduction = sum : tensor<256x256xf32> -> tensor<256x256xf32>
    dist.wait %td
    dist.wait %tt
    %p = braid.mul %d, %d : tensor<256x256xf32>
    %q = braid.mul %t, %t : tensor<256x256xf32>
    return %p, %q : tensor<256x256xf32>, tensor<256x256xf32>
  }
}

// -----

// A call takes its callee's predicted seconds. In @long the layer's two
// products (2048^3, 32 us each at h100-sxm's calibrated rates) outlast the
// sum of 4 MiB (25 us on its NVLink) that started before the call, so after
// it nothing stalls and the longer product goes first; in @short the layer
// is a sum of squares (11 us), the sum still in flight, and the product
// that does not read it runs while it is.
// CHECK-LABEL: func.func @long
// CHECK:         %[[B:.*]], %[[TB:.*]] = dist.all_reduce %arg0
// CHECK-NEXT:    call @big
// CHECK-NEXT:    dist.wait %[[TB]]
// CHECK-NEXT:    braid.mul %[[B]], %[[B]]
// CHECK-NEXT:    braid.linear %arg2, %arg2
// CHECK-LABEL: func.func @short
// CHECK:         %[[B:.*]], %[[TB:.*]] = dist.all_reduce %arg0
// CHECK-NEXT:    call @small
// CHECK-NEXT:    braid.linear %arg2, %arg2
// CHECK-NEXT:    dist.wait %[[TB]]
// CHECK-NEXT:    braid.mul %[[B]], %[[B]]

module {
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
  func.func private @big(%x: tensor<2048x2048xf32>) -> tensor<2048x2048xf32> {
    %y = braid.linear %x, %x : tensor<2048x2048xf32>, tensor<2048x2048xf32> -> tensor<2048x2048xf32>
    %z = braid.linear %y, %y : tensor<2048x2048xf32>, tensor<2048x2048xf32> -> tensor<2048x2048xf32>
    return %z : tensor<2048x2048xf32>
  }
  func.func private @small(%x: tensor<2048x2048xf32>) -> tensor<f32> {
    %y = braid.sum_squares %x : tensor<2048x2048xf32> -> tensor<f32>
    return %y : tensor<f32>
  }
  func.func @long(%large: tensor<1024x1024xf32>, %x: tensor<2048x2048xf32>, %y: tensor<64x64xf32>) -> (tensor<1024x1024xf32>, tensor<2048x2048xf32>, tensor<64x64xf32>) {
    %b, %tb = dist.all_reduce %large on @grid grid_axes = [0] reduction = sum : tensor<1024x1024xf32> -> tensor<1024x1024xf32>
    %c = func.call @big(%x) : (tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
    dist.wait %tb
    %v = braid.mul %b, %b : tensor<1024x1024xf32>
    %w = braid.linear %y, %y : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    return %v, %c, %w : tensor<1024x1024xf32>, tensor<2048x2048xf32>, tensor<64x64xf32>
  }
  func.func @short(%large: tensor<1024x1024xf32>, %x: tensor<2048x2048xf32>, %y: tensor<64x64xf32>) -> (tensor<1024x1024xf32>, tensor<f32>, tensor<64x64xf32>) {
    %b, %tb = dist.all_reduce %large on @grid grid_axes = [0] reduction = sum : tensor<1024x1024xf32> -> tensor<1024x1024xf32>
    %c = func.call @small(%x) : (tensor<2048x2048xf32>) -> tensor<f32>
    dist.wait %tb
    %v = braid.mul %b, %b : tensor<1024x1024xf32>
    %w = braid.linear %y, %y : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    return %v, %c, %w : tensor<1024x1024xf32>, tensor<f32>, tensor<64x64xf32>
  }
}
