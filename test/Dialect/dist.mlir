// RUN: braid-opt %s | braid-opt | FileCheck %s
// RUN: braid-opt %s --mlir-print-op-generic | braid-opt | FileCheck %s

// CHECK-LABEL: func.func @transfers
// CHECK: %[[MB:.*]] = dist.microbatch %arg0[1 of 4] : tensor<8x16xi32> -> tensor<2x16xi32>
// CHECK: dist.send %arg1 to 1 on @grid grid_axes = [0] {tag = 3 : i64} : tensor<2x16x64xf32>
// CHECK: %[[R:.*]] = dist.recv from 0 on @grid grid_axes = [0] {tag = 4 : i64} : tensor<2x16x64xf32>
// CHECK: return %[[MB]], %[[R]]
module {
  shard.grid @grid(shape = 2x2)
  func.func @transfers(%tokens: tensor<8x16xi32>, %h: tensor<2x16x64xf32>) -> (tensor<2x16xi32>, tensor<2x16x64xf32>) {
    %mb = dist.microbatch %tokens[1 of 4] : tensor<8x16xi32> -> tensor<2x16xi32>
    dist.send %h to 1 on @grid grid_axes = [0] {tag = 3 : i64} : tensor<2x16x64xf32>
    %r = dist.recv from 0 on @grid grid_axes = [0] {tag = 4 : i64} : tensor<2x16x64xf32>
    return %mb, %r : tensor<2x16xi32>, tensor<2x16x64xf32>
  }
}
