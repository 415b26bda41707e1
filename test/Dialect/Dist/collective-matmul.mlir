// RUN: braid-opt %s --braid-collective-matmul=mode=always -split-input-file | FileCheck %s
// RUN: braid-opt %s --braid-collective-matmul -split-input-file | FileCheck %s --check-prefix=AUTO
// RUN: not braid-opt %s --braid-collective-matmul=mode=sometimes -split-input-file 2>&1 | FileCheck %s --check-prefix=MODE

// An all-gather over 2 ranks along the sequence, feeding two products: two
// steps. Step 0 computes both products' pieces from the rank's own block
// while a cyclic shift by -1 brings the next rank's; step 1 from that block.
// dist.assemble puts piece k at block (c + k) mod 2. The gathered value's
// other use (returned, as an activation saved for the backward) is
// assembled from the two blocks. The products are far too small for the
// ring to pay on an H100 (AUTO keeps the gather).
// CHECK-LABEL: func.func @ring
// CHECK-NOT:     dist.all_gather
// CHECK:         %[[B1:.*]], %[[T:.*]] = dist.shift %arg0 on @grid grid_axes = [0] offset = -1 cyclic : tensor<1x4x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT:    %[[P0:.*]] = braid.linear %arg0, %arg1 : tensor<1x4x8xf32>, tensor<8x16xf32> -> tensor<1x4x16xf32>
// CHECK-NEXT:    %[[Q0:.*]] = braid.linear %arg0, %arg2 transpose_weight : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
// CHECK-NEXT:    dist.wait %[[T]]
// CHECK-NEXT:    %[[P1:.*]] = braid.linear %[[B1]], %arg1 : tensor<1x4x8xf32>, tensor<8x16xf32> -> tensor<1x4x16xf32>
// CHECK-NEXT:    %[[Q1:.*]] = braid.linear %[[B1]], %arg2 transpose_weight : tensor<1x4x8xf32>, tensor<6x8xf32> -> tensor<1x4x6xf32>
// CHECK-NEXT:    %[[W:.*]] = dist.assemble %arg0, %[[B1]] along 1 on @grid grid_axes = [0] : tensor<1x4x8xf32>, tensor<1x4x8xf32> -> tensor<1x8x8xf32>
// CHECK-NEXT:    %[[Y:.*]] = dist.assemble %[[P0]], %[[P1]] along 1 on @grid grid_axes = [0] : tensor<1x4x16xf32>, tensor<1x4x16xf32> -> tensor<1x8x16xf32>
// CHECK-NEXT:    %[[Z:.*]] = dist.assemble %[[Q0]], %[[Q1]] along 1
// CHECK-NEXT:    return %[[Y]], %[[Z]], %[[W]]
// AUTO-LABEL: func.func @ring
// AUTO:         dist.all_gather
// AUTO-NOT:     dist.assemble
module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @ring(%x: tensor<1x4x8xf32>, %w: tensor<8x16xf32>, %v: tensor<6x8xf32>) -> (tensor<1x8x16xf32>, tensor<1x8x6xf32>, tensor<1x8x8xf32>) {
    %g, %t = dist.all_gather %x on @grid grid_axes = [0] gather_axis = 1 : tensor<1x4x8xf32> -> tensor<1x8x8xf32>
    dist.wait %t
    %y = braid.linear %g, %w : tensor<1x8x8xf32>, tensor<8x16xf32> -> tensor<1x8x16xf32>
    %z = braid.linear %g, %v transpose_weight : tensor<1x8x8xf32>, tensor<6x8xf32> -> tensor<1x8x6xf32>
    return %y, %z, %g : tensor<1x8x16xf32>, tensor<1x8x6xf32>, tensor<1x8x8xf32>
  }
}

// MODE: for the --mode option: expected auto, always or never, found 'sometimes'

// -----

