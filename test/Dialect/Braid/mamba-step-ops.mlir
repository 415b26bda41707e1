// RUN: braid-opt %s | braid-opt | FileCheck %s

// CHECK-LABEL: func.func @prefill_layer
// CHECK: %[[Y:.*]], %{{.*}} = braid.conv_step %arg0, %arg2, %arg3 bias %arg4, %arg5 last %arg6 : tensor<2x3x8xf32>, tensor<2x6x8xf32>, tensor<8x4xf32> bias tensor<8xf32>, tensor<2xi32>, tensor<2xi32>
// CHECK: braid.scan_step %arg1, %[[Y]], %arg2, %arg7, %arg8, %arg8, %arg4, %arg5 last %arg6 delta_softplus : tensor<2x8x4xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<8xf32>, tensor<2xi32>, tensor<2xi32>
func.func @prefill_layer(%cs: tensor<2x3x8xf32>, %h: tensor<2x8x4xf32>, %x: tensor<2x6x8xf32>,
                         %w: tensor<8x4xf32>, %b: tensor<8xf32>, %pos: tensor<2xi32>,
                         %last: tensor<2xi32>, %A: tensor<8x4xf32>, %B: tensor<2x6x4xf32>) -> tensor<2x6x8xf32> {
  %y, %cs1 = braid.conv_step %cs, %x, %w bias %b, %pos last %last : tensor<2x3x8xf32>, tensor<2x6x8xf32>, tensor<8x4xf32> bias tensor<8xf32>, tensor<2xi32>, tensor<2xi32>
  %z, %h1 = braid.scan_step %h, %y, %x, %A, %B, %B, %b, %pos last %last delta_softplus : tensor<2x8x4xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<8xf32>, tensor<2xi32>, tensor<2xi32>
  return %z : tensor<2x6x8xf32>
}

// CHECK-LABEL: func.func @decode_layer
// CHECK: braid.conv_step %arg0, %arg2, %arg3, %arg4 : tensor<2x3x8xbf16>, tensor<2x1x8xbf16>, tensor<8x4xbf16>, tensor<2xi32>
// CHECK: braid.scan_step %arg1, %{{.*}}, %arg2, %arg5, %arg6, %arg6, %arg7, %arg4 : tensor<2x8x4xf32>, tensor<2x1x8xbf16>
func.func @decode_layer(%cs: tensor<2x3x8xbf16>, %h: tensor<2x8x4xf32>, %x: tensor<2x1x8xbf16>,
                        %w: tensor<8x4xbf16>, %pos: tensor<2xi32>, %A: tensor<8x4xbf16>,
                        %B: tensor<2x1x4xbf16>, %D: tensor<8xbf16>) -> tensor<2x1x8xbf16> {
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos : tensor<2x3x8xbf16>, tensor<2x1x8xbf16>, tensor<8x4xbf16>, tensor<2xi32>
  %z, %h1 = braid.scan_step %h, %y, %x, %A, %B, %B, %D, %pos : tensor<2x8x4xf32>, tensor<2x1x8xbf16>, tensor<2x1x8xbf16>, tensor<8x4xbf16>, tensor<2x1x4xbf16>, tensor<2x1x4xbf16>, tensor<8xbf16>, tensor<2xi32>
  return %z : tensor<2x1x8xbf16>
}

// A serving prefill's sequences in slots of states of 8 slots (S' free), and
// decode's identity form beside it.
// CHECK-LABEL: func.func @slots_layer
// CHECK: %[[Y:.*]], %{{.*}} = braid.conv_step %arg0, %arg2, %arg3 bias %arg4, %arg5 last %arg6 slots %arg7 : tensor<8x3x8xf32>, tensor<2x6x8xf32>, tensor<8x4xf32> bias tensor<8xf32>, tensor<2xi32>, tensor<2xi32> slots tensor<2xi32>
// CHECK: braid.scan_step %arg1, %[[Y]], %arg2, %arg8, %arg9, %arg9, %arg4, %arg5 last %arg6 slots %arg7 delta_softplus : tensor<8x8x4xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<8xf32>, tensor<2xi32>, tensor<2xi32> slots tensor<2xi32>
// CHECK: braid.scan_step %{{.*}} slots %arg7 : tensor<8x8x4xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<8xf32>, tensor<2xi32> slots tensor<2xi32>
func.func @slots_layer(%cs: tensor<8x3x8xf32>, %h: tensor<8x8x4xf32>, %x: tensor<2x6x8xf32>,
                       %w: tensor<8x4xf32>, %b: tensor<8xf32>, %pos: tensor<2xi32>,
                       %last: tensor<2xi32>, %slots: tensor<2xi32>, %A: tensor<8x4xf32>,
                       %B: tensor<2x6x4xf32>) -> tensor<2x6x8xf32> {
  %y, %cs1 = braid.conv_step %cs, %x, %w bias %b, %pos last %last slots %slots : tensor<8x3x8xf32>, tensor<2x6x8xf32>, tensor<8x4xf32> bias tensor<8xf32>, tensor<2xi32>, tensor<2xi32> slots tensor<2xi32>
  %z, %h1 = braid.scan_step %h, %y, %x, %A, %B, %B, %b, %pos last %last slots %slots delta_softplus : tensor<8x8x4xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<8xf32>, tensor<2xi32>, tensor<2xi32> slots tensor<2xi32>
  // Slots without last rows (every row real).
  %u, %h2 = braid.scan_step %h1, %z, %x, %A, %B, %B, %b, %pos slots %slots : tensor<8x8x4xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<8xf32>, tensor<2xi32> slots tensor<2xi32>
  return %u : tensor<2x6x8xf32>
}
