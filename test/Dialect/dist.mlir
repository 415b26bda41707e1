// RUN: braid-opt %s | braid-opt | FileCheck %s
// RUN: braid-opt %s --mlir-print-op-generic | braid-opt | FileCheck %s

// Every transfer starts with a token that one dist.wait completes.
// CHECK-LABEL: func.func @transfers
// CHECK: %[[MB:.*]] = dist.microbatch %arg0[1 of 4] : tensor<8x16xi32> -> tensor<2x16xi32>
// CHECK: %[[S:.*]] = dist.send %arg1 to 1 on @grid grid_axes = [0] tag = 3 : tensor<2x16x64xf32>
// CHECK: %[[R:.*]], %[[RT:.*]] = dist.recv from 0 on @grid grid_axes = [0] tag = 4 : tensor<2x16x64xf32>
// CHECK: %[[U:.*]] = dist.send %arg1 to 0 on @grid grid_axes = [1] : tensor<2x16x64xf32>
// CHECK: dist.wait %[[S]], %[[RT]], %[[U]]
// CHECK: return %[[MB]], %[[R]]
module {
  shard.grid @grid(shape = 2x2)
  func.func @transfers(%tokens: tensor<8x16xi32>, %h: tensor<2x16x64xf32>) -> (tensor<2x16xi32>, tensor<2x16x64xf32>) {
    %mb = dist.microbatch %tokens[1 of 4] : tensor<8x16xi32> -> tensor<2x16xi32>
    %s = dist.send %h to 1 on @grid grid_axes = [0] tag = 3 : tensor<2x16x64xf32>
    %r, %rt = dist.recv from 0 on @grid grid_axes = [0] tag = 4 : tensor<2x16x64xf32>
    %u = dist.send %h to 0 on @grid grid_axes = [1] : tensor<2x16x64xf32>
    dist.wait %s, %rt, %u
    return %mb, %r : tensor<2x16xi32>, tensor<2x16x64xf32>
  }

  // A pipeline action's call carries the schedule's attributes.
  // CHECK-LABEL: func.func @actions
  // CHECK: call @chunk(%arg0) {dist.action = "F", dist.chunk = 1 : i64, dist.microbatch = 0 : i64}
  func.func private @chunk(tensor<2xf32>) -> tensor<2xf32>
  func.func @actions(%x: tensor<2xf32>) -> tensor<2xf32> {
    %y = func.call @chunk(%x) {dist.action = "F", dist.chunk = 1 : i64, dist.microbatch = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  }

  // CHECK-LABEL: func.func @collectives
  // CHECK: dist.all_reduce %arg0 on @grid grid_axes = [0, 1] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: dist.all_reduce %arg0 on @grid grid_axes = [1] reduction = max : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: dist.all_gather %arg0 on @grid grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  // CHECK: dist.reduce_scatter %arg0 on @grid grid_axes = [1] reduction = sum scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  // CHECK: dist.all_to_all %arg1 on @grid grid_axes = [0, 1] split_axis = 0 concat_axis = 0 : tensor<4x2xf32> -> tensor<4x2xf32>
  // CHECK: dist.broadcast %arg0 on @grid grid_axes = [0] root = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: dist.wait
  // A block of one row per rank along a later axis is contiguous too.
  // CHECK: dist.all_gather %arg2 on @grid grid_axes = [1] gather_axis = 1 : tensor<1x3xbf16> -> tensor<1x6xbf16>
  func.func @collectives(%x: tensor<4x8xf32>, %y: tensor<4x2xf32>, %z: tensor<1x3xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<4x2xf32>, tensor<4x8xf32>, tensor<1x6xbf16>) {
    %a, %ta = dist.all_reduce %x on @grid grid_axes = [0, 1] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>
    %m, %tm = dist.all_reduce %x on @grid grid_axes = [1] reduction = max : tensor<4x8xf32> -> tensor<4x8xf32>
    %g, %tg = dist.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %r, %tr = dist.reduce_scatter %x on @grid grid_axes = [1] reduction = sum scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
    %e, %te = dist.all_to_all %y on @grid grid_axes = [0, 1] split_axis = 0 concat_axis = 0 : tensor<4x2xf32> -> tensor<4x2xf32>
    %b, %tb = dist.broadcast %x on @grid grid_axes = [0] root = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    dist.wait %ta, %tm, %tg, %tr, %te, %tb
    %h, %th = dist.all_gather %z on @grid grid_axes = [1] gather_axis = 1 : tensor<1x3xbf16> -> tensor<1x6xbf16>
    dist.wait %th
    return %a, %m, %g, %r, %e, %b, %h : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<4x2xf32>, tensor<4x8xf32>, tensor<1x6xbf16>
  }
}


// A ring's step and a halo: every rank sends to one peer and receives from
// another; the rank's coordinate in a group.
// CHECK-LABEL: func.func @shift
// CHECK: %{{.*}}, %[[T:.*]] = dist.shift %{{.*}} on @grid24 grid_axes = [1] offset = 1 cyclic : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK: %{{.*}}, %[[H:.*]] = dist.shift %{{.*}} on @grid24 grid_axes = [0, 1] offset = -1 : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK: dist.wait %[[T]], %[[H]]
// CHECK: dist.coordinate on @grid24 grid_axes = [0, 1] : index
shard.grid @grid24(shape = 2x4)
func.func @shift(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, index) {
  %r, %t = dist.shift %x on @grid24 grid_axes = [1] offset = 1 cyclic : tensor<2x4xf32> -> tensor<2x4xf32>
  %h, %th = dist.shift %x on @grid24 grid_axes = [0, 1] offset = -1 : tensor<2x4xf32> -> tensor<2x4xf32>
  dist.wait %t, %th
  %c = dist.coordinate on @grid24 grid_axes = [0, 1] : index
  return %r, %h, %c : tensor<2x4xf32>, tensor<2x4xf32>, index
}

// A bucket: tensors packed into one flat tensor (here each in two blocks,
// part by part, as a reduce-scatter's bucket) and one taken out.
// CHECK-LABEL: func.func @bucket
// CHECK: %[[B:.*]] = dist.pack %{{.*}}, %{{.*}} parts 2 : tensor<4x2xf32>, tensor<6xf32> -> tensor<14xf32>
// CHECK: dist.unpack %[[B]] offset 4 parts 2 : tensor<14xf32> -> tensor<6xf32>
func.func @bucket(%a: tensor<4x2xf32>, %b: tensor<6xf32>) -> tensor<6xf32> {
  %p = dist.pack %a, %b parts 2 : tensor<4x2xf32>, tensor<6xf32> -> tensor<14xf32>
  %u = dist.unpack %p offset 4 parts 2 : tensor<14xf32> -> tensor<6xf32>
  return %u : tensor<6xf32>
}