// The lowering gathers a block along the sequence as a flat copy, reshaped,
// transposed and merged back: the ring starts from the block itself.
// CHECK-LABEL: func.func @relayout
// CHECK-NOT:     dist.all_gather
// CHECK:         dist.shift %arg0 on @grid grid_axes = [0] offset = -1 cyclic : tensor<2x4x8xf32>
// CHECK:         dist.assemble {{.*}} along 1 on @grid grid_axes = [0] : tensor<2x4x16xf32>, tensor<2x4x16xf32> -> tensor<2x8x16xf32>
// CHECK-NOT:     braid.transpose
// CHECK:         return
module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @relayout(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
    %f = braid.reshape %x : tensor<2x4x8xf32> -> tensor<1x64xf32>
    %g, %t = dist.all_gather %f on @grid grid_axes = [0] gather_axis = 0 : tensor<1x64xf32> -> tensor<2x64xf32>
    dist.wait %t
    %s = braid.reshape %g : tensor<2x64xf32> -> tensor<2x2x4x8xf32>
    %m = braid.transpose %s [1, 0, 2, 3] : tensor<2x2x4x8xf32> -> tensor<2x2x4x8xf32>
    %whole = braid.reshape %m : tensor<2x2x4x8xf32> -> tensor<2x8x8xf32>
    %y = braid.linear %whole, %w : tensor<2x8x8xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
    return %y : tensor<2x8x16xf32>
  }
}

// -----

// Not a ring: a gather along the contracted (last) dimension, and one whose
// result is no product's input.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-2: dist.all_gather
// CHECK-NOT:     dist.assemble
module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @kept(%x: tensor<1x1x8xf32>, %z: tensor<1x4x8xf32>, %w: tensor<16x16xf32>) -> (tensor<1x1x16xf32>, tensor<1x8x8xf32>) {
    %g, %t = dist.all_gather %x on @grid grid_axes = [0] gather_axis = 2 : tensor<1x1x8xf32> -> tensor<1x1x16xf32>
    dist.wait %t
    %y = braid.linear %g, %w : tensor<1x1x16xf32>, tensor<16x16xf32> -> tensor<1x1x16xf32>
    %h, %u = dist.all_gather %z on @grid grid_axes = [0] gather_axis = 1 : tensor<1x4x8xf32> -> tensor<1x8x8xf32>
    dist.wait %u
    return %y, %h : tensor<1x1x16xf32>, tensor<1x8x8xf32>
  }
}

// -----

// Llama 3 70B's first product under tp=8 with sequence parallelism: each
// step's chunk (1024 rows x 8192 x 3584, 60 GFLOP: 61 us at the H100's bf16
// peak) outlasts the shift of the next 16 MiB block over NVLink (49 us):
// the cost model takes the ring.
// CHECK-LABEL: func.func @large
// AUTO-LABEL: func.func @large
// AUTO-NOT:     dist.all_gather
// AUTO-COUNT-7: dist.shift
// AUTO:         dist.assemble
module {
  shard.grid @grid(shape = 8) {braid.axes = ["tp"]}
  func.func @large(%x: tensor<1x1024x8192xbf16>, %w: tensor<3584x8192xbf16>) -> tensor<1x8192x3584xbf16> {
    %g, %t = dist.all_gather %x on @grid grid_axes = [0] gather_axis = 1 : tensor<1x1024x8192xbf16> -> tensor<1x8192x8192xbf16>
    dist.wait %t
    %y = braid.linear %g, %w transpose_weight : tensor<1x8192x8192xbf16>, tensor<3584x8192xbf16> -> tensor<1x8192x3584xbf16>
    return %y : tensor<1x8192x3584xbf16>
  }
}

// -----

