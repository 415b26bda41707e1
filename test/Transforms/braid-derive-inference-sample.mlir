// --braid-derive-inference with `sample`: prefill and decode end with
// braid.sample of their logits and return the ids besides them; on a grid,
// --braid-partition records the vocabulary's split on it and
// --convert-braid-to-dist expands it into its mode's all-gathers, whose
// per-sequence inputs the emitted descriptor names for the driver.
//
// RUN: braid-opt --braid-derive-inference="sample=true sample-mode=sample top-k-cap=8" %S/../../examples/llama-tiny.mlir | FileCheck %s
// RUN: braid-opt --braid-derive-inference="sample=true" %S/../../examples/gpt-tiny.mlir | braid-opt --braid-partition="grid=tp=2 gather-logits=false" 2>/dev/null | FileCheck %s --check-prefix=PAD
// RUN: braid-opt --braid-derive-inference="sample=true sample-mode=nucleus top-k-cap=4" %S/../../examples/llama-tiny.mlir | braid-opt --braid-training-pipeline="optimizer=none grid=dp=2,tp=2 gather-logits=false" -o %t.dptp.mlir
// RUN: FileCheck %s --check-prefix=DIST < %t.dptp.mlir
// RUN: rm -rf %t.dptp && braid-translate --braid-to-cpp --braid-output-dir=%t.dptp %t.dptp.mlir
// RUN: FileCheck %s --check-prefix=CPP < %t.dptp/decode.cpp
// RUN: not braid-opt --braid-derive-inference="sample=true top-k-cap=-1" %S/../../examples/llama-tiny.mlir 2>&1 | FileCheck %s --check-prefix=CAP

// CHECK-LABEL: func.func @prefill
// CHECK-SAME: (%{{.*}}: tensor<2x16xi32>, %{{.*}}: tensor<2xi32>, %{{.*}}: tensor<2xi32>, %[[SEEDS:.*]]: tensor<2xi64>, %[[STEPS:.*]]: tensor<2xi64>, %[[T:.*]]: tensor<2xf32>, %[[K:.*]]: tensor<2xi32>, %[[P:.*]]: tensor<2xf32>) -> (tensor<2x256xf32>, tensor<2xi32>)
// CHECK: %[[IDS:.*]] = braid.sample sample %[[L:.*]], %[[SEEDS]], %[[STEPS]], %[[T]], %[[K]], %[[P]] {top_k_cap = 8 : i64, vocab = 256 : i64}
// CHECK-NEXT: return %[[L]], %[[IDS]] : tensor<2x256xf32>, tensor<2xi32>
// CHECK-LABEL: func.func @decode
// CHECK-SAME: -> (tensor<2x256xf32>, tensor<2xi32>)
// CHECK: braid.sample sample
// CHECK-LABEL: func.func @forward
// CHECK-NOT: braid.sample
// CHECK: return

// GPT's 97 words on tp=2: blocks of 49, the last column padding.
// PAD-LABEL: func.func @prefill
// PAD: braid.sample greedy %{{.*}} {vocab = 97 : i64, vocab_axes = ["tp"]} : (tensor<2x49xf32>,
// PAD-LABEL: func.func @decode
// PAD: braid.sample greedy %{{.*}} vocab_axes = ["tp"]

// The nucleus schedule: 12 all-gathers of i64 words over tp (grid axis 1)
// per program, besides the logits' gather over dp.
// DIST-LABEL: func.func @prefill
// DIST: braid.sample_local max
// DIST-COUNT-12: dist.all_gather %{{.*}} on @grid grid_axes = [1] gather_axis = 0 : tensor<1x{{[0-9]+}}xi64>
// DIST: braid.sample_ids
// DIST-LABEL: func.func @decode
// DIST-COUNT-12: dist.all_gather %{{.*}} on @grid grid_axes = [1] gather_axis = 0 : tensor<1x{{[0-9]+}}xi64>
// DIST-LABEL: func.func @forward
// DIST-NOT: braid.sample

// CPP: braid_k_sample_local(
// CPP: braid_k_sample_merge(
// CPP: braid_k_sample_ids(
// CPP-DAG: {"seeds", BRAID_I64,
// CPP-DAG: {"steps", BRAID_I64,
// CPP-DAG: {"temperature", BRAID_F32,
// CPP-DAG: {"top_k", BRAID_I32,
// CPP-DAG: {"top_p", BRAID_F32,

// CAP: top-k-cap must be >= 0, found -1
