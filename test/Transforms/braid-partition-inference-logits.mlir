// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir -o %t.inference.mlir
// RUN: braid-opt --braid-partition="grid=tp=2 gather-logits=false" %t.inference.mlir | FileCheck %s --check-prefix=TP2
// RUN: braid-opt --braid-partition="grid=dp=2,tp=2 gather-logits=false" %t.inference.mlir | FileCheck %s --check-prefix=DPTP
// RUN: braid-opt --braid-partition="grid=tp=2" %t.inference.mlir | FileCheck %s --check-prefix=GATHER
// RUN: braid-opt --braid-derive-inference %S/../../examples/gpt-tiny.mlir | braid-opt --braid-partition="grid=tp=2 gather-logits=false" 2>&1 >/dev/null | FileCheck %s --check-prefix=PAD-WARN --allow-empty
// RUN: braid-opt --braid-derive-inference %S/../../examples/gpt-tiny.mlir | braid-opt --braid-partition="grid=tp=2 gather-logits=false" 2>/dev/null | FileCheck %s --check-prefix=PAD
// RUN: braid-opt --braid-training-pipeline="optimizer=none grid=dp=2,tp=2 gather-logits=false" %t.inference.mlir -o %t.dptp.mlir
// RUN: FileCheck %s --check-prefix=DIST < %t.dptp.mlir
// RUN: rm -rf %t.dptp && braid-translate --braid-to-cpp --braid-output-dir=%t.dptp %t.dptp.mlir
// RUN: FileCheck %s --check-prefix=CPP < %t.dptp/decode.cpp
// RUN: FileCheck %s --check-prefix=CPP < %t.dptp/prefill.cpp
// RUN: FileCheck %s --check-prefix=CPP-FWD < %t.dptp/forward.cpp

// gather-logits=false: the inference programs (prefill, decode and forward)
// return each tp rank's block of the vocabulary-parallel logits (the LM
// head's columns) instead of gathering them at the return, and mark the
// result with its global shape and split, for a sampler that never gathers
// the logits (runtime/src/sampling_parallel.h).
// TP2-LABEL: func.func @prefill(
// TP2-SAME: -> (tensor<2x128xf32> {braid.global_shape = array<i64: 2, 256>, braid.split = {{\[}}[], ["tp"]]})
// TP2: %[[L:.*]] = braid.linear {{.*}} -> tensor<2x128xf32>
// TP2-NEXT: return %[[L]] : tensor<2x128xf32>
// TP2-LABEL: func.func @decode(
// TP2-SAME: -> (tensor<2x128xf32> {braid.global_shape = array<i64: 2, 256>, braid.split = {{\[}}[], ["tp"]]})
// TP2-NOT: shard.all_gather
// TP2: %[[L:.*]] = braid.linear {{.*}} -> tensor<2x128xf32>
// TP2-NEXT: return %[[L]] : tensor<2x128xf32>
// TP2-LABEL: func.func @forward(
// TP2-SAME: -> (tensor<2x16x128xf32> {braid.global_shape = array<i64: 2, 16, 256>, braid.split = {{\[}}[], [], ["tp"]]})
// TP2-NOT: shard.all_gather
// TP2: %[[L:.*]] = braid.linear {{.*}} -> tensor<2x16x128xf32>
// TP2-NEXT: return %[[L]] : tensor<2x16x128xf32>

// dp x tp: the rows are still gathered over dp (every rank of a tp group
// holds every row of its block), only the vocabulary stays split.
// DPTP-LABEL: func.func @decode(
// DPTP-SAME: -> (tensor<2x128xf32> {braid.global_shape = array<i64: 2, 256>, braid.split = {{\[}}[], ["tp"]]})
// DPTP: %[[L:.*]] = braid.linear {{.*}} -> tensor<1x128xf32>
// DPTP-NEXT: %[[G:.*]] = shard.all_gather %[[L]] on @grid grid_axes = [0] gather_axis = 0 : tensor<1x128xf32> -> tensor<2x128xf32>
// DPTP-NEXT: return %[[G]] : tensor<2x128xf32>

// The default gathers (whole logits, no mark on the result).
// GATHER-LABEL: func.func @decode(
// GATHER-SAME: -> tensor<2x256xf32>
// GATHER: shard.all_gather {{.*}} gather_axis = 1 : tensor<2x128xf32> -> tensor<2x256xf32>
// GATHER-LABEL: func.func @forward(
// GATHER-SAME: -> tensor<2x16x256xf32>
// GATHER: shard.all_gather {{.*}} gather_axis = 2 : tensor<2x16x128xf32> -> tensor<2x16x256xf32>

// A vocabulary that tp does not divide (GPT's 97 over tp=2, its embedding
// tied to the LM head) is padded where it is split, as in training: with
// gathered logits the table stays whole (a padded split cannot be gathered,
// braid-partition-inference.mlir), returned split it is split, each rank's
// block ceil(97 / 2) = 49 long (the last rank's last column is padding,
// which the sampler never draws).
// PAD-WARN-NOT: warning
// PAD: braid.param @tok_embeddings normal(2.000000e-02) {braid.global_shape = array<i64: 97, 64>, braid.split = {{\[}}["tp"], []]} : tensor<49x64xf32>
// PAD-LABEL: func.func @decode(
// PAD-SAME: -> (tensor<2x49xf32> {braid.global_shape = array<i64: 2, 97>, braid.split = {{\[}}[], ["tp"]]})
// PAD-NOT: shard.all_gather
// PAD: %[[L:.*]] = braid.linear %{{.*}}, %{{.*}} transpose_weight : tensor<2x64xf32>, tensor<49x64xf32> -> tensor<2x49xf32>
// PAD-NEXT: return %[[L]] : tensor<2x49xf32>
// PAD-LABEL: func.func @forward(
// PAD-SAME: -> (tensor<2x16x49xf32> {braid.global_shape = array<i64: 2, 16, 97>, braid.split = {{\[}}[], [], ["tp"]]})

// Through the pipeline (its option of the same name) the mark survives the
// dist lowering, and the descriptor of the emitted programs declares the
// output's global shape and split as it declares a sharded input's.
// DIST-LABEL: func.func @decode(
// DIST-SAME: -> (tensor<2x128xf32> {braid.global_shape = array<i64: 2, 256>, braid.split = {{\[}}[], ["tp"]]})
// CPP: constexpr int64_t kShape[[LOCAL:[0-9]+]][] = {2, 128};
// CPP: constexpr int64_t kGlobal[[ID:[0-9]+]][] = {2, 256};
// CPP-NEXT: const char *const kSplit[[ID]][] = {"", "tp"};
// CPP: const braid_tensor_desc kOutputs[] = {
// CPP-NEXT: {nullptr, BRAID_F32, 2, kShape[[LOCAL]], BRAID_INIT_ZEROS, 0, 0, {{[0-9]+}}, kGlobal[[ID]], kSplit[[ID]]},
// CPP-NEXT: };
// CPP-FWD: constexpr int64_t kGlobal[[ID:[0-9]+]][] = {2, 16, 256};
// CPP-FWD-NEXT: const char *const kSplit[[ID]][] = {"", "", "tp"};
// CPP-FWD: const braid_tensor_desc kOutputs[] = {
// CPP-FWD-NEXT: {nullptr, BRAID_F32, 3, kShape{{[0-9]+}}, BRAID_INIT_ZEROS, 0, 0, {{[0-9]+}}, kGlobal[[ID]], kSplit[[ID]]},
// CPP-FWD-NEXT: };
