// RUN: braid-opt --braid-derive-inference %S/../../examples/moe-tiny.mlir | FileCheck %s
// RUN: braid-opt --braid-derive-inference="batch=3 context=12 prompt-len=5" %S/../../examples/moe-tiny.mlir | FileCheck %s --check-prefix=SIZES
// RUN: braid-opt --braid-derive-inference %S/../../examples/moe-tiny.mlir | braid-opt --braid-expand-expert-ffn | braid-translate --braid-to-cpp --braid-output-dir=%t.cpp -o /dev/null

// MoE layers at inference drop no token. The step's dispatch gives each
// expert 10 slots per group of 16 tokens (capacity_factor 1.25, k = 2); every
// inference program makes each token its own group (group_size 1) with one
// slot per expert, enough because a token's k experts are distinct: the
// slots per expert equal the program's tokens, B x L in prefill, B in decode
// and B x C in forward, and the combine reads the same groups.

// CHECK-LABEL: func.func private @moe_layer.prefill(
// CHECK: %[[W:.*]], %[[I:.*]] = braid.router %{{.*}} top_k 2 normalize : tensor<32x4xf32> -> tensor<32x2xf32>, tensor<32x2xi32>
// CHECK: braid.dispatch %{{.*}}, %[[I]] group_size 1 : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<4x32x64xf32>
// CHECK: braid.expert_ffn silu %{{.*}} : tensor<4x32x64xf32>, tensor<4x64x128xf32>, tensor<4x128x64xf32>, tensor<4x64x128xf32> -> tensor<4x32x64xf32>
// CHECK: braid.combine %{{.*}}, %[[W]], %[[I]] group_size 1 : tensor<4x32x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>

// CHECK-LABEL: func.func private @moe_layer.decode(
// CHECK: braid.dispatch %{{.*}}, %{{.*}} group_size 1 : tensor<2x64xf32>, tensor<2x2xi32> -> tensor<4x2x64xf32>
// CHECK: braid.combine %{{.*}} group_size 1 : tensor<4x2x64xf32>, tensor<2x2xf32>, tensor<2x2xi32> -> tensor<2x64xf32>

// The teacher-forcing reference drops nothing either, so padding rows and
// a sequence's later tokens take no slot from the rows decode compares.
// CHECK-LABEL: func.func private @moe_layer.forward(
// CHECK: braid.dispatch %{{.*}}, %{{.*}} group_size 1 : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<4x32x64xf32>
// CHECK: braid.combine %{{.*}} group_size 1 : tensor<4x32x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
// CHECK-NOT: group_size 16

// CHECK-LABEL: func.func @prefill(
// CHECK: call @moe_layer.prefill(
// CHECK-LABEL: func.func @decode(
// CHECK: call @moe_layer.decode(
// CHECK-LABEL: func.func @forward(
// CHECK: call @moe_layer.forward(

// Three sequences, prompts of 5 rows, a context of 12: 15, 3 and 36 slots.
// SIZES-LABEL: func.func private @moe_layer.prefill(
// SIZES: braid.dispatch %{{.*}} group_size 1 : tensor<15x64xf32>, tensor<15x2xi32> -> tensor<4x15x64xf32>
// SIZES: braid.combine %{{.*}} group_size 1 : tensor<4x15x64xf32>, tensor<15x2xf32>, tensor<15x2xi32> -> tensor<15x64xf32>
// SIZES-LABEL: func.func private @moe_layer.decode(
// SIZES: braid.dispatch %{{.*}} group_size 1 : tensor<3x64xf32>, tensor<3x2xi32> -> tensor<4x3x64xf32>
// SIZES: braid.combine %{{.*}} group_size 1 : tensor<4x3x64xf32>, tensor<3x2xf32>, tensor<3x2xi32> -> tensor<3x64xf32>
// SIZES-LABEL: func.func private @moe_layer.forward(
// SIZES: braid.dispatch %{{.*}} group_size 1 : tensor<36x64xf32>, tensor<36x2xi32> -> tensor<4x36x64xf32>
// SIZES: braid.combine %{{.*}} group_size 1 : tensor<4x36x64xf32>, tensor<36x2xf32>, tensor<36x2xi32> -> tensor<36x64xf32>