// The other half: a product's rows summed over 2 ranks and scattered along
// the sequence. Step 0 computes the rows of block (c - 1) mod 2 and passes
// them on (a cyclic shift by +1) while step 1 computes block c's, to which
// it adds the neighbour's: the rank's block, summed. The flat re-layout of
// the lowering goes with the reduce-scatter.
// CHECK-LABEL: func.func @partial_sums
// CHECK-NOT:     dist.reduce_scatter
// CHECK:         %[[B0:.*]] = dist.block %arg0 along 1 offset 1 on @grid grid_axes = [0] : tensor<2x8x6xf32> -> tensor<2x4x6xf32>
// CHECK-NEXT:    %[[P0:.*]] = braid.linear %[[B0]], %arg1 : tensor<2x4x6xf32>, tensor<6x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %[[S:.*]], %[[T:.*]] = dist.shift %[[P0]] on @grid grid_axes = [0] offset = 1 cyclic : tensor<2x4x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %[[B1:.*]] = dist.block %arg0 along 1 offset 0 on @grid grid_axes = [0]
// CHECK-NEXT:    %[[P1:.*]] = braid.linear %[[B1]], %arg1
// CHECK-NEXT:    dist.wait %[[T]]
// CHECK-NEXT:    %[[SUM:.*]] = braid.add %[[S]], %[[P1]] : tensor<2x4x16xf32>
// CHECK-NEXT:    return %[[SUM]]
// AUTO-LABEL: func.func @partial_sums
// AUTO:         dist.reduce_scatter
module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @partial_sums(%h: tensor<2x8x6xf32>, %w: tensor<6x16xf32>) -> tensor<2x4x16xf32> {
    %y = braid.linear %h, %w : tensor<2x8x6xf32>, tensor<6x16xf32> -> tensor<2x8x16xf32>
    %s = braid.reshape %y : tensor<2x8x16xf32> -> tensor<2x2x4x16xf32>
    %m = braid.transpose %s [1, 0, 2, 3] : tensor<2x2x4x16xf32> -> tensor<2x2x4x16xf32>
    %f = braid.reshape %m : tensor<2x2x4x16xf32> -> tensor<2x128xf32>
    %r, %t = dist.reduce_scatter %f on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<2x128xf32> -> tensor<1x128xf32>
    dist.wait %t
    %b = braid.reshape %r : tensor<1x128xf32> -> tensor<2x4x16xf32>
    return %b : tensor<2x4x16xf32>
  }
}

// -----

