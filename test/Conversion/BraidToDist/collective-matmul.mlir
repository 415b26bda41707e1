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

// MODE: error: --braid-collective-matmul: mode must be auto, always or never, not 'sometimes'

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
// peak) outlasts the shift of the next 16 MiB block over NVLink (41 us):
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
