// RUN: braid-opt %s --braid-expand-expert-ffn | FileCheck %s

// CHECK-LABEL: func.func @gated
// CHECK-SAME: (%[[X:.*]]: tensor<4x6x8xf32>, %[[UP:.*]]: tensor<4x8x16xf32>, %[[DOWN:.*]]: tensor<4x16x8xf32>, %[[GATE:.*]]: tensor<4x8x16xf32>)
func.func @gated(%x: tensor<4x6x8xf32>, %up: tensor<4x8x16xf32>, %down: tensor<4x16x8xf32>, %gate: tensor<4x8x16xf32>) -> tensor<4x6x8xf32> {
  // CHECK-DAG: %[[U:.*]] = braid.batch_matmul %[[X]], %[[UP]] : tensor<4x6x8xf32>, tensor<4x8x16xf32> -> tensor<4x6x16xf32>
  // CHECK-DAG: %[[G:.*]] = braid.batch_matmul %[[X]], %[[GATE]] : tensor<4x6x8xf32>, tensor<4x8x16xf32> -> tensor<4x6x16xf32>
  // CHECK: %[[A:.*]] = braid.glu silu %[[G]], %[[U]] : tensor<4x6x16xf32>
  // CHECK: %[[Y:.*]] = braid.batch_matmul %[[A]], %[[DOWN]] : tensor<4x6x16xf32>, tensor<4x16x8xf32> -> tensor<4x6x8xf32>
  // CHECK: return %[[Y]]
  %y = braid.expert_ffn silu %x, %up, %down gate %gate : tensor<4x6x8xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32> -> tensor<4x6x8xf32>
  return %y : tensor<4x6x8xf32>
}

// CHECK-LABEL: func.func @ungated
func.func @ungated(%x: tensor<4x6x8xbf16>, %up: tensor<4x8x16xbf16>, %down: tensor<4x16x8xbf16>) -> (tensor<4x6x8xbf16>, tensor<4x6x8xbf16>) {
  // CHECK: %[[U:.*]] = braid.batch_matmul
  // CHECK: %[[A:.*]] = braid.gelu %[[U]] tanh : tensor<4x6x16xbf16>
  // CHECK: braid.batch_matmul %[[A]]
  %y = braid.expert_ffn gelu_tanh %x, %up, %down : tensor<4x6x8xbf16>, tensor<4x8x16xbf16>, tensor<4x16x8xbf16> -> tensor<4x6x8xbf16>
  // CHECK: %[[U2:.*]] = braid.batch_matmul
  // CHECK: %[[R:.*]] = braid.relu %[[U2]] : tensor<4x6x16xbf16>
  // CHECK: braid.batch_matmul %[[R]]
  %z = braid.expert_ffn relu %x, %up, %down : tensor<4x6x8xbf16>, tensor<4x8x16xbf16>, tensor<4x16x8xbf16> -> tensor<4x6x8xbf16>
  // CHECK-NOT: braid.expert_ffn
  return %y, %z : tensor<4x6x8xbf16>, tensor<4x6x8xbf16>
}