// A backward's input gradient: the sum of the products that read the input
// (dx = dq wq^T + dk wk^T), summed over the ranks and scattered. Each step
// computes its block's rows of both products and adds them before the
// partial sum moves on; a sum with another term (%extra) keeps its
// reduce-scatter.
// CHECK-LABEL: func.func @sum_of_products
// CHECK:         %[[A0:.*]] = dist.block %arg0 along 1 offset 1 on @grid grid_axes = [0] : tensor<1x8x6xf32> -> tensor<1x4x6xf32>
// CHECK-NEXT:    %[[P0:.*]] = braid.linear %[[A0]], %arg1 transpose_weight
// CHECK-NEXT:    %[[B0:.*]] = dist.block %arg2 along 1 offset 1 on @grid grid_axes = [0] : tensor<1x8x4xf32> -> tensor<1x4x4xf32>
// CHECK-NEXT:    %[[Q0:.*]] = braid.linear %[[B0]], %arg3 transpose_weight
// CHECK-NEXT:    %[[L0:.*]] = braid.add %[[P0]], %[[Q0]] : tensor<1x4x16xf32>
// CHECK-NEXT:    %[[S:.*]], %[[T:.*]] = dist.shift %[[L0]] on @grid grid_axes = [0] offset = 1 cyclic
// CHECK-NEXT:    %[[A1:.*]] = dist.block %arg0 along 1 offset 0
// CHECK-NEXT:    %[[P1:.*]] = braid.linear %[[A1]], %arg1 transpose_weight
// CHECK-NEXT:    %[[B1:.*]] = dist.block %arg2 along 1 offset 0
// CHECK-NEXT:    %[[Q1:.*]] = braid.linear %[[B1]], %arg3 transpose_weight
// CHECK-NEXT:    %[[L1:.*]] = braid.add %[[P1]], %[[Q1]]
// CHECK-NEXT:    dist.wait %[[T]]
// CHECK-NEXT:    %[[SUM:.*]] = braid.add %[[S]], %[[L1]] : tensor<1x4x16xf32>
// CHECK:         dist.reduce_scatter
// CHECK:         return %[[SUM]]
// AUTO-LABEL: func.func @sum_of_products
// AUTO-COUNT-2: dist.reduce_scatter
module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @sum_of_products(%dq: tensor<1x8x6xf32>, %wq: tensor<16x6xf32>, %dk: tensor<1x8x4xf32>, %wk: tensor<16x4xf32>, %extra: tensor<1x8x16xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x16xf32>) {
    %p = braid.linear %dq, %wq transpose_weight : tensor<1x8x6xf32>, tensor<16x6xf32> -> tensor<1x8x16xf32>
    %q = braid.linear %dk, %wk transpose_weight : tensor<1x8x4xf32>, tensor<16x4xf32> -> tensor<1x8x16xf32>
    %y = braid.add %p, %q : tensor<1x8x16xf32>
    %r, %t = dist.reduce_scatter %y on @grid grid_axes = [0] reduction = sum scatter_axis = 1 : tensor<1x8x16xf32> -> tensor<1x4x16xf32>
    dist.wait %t
    %p2 = braid.linear %dq, %wq transpose_weight : tensor<1x8x6xf32>, tensor<16x6xf32> -> tensor<1x8x16xf32>
    %y2 = braid.add %p2, %extra : tensor<1x8x16xf32>
    %r2, %t2 = dist.reduce_scatter %y2 on @grid grid_axes = [0] reduction = sum scatter_axis = 1 : tensor<1x8x16xf32> -> tensor<1x4x16xf32>
    dist.wait %t2
    return %r, %r2 : tensor<1x4x16xf32>, tensor<1x4x16xf32>
  }
}

// -----

// Llama 3 70B's query, key and value products on tp=8 with sequence
// parallelism (one rank's 1024 of 8192 positions): a step's chunks (about
// 38 us on an H100 at the roofline, launches included) are shorter than the
// shift of the next block (49 us), but the ring (one step, then seven
// shifts, then the assembly: about 400 us) still beats the gather the
// products would wait for and the products on the whole (about 520 us), so
// auto takes it.
// AUTO-LABEL: func.func @qkv
// AUTO-NOT:     dist.all_gather
// AUTO-COUNT-7: dist.shift
// AUTO:         dist.assemble
module {
  shard.grid @grid(shape = 8) {braid.axes = ["tp"]}
  func.func @qkv(%x: tensor<1x1024x8192xbf16>, %wq: tensor<8192x1024xbf16>, %wk: tensor<8192x128xbf16>, %wv: tensor<8192x128xbf16>) -> (tensor<1x8192x1024xbf16>, tensor<1x8192x128xbf16>, tensor<1x8192x128xbf16>) {
    %g, %t = dist.all_gather %x on @grid grid_axes = [0] gather_axis = 1 : tensor<1x1024x8192xbf16> -> tensor<1x8192x8192xbf16>
    dist.wait %t
    %q = braid.linear %g, %wq : tensor<1x8192x8192xbf16>, tensor<8192x1024xbf16> -> tensor<1x8192x1024xbf16>
    %k = braid.linear %g, %wk : tensor<1x8192x8192xbf16>, tensor<8192x128xbf16> -> tensor<1x8192x128xbf16>
    %v = braid.linear %g, %wv : tensor<1x8192x8192xbf16>, tensor<8192x128xbf16> -> tensor<1x8192x128xbf16>
    return %q, %k, %v : tensor<1x8192x1024xbf16>, tensor<1x8192x128xbf16>, tensor<1x8192x128xbf16>
  }
}
