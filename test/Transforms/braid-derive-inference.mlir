// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | FileCheck %s
// RUN: braid-opt --braid-derive-inference="batch=4 context=32 prompt-len=8" %S/../../examples/llama-tiny.mlir | FileCheck %s --check-prefix=SIZES
// RUN: braid-opt --braid-derive-inference %S/../../examples/gpt-tiny.mlir | FileCheck %s --check-prefix=GPT
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | FileCheck %s --check-prefix=FWD
// RUN: braid-opt --braid-derive-inference="batch=3" %S/../../examples/gpt-tiny.mlir | FileCheck %s --check-prefix=GPT3
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | braid-opt --braid-print-memory-plan="program=decode" -o /dev/null | FileCheck %s --check-prefix=PLAN
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | braid-opt --braid-print-memory-plan="program=prefill" -o /dev/null | FileCheck %s --check-prefix=PLAN-PREFILL
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | not braid-opt --braid-print-memory-plan="program=generate" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN-NAME

// The cache: one key and one value state per attention layer, [B, C, Hkv, D],
// shared by both programs; the training step and its layer function are gone.
// CHECK: braid.state @cache.layers.0.k zeros : tensor<2x16x2x16xf32>
// CHECK: braid.state @cache.layers.0.v zeros : tensor<2x16x2x16xf32>
// CHECK: braid.state @cache.layers.1.k zeros : tensor<2x16x2x16xf32>
// CHECK: braid.state @cache.layers.1.v zeros : tensor<2x16x2x16xf32>
// CHECK-NOT: func.func @step
// CHECK-NOT: func.func private @llama_layer(

// Each program has its own clone of the layer, with the positions and its
// caches as extra arguments: keys are written rotated, values as they are,
// and the queries attend over the cache. Each clone is marked with the kind
// of program it serves.
// CHECK-LABEL: func.func private @llama_layer.prefill(
// CHECK-SAME: %arg0: tensor<2x16x64xf32>
// CHECK-SAME: %[[POS:arg10]]: tensor<2xi32>, %[[KC:arg11]]: tensor<2x16x2x16xf32>, %[[VC:arg12]]: tensor<2x16x2x16xf32>) -> tensor<2x16x64xf32>
// CHECK-SAME: attributes {braid.serves = "prefill"}
// CHECK: %[[K:.*]] = braid.cache_write %[[KC]], %{{.*}}, %[[POS]] {rope_theta = 1.000000e+04 : f64} : tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32>, tensor<2xi32>
// CHECK: %[[V:.*]] = braid.cache_write %[[VC]], %{{.*}}, %[[POS]] : tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32>, tensor<2xi32>
// CHECK: braid.cache_attention %{{.*}}, %[[K]], %[[V]], %[[POS]] {rope_theta = 1.000000e+04 : f64} : tensor<2x16x4x16xf32>, tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32>, tensor<2xi32> -> tensor<2x16x4x16xf32>
// CHECK-NOT: braid.attention

// CHECK-LABEL: func.func private @llama_layer.decode(
// CHECK-SAME: %arg0: tensor<2x1x64xf32>
// CHECK-SAME: -> tensor<2x1x64xf32> attributes {braid.serves = "decode"}
// CHECK: braid.cache_write {{.*}} : tensor<2x16x2x16xf32>, tensor<2x1x2x16xf32>, tensor<2xi32>
// CHECK: braid.cache_attention {{.*}} -> tensor<2x1x4x16xf32>

// Prefill: the prompts, their first positions and their last rows; the final
// norm and the LM head run on the last row of each prompt only.
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %arg0: tensor<2x16xi32>, %[[PPOS:.*]]: tensor<2xi32>, %[[LAST:.*]]: tensor<2xi32>) -> tensor<2x256xf32> attributes {braid.entry = "prefill"}
// CHECK: %[[K0:.*]] = braid.get_param @cache.layers.0.k
// CHECK: %[[V0:.*]] = braid.get_param @cache.layers.0.v
// CHECK: call @llama_layer.prefill({{.*}}, %[[PPOS]], %[[K0]], %[[V0]])
// CHECK: braid.get_param @cache.layers.1.k
// CHECK: %[[H:.*]] = call @llama_layer.prefill(
// CHECK: %[[ROW:.*]] = braid.take_rows %[[H]], %[[LAST]] : tensor<2x16x64xf32>, tensor<2xi32> -> tensor<2x64xf32>
// CHECK: braid.rms_norm %[[ROW]], {{.*}} -> tensor<2x64xf32>
// CHECK: %[[LOGITS:.*]] = braid.linear {{.*}} -> tensor<2x256xf32>
// CHECK-NOT: cross_entropy
// CHECK: return %[[LOGITS]] : tensor<2x256xf32>

