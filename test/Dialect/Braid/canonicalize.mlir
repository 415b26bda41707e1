// RUN: braid-opt %s --canonicalize --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @reshape_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x32xf32>)
func.func @reshape_chain(%x: tensor<2x16x32xf32>) -> tensor<32x32xf32> {
  // CHECK-NEXT: %[[R:.*]] = braid.reshape %[[X]] : tensor<2x16x32xf32> -> tensor<32x32xf32>
  // CHECK-NEXT: return %[[R]]
  %0 = braid.reshape %x : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  %1 = braid.reshape %0 : tensor<2x16x4x8xf32> -> tensor<32x32xf32>
  return %1 : tensor<32x32xf32>
}

// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
func.func @reshape_identity(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: return %[[X]]
  %0 = braid.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
func.func @reshape_round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: return %[[X]]
  %0 = braid.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %1 = braid.reshape %0 : tensor<32xf32> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK-NEXT: return %[[X]]
  %0 = braid.transpose %x [0, 1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @transpose_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @transpose_chain(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  // [1, 0, 2] then [0, 2, 1] composes to [1, 2, 0].
  // CHECK-NEXT: %[[T:.*]] = braid.transpose %[[X]] [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  // CHECK-NEXT: return %[[T]]
  %0 = braid.transpose %x [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = braid.transpose %0 [0, 2, 1] : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
  return %1 : tensor<3x4x2xf32>
}

// CHECK-LABEL: func.func @transpose_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4x5xf32>)
func.func @transpose_inverse(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32> {
  // CHECK-NEXT: return %[[X]]
  %0 = braid.transpose %x [0, 2, 1, 3] : tensor<2x3x4x5xf32> -> tensor<2x4x3x5xf32>
  %1 = braid.transpose %0 [0, 2, 1, 3] : tensor<2x4x3x5xf32> -> tensor<2x3x4x5xf32>
  return %1 : tensor<2x3x4x5xf32>
}

// CHECK-LABEL: func.func @double_negation
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
func.func @double_negation(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK-NEXT: return %[[X]]
  %0 = braid.neg %x : tensor<8xf32>
  %1 = braid.neg %0 : tensor<8xf32>
  return %1 : tensor<8xf32>
}

// Pure ops without uses are erased; a single negation stays.
// CHECK-LABEL: func.func @dead_and_single
// CHECK-NEXT: %[[N:.*]] = braid.neg
// CHECK-NEXT: return %[[N]]
func.func @dead_and_single(%x: tensor<8xf32>, %w: tensor<8x8xf32>) -> tensor<8xf32> {
  %unused = braid.linear %x, %w : tensor<8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %0 = braid.neg %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}
