// RUN: braid-opt %s --convert-braid-to-dist -split-input-file | FileCheck %s
// RUN: braid-opt %s --convert-braid-to-dist -split-input-file --mlir-print-op-generic | braid-opt -split-input-file | FileCheck %s

// The embedding over this rank's 8 rows of the vocabulary looks up at
// offset c * 8; its gradient scatters into the same rows.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.*]]: tensor<2x4xi32>, %[[E:.*]]: tensor<8x16xf32>, %[[G:.*]]: tensor<2x4x16xf32>)
// CHECK: %[[C:.*]] = dist.coordinate on @grid grid_axes = [1] : index
// CHECK: %[[OFF:.*]] = arith.muli %[[C]], %{{.*}} : index
// CHECK: %[[Y:.*]] = braid.embedding_shard %[[T]], %[[E]] at %[[OFF]] : tensor<2x4xi32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
// CHECK: %[[C2:.*]] = dist.coordinate on @grid grid_axes = [1] : index
// CHECK: %[[OFF2:.*]] = arith.muli %[[C2]]
// CHECK: %[[D:.*]] = braid.embedding_grad_shard %[[T]], %[[G]] at %[[OFF2]] : tensor<2x4xi32>, tensor<2x4x16xf32> -> tensor<8x16xf32>
// CHECK: return %[[Y]], %[[D]]
shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @embedding(%t: tensor<2x4xi32>, %e: tensor<8x16xf32>, %g: tensor<2x4x16xf32>) -> (tensor<2x4x16xf32>, tensor<8x16xf32>) {
  %y = braid.embedding %t, %e {vocab_axes = ["tp"]} : tensor<2x4xi32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  %d = braid.embedding_grad %t, %g {vocab_axes = ["tp"]} : tensor<2x4xi32>, tensor<2x4x16xf32> -> tensor<8x16xf32>
  return %y, %d : tensor<2x4x16xf32>, tensor<8x16xf32>
}

// -----

// The cross-entropy over 8 columns of a 15-word vocabulary (one padding
// column on the last rank): each row's maximum, all-reduced by max, then
// its sum of exponentials and label logit, all-reduced by sum; the loss
// over the 16 rows of the whole batch (denominator).
// CHECK-LABEL: func.func @loss
// CHECK-SAME: (%[[L:.*]]: tensor<2x4x8xf32>, %[[Y:.*]]: tensor<2x4xi32>, %[[G:.*]]: tensor<f32>)
// CHECK: %[[OFF:.*]] = arith.muli
// CHECK: %[[M:.*]] = braid.cross_entropy_row_max %[[L]] at %[[OFF]] valid 15 : tensor<2x4x8xf32> -> tensor<2x4xf32>
// CHECK: %[[MR:.*]], %[[TM:.*]] = dist.all_reduce %[[M]] on @grid grid_axes = [1] reduction = max : tensor<2x4xf32>
// CHECK-NEXT: dist.wait %[[TM]]
// CHECK: %[[S:.*]] = braid.cross_entropy_stats %[[L]], %[[Y]], %[[MR]] at %[[OFF]] valid 15 : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<2x4xf32> -> tensor<2x4x2xf32>
// CHECK: %[[SR:.*]], %[[TS:.*]] = dist.all_reduce %[[S]] on @grid grid_axes = [1] reduction = sum : tensor<2x4x2xf32>
// CHECK-NEXT: dist.wait %[[TS]]
// CHECK: %[[LOSS:.*]] = braid.cross_entropy_from_stats %[[MR]], %[[SR]] denominator 16 : tensor<2x4xf32>, tensor<2x4x2xf32> -> tensor<f32>
// CHECK: braid.cross_entropy_row_max
// CHECK: dist.all_reduce
// CHECK: braid.cross_entropy_stats
// CHECK: dist.all_reduce
// CHECK: %[[DL:.*]] = braid.cross_entropy_grad_shard %[[L]], %[[Y]], %{{.*}}, %{{.*}}, %[[G]] at %{{.*}} valid 15 denominator 16
// CHECK: return %[[LOSS]], %[[DL]]
shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @loss(%l: tensor<2x4x8xf32>, %y: tensor<2x4xi32>, %g: tensor<f32>) -> (tensor<f32>, tensor<2x4x8xf32>) {
  %loss = braid.cross_entropy %l, %y {vocab_axes = ["tp"], vocab_size = 15 : i64, denominator = 16 : i64} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  %d = braid.cross_entropy_grad %l, %y, %g {vocab_axes = ["tp"], vocab_size = 15 : i64, denominator = 16 : i64} : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32> -> tensor<2x4x8xf32>
  return %loss, %d : tensor<f32>, tensor<2x4x8xf32>
}

// -----

// A whole vocabulary over a share of the batch's rows: the same pieces at
// offset 0, without transfers.
// CHECK-LABEL: func.func @rows
// CHECK: %[[Z:.*]] = arith.constant 0 : index
// CHECK: braid.cross_entropy_row_max %{{.*}} at %[[Z]] valid 8
// CHECK-NOT: dist.
// CHECK: braid.cross_entropy_from_stats {{.*}} denominator 32
shard.grid @grid(shape = 2) {braid.axes = ["dp"]}
func.func @rows(%l: tensor<2x4x8xf32>, %y: tensor<2x4xi32>) -> tensor<f32> {
  %loss = braid.cross_entropy %l, %y {denominator = 32 : i64} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Axes listed out of grid order: the coordinate is composed in the listed
// order (the first axis the slowest), the reduction over the group in grid
// order.
// CHECK-LABEL: func.func @order
// CHECK: %[[B:.*]] = dist.coordinate on @grid grid_axes = [1] : index
// CHECK: %[[A:.*]] = dist.coordinate on @grid grid_axes = [0] : index
// CHECK: %[[BA:.*]] = arith.muli %[[B]], %{{.*}} : index
// CHECK: arith.addi %[[BA]], %[[A]] : index
// CHECK: dist.all_reduce {{.*}} grid_axes = [0, 1] reduction = max
shard.grid @grid(shape = 2x2) {braid.axes = ["a", "b"]}
func.func @order(%l: tensor<2x4x8xf32>, %y: tensor<2x4xi32>) -> tensor<f32> {
  %loss = braid.cross_entropy %l, %y {vocab_axes = ["b", "a"]} : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