// Decode: one token per sequence at its position.
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %arg0: tensor<2x1xi32>, %{{.*}}: tensor<2xi32>) -> tensor<2x256xf32> attributes {braid.entry = "decode"}
// CHECK: call @llama_layer.decode(
// CHECK: %[[LASTD:.*]] = call @llama_layer.decode(
// CHECK: braid.reshape %[[LASTD]] : tensor<2x1x64xf32> -> tensor<2x64xf32>

// Forward: the step's forward pass over the whole context, returning every
// row's logits, with the training attention (the reference of --verify).
// FWD-LABEL: func.func private @llama_layer.forward(
// FWD-SAME: -> tensor<2x16x64xf32>
// FWD: braid.attention {{.*}} causal
// FWD-LABEL: func.func @forward(
// FWD-SAME: %arg0: tensor<2x16xi32>) -> tensor<2x16x256xf32> attributes {braid.entry = "forward"}
// FWD-NOT: braid.cache
// FWD: %[[ALL:.*]] = braid.linear {{.*}} -> tensor<2x16x256xf32>
// FWD-NEXT: return %[[ALL]] : tensor<2x16x256xf32>

// SIZES: braid.state @cache.layers.0.k zeros : tensor<4x32x2x16xf32>
// SIZES: func.func @prefill(%arg0: tensor<4x8xi32>, %arg1: tensor<4xi32>, %arg2: tensor<4xi32>) -> tensor<4x256xf32>
// SIZES: func.func @decode(%arg0: tensor<4x1xi32>, %arg1: tensor<4xi32>) -> tensor<4x256xf32>
// SIZES: func.func @forward(%arg0: tensor<4x32xi32>) -> tensor<4x32x256xf32>

// GPT's learned positions are added at each sequence's offset; its LM head
// (tied to the embedding) runs on one row per sequence.
// GPT-LABEL: func.func @prefill(
// GPT: %[[WPE:.*]] = braid.get_param @pos_embeddings
// GPT: %[[E:.*]] = braid.embedding %arg0, %{{.*}} : tensor<2x16xi32>, tensor<97x64xf32> -> tensor<2x16x64xf32>
// GPT: braid.add_positions %[[E]], %[[WPE]], %arg1 : tensor<2x16x64xf32>, tensor<16x64xf32>, tensor<2xi32> -> tensor<2x16x64xf32>
// GPT: braid.take_rows
// GPT: braid.linear {{.*}} transpose_weight : tensor<2x64xf32>, tensor<97x64xf32> -> tensor<2x97xf32>
// GPT3: braid.state @cache.layers.0.k zeros : tensor<3x16x4x16xf32>
// GPT3: braid.add_positions {{.*}} : tensor<3x16x64xf32>, tensor<16x64xf32>, tensor<3xi32> -> tensor<3x16x64xf32>
// GPT3: braid.add_positions {{.*}} : tensor<3x1x64xf32>, tensor<16x64xf32>, tensor<3xi32> -> tensor<3x1x64xf32>
// GPT-LABEL: func.func @decode(
// GPT: braid.add_positions {{.*}} : tensor<2x1x64xf32>, tensor<16x64xf32>, tensor<2xi32> -> tensor<2x1x64xf32>

// The memory plan: the caches are states of the arena's persistent part,
// and the cache writes update them in place (no frame buffer of cache size).
// Both programs place the parameters and the caches alike, so one arena
// serves prefill and then decode.
// PLAN: param @output offset 361728 bytes 65536
// PLAN-NEXT: state @cache.layers.0.k offset 427264 bytes 4096
// PLAN: state @cache.layers.1.v offset 439552 bytes 4096
// PLAN-NEXT: input #0 offset 443648 bytes 8
// PLAN-NEXT: input #1 offset 443712 bytes 8
// PLAN-NEXT: output #0 offset 443776 bytes 2048
// PLAN: func @llama_layer.decode frame_bytes 3072
// PLAN-NOT: buffer {{.*}} bytes 4096
// PLAN-PREFILL: state @cache.layers.0.k offset 427264 bytes 4096
// PLAN-PREFILL: state @cache.layers.1.v offset 439552 bytes 4096
// PLAN-PREFILL: func @llama_layer.prefill
// PLAN-NAME: error: --braid-print-memory-plan: no program @generate; the module's: @prefill, @decode, @forward
