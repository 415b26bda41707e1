// RUN: braid-opt %s | braid-opt | FileCheck %s
// RUN: braid-opt %s --mlir-print-op-generic | braid-opt | FileCheck %s

// The local pieces of a prefill's Mamba steps over cp chunks of the prompt
// round-trip: the chunk's convolution after its halo, its scan from the
// gathered decays and final states, and the take of each sequence's state
// from the chunk holding its last row (bf16 operands, the SSM state f32).
// CHECK-LABEL: func.func @chunks
// CHECK: %[[Y:.*]], %[[CS:.*]] = braid.conv_step_chunk %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}}, %{{.*}} last %{{.*}} at %{{.*}} of 16 : tensor<2x3x32xbf16>, tensor<2x8x32xbf16>, tensor<32x4xbf16> bias tensor<32xbf16>, tensor<2xi32>
// CHECK: %[[SY:.*]], %[[SS:.*]] = braid.scan_step_chunk %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} last %{{.*}} at %{{.*}} of 16 delta_softplus : tensor<2x32x4xf32>, tensor<4x32x4xf32>, tensor<2x8x32xbf16>, tensor<2x8x32xbf16>, tensor<32x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<32xbf16>, tensor<2xi32>
// CHECK: braid.take_chunk_state %{{.*}}, %{{.*}}, %{{.*}} of 8 : tensor<2x3x32xbf16>, tensor<4x3x32xbf16>, tensor<2xi32>
func.func @chunks(%first: index, %cs: tensor<2x3x32xbf16>, %halo: tensor<2x3x32xbf16>, %x: tensor<2x8x32xbf16>, %w: tensor<32x4xbf16>, %b: tensor<32xbf16>, %pos: tensor<2xi32>, %last: tensor<2xi32>, %h: tensor<2x32x4xf32>, %decays: tensor<4x32x4xf32>, %hends: tensor<4x32x4xf32>, %A: tensor<32x4xbf16>, %B: tensor<2x8x4xbf16>, %C: tensor<2x8x4xbf16>, %D: tensor<32xbf16>, %all: tensor<4x3x32xbf16>) -> (tensor<2x8x32xbf16>, tensor<2x3x32xbf16>, tensor<2x8x32xbf16>, tensor<2x32x4xf32>, tensor<2x3x32xbf16>) {
  %y, %c = braid.conv_step_chunk %cs, %halo, %x, %w bias %b, %pos last %last at %first of 16 : tensor<2x3x32xbf16>, tensor<2x8x32xbf16>, tensor<32x4xbf16> bias tensor<32xbf16>, tensor<2xi32>
  %sy, %s = braid.scan_step_chunk %h, %decays, %hends, %x, %x, %A, %B, %C, %D, %pos last %last at %first of 16 delta_softplus : tensor<2x32x4xf32>, tensor<4x32x4xf32>, tensor<2x8x32xbf16>, tensor<2x8x32xbf16>, tensor<32x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<32xbf16>, tensor<2xi32>
  %n = braid.take_chunk_state %cs, %all, %last of 8 : tensor<2x3x32xbf16>, tensor<4x3x32xbf16>, tensor<2xi32>
  return %y, %c, %sy, %s, %n : tensor<2x8x32xbf16>, tensor<2x3x32xbf16>, tensor<2x8x32xbf16>, tensor<2x32x4xf32>, tensor<2x3x32xbf16>
}
