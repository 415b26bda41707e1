// RUN: braid-opt %s --convert-braid-to-dist -split-input-file | FileCheck %s
// RUN: braid-opt %s --convert-braid-to-dist -split-input-file -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// A collective whose blocks are contiguous per rank: one transfer over the
// group in grid order, waited for at once.
// CHECK-LABEL: func.func @direct
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<1x8xf32>)
// CHECK: %[[R:.*]], %[[T:.*]] = dist.all_reduce %[[X]] on @grid grid_axes = [0, 1] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: dist.wait %[[T]]
// CHECK: %[[M:.*]], %[[TM:.*]] = dist.all_reduce %[[X]] on @grid grid_axes = [1] reduction = max
// CHECK-NEXT: dist.wait %[[TM]]
// CHECK: %[[G:.*]], %[[TG:.*]] = dist.all_gather %[[X]] on @grid grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: dist.wait %[[TG]]
// CHECK: %[[S:.*]], %[[TS:.*]] = dist.reduce_scatter %[[X]] on @grid grid_axes = [1] reduction = sum scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: dist.wait %[[TS]]
// CHECK: %[[E:.*]], %[[TE:.*]] = dist.all_to_all %[[B]] on @grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<1x8xf32> -> tensor<2x4xf32>
// CHECK-NEXT: dist.wait %[[TE]]
// CHECK-NOT: shard.all
// CHECK: return %[[R]], %[[M]], %[[G]], %[[S]], %[[E]]
// The dump's name stays with the value that replaces the collective.
// LOC-LABEL: func.func @direct
// LOC: dist.all_reduce {{.*}} loc(#[[SUM:loc[0-9]*]])
// LOC: #[[SUM]] = loc("summed"
shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @direct(%x: tensor<4x8xf32>, %b: tensor<1x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<2x4xf32>) {
  %r = shard.all_reduce %x on @grid grid_axes = [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32> loc("summed")
  %m = shard.all_reduce %x on @grid grid_axes = [1] reduction = max : tensor<4x8xf32> -> tensor<4x8xf32>
  %g = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %s = shard.reduce_scatter %x on @grid grid_axes = [1] scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  %e = shard.all_to_all %b on @grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<1x8xf32> -> tensor<2x4xf32>
  return %r, %m, %g, %s, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<2x4xf32>
}

// -----

// Blocks along an inner dimension (a column-parallel weight's gradient, a
// sequence shard of activations): whole blocks move in communicator order and
// are laid out with braid.reshape and braid.transpose around the transfer.
// CHECK-LABEL: func.func @relayout
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>, %[[Y:.*]]: tensor<4x6xf32>)
// All-gather of [4, 3] blocks into [4, 6]: rows of blocks [2, 12], then
// [tp, 4, 3] -> [4, tp, 3].
// CHECK: %[[ROW:.*]] = braid.reshape %[[X]] : tensor<4x3xf32> -> tensor<1x12xf32>
// CHECK: %[[G:.*]], %[[TG:.*]] = dist.all_gather %[[ROW]] on @grid grid_axes = [1] gather_axis = 0 : tensor<1x12xf32> -> tensor<2x12xf32>
// CHECK-NEXT: dist.wait %[[TG]]
// CHECK: %[[V:.*]] = braid.reshape %[[G]] : tensor<2x12xf32> -> tensor<2x4x3xf32>
// CHECK: %[[P:.*]] = braid.transpose %[[V]] [1, 0, 2] : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
// CHECK: %[[GATHERED:.*]] = braid.reshape %[[P]] : tensor<4x2x3xf32> -> tensor<4x6xf32>
// Reduce-scatter of [4, 6] into [4, 3]: the blocks first.
// CHECK: %[[V2:.*]] = braid.reshape %[[Y]] : tensor<4x6xf32> -> tensor<4x2x3xf32>
// CHECK: %[[P2:.*]] = braid.transpose %[[V2]] [1, 0, 2] : tensor<4x2x3xf32> -> tensor<2x4x3xf32>
// CHECK: %[[BLOCKS:.*]] = braid.reshape %[[P2]] : tensor<2x4x3xf32> -> tensor<2x12xf32>
// CHECK: %[[S:.*]], %[[TS:.*]] = dist.reduce_scatter %[[BLOCKS]] on @grid grid_axes = [1] reduction = sum scatter_axis = 0 : tensor<2x12xf32> -> tensor<1x12xf32>
// CHECK-NEXT: dist.wait %[[TS]]
// CHECK: %[[SCATTERED:.*]] = braid.reshape %[[S]] : tensor<1x12xf32> -> tensor<4x3xf32>
// All-to-all from blocks of rows (contiguous) to blocks of columns: the
// received rows [tp, 2, 6] become [2, tp, 6].
// CHECK: %[[ROWS:.*]] = braid.reshape %[[GATHERED]] : tensor<4x6xf32> -> tensor<2x12xf32>
// CHECK: %[[A:.*]], %[[TA:.*]] = dist.all_to_all %[[ROWS]] on @grid grid_axes = [1] split_axis = 0 concat_axis = 0 : tensor<2x12xf32> -> tensor<2x12xf32>
// CHECK-NEXT: dist.wait %[[TA]]
// CHECK: %[[V3:.*]] = braid.reshape %[[A]] : tensor<2x12xf32> -> tensor<2x2x6xf32>
// CHECK: %[[P3:.*]] = braid.transpose %[[V3]] [1, 0, 2] : tensor<2x2x6xf32> -> tensor<2x2x6xf32>
// CHECK: %[[EXCHANGED:.*]] = braid.reshape %[[P3]] : tensor<2x2x6xf32> -> tensor<2x12xf32>
// CHECK: return %[[GATHERED]], %[[SCATTERED]], %[[EXCHANGED]]
shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @relayout(%x: tensor<4x3xf32>, %y: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x3xf32>, tensor<2x12xf32>) {
  %g = shard.all_gather %x on @grid grid_axes = [1] gather_axis = 1 : tensor<4x3xf32> -> tensor<4x6xf32>
  %s = shard.reduce_scatter %y on @grid grid_axes = [1] scatter_axis = 1 : tensor<4x6xf32> -> tensor<4x3xf32>
  %a = shard.all_to_all %g on @grid grid_axes = [1] split_axis = 0 concat_axis = 1 : tensor<4x6xf32> -> tensor<2x12xf32>
  return %g, %s, %a : tensor<4x6xf32>, tensor<4x3xf32>, tensor<2x12xf32>
}

// -----

// Group axes listed out of grid order: the partitioner numbers blocks tp
// major, the communicator dp major, so even the outermost dimension is
// re-laid out.
// CHECK-LABEL: func.func @order
// CHECK: dist.all_gather %{{.*}} on @grid grid_axes = [0, 1] gather_axis = 0 : tensor<1x2xf32> -> tensor<4x2xf32>
// CHECK: braid.transpose %{{.*}} [1, 0, 2] : tensor<2x2x2xf32> -> tensor<2x2x2xf32>
// CHECK: braid.reshape %{{.*}} : tensor<2x2x2xf32> -> tensor<8xf32>
shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @order(%x: tensor<2xf32>) -> tensor<8xf32> {
  %g = shard.all_gather %x on @grid grid_axes = [1, 0] gather_axis = 0 : tensor<2xf32> -> tensor<8xf32>
  return %g : tensor<8xf32>
}

