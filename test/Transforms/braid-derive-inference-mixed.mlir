// The mixed serving programs (mixed-rows, issue 43): decode's shape with each
// size's rows, M rounded up to K groups of G rows (K = batch +
// prefill-batch: the rows whose logits one call may need), so that an
// iteration's decode rows and prompt chunks run as one call. Every row has its
// own position, last row and page table; the final norm, the LM head and the
// sampler run on one row per group, picked by `logit_rows` (named for the
// runtime by braid.input). It shares the pool with prefill and decode, and
// is of prefill's kind (its linears are a prefill's products).
// RUN: braid-opt --braid-derive-inference="batch=3 prefill-batch=2 prompt-len=4 page-size=4 sample=true mixed-rows=9" %S/../../examples/llama-tiny.mlir | FileCheck %s
// RUN: braid-opt --braid-derive-inference="batch=3 prefill-batch=2 prompt-len=4 page-size=4 mixed-rows=9" %S/../../examples/gpt-tiny.mlir | FileCheck %s --check-prefix=GPT
// RUN: not braid-opt --braid-derive-inference="batch=3 page-size=4 mixed-rows=3" %S/../../examples/llama-tiny.mlir 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: not braid-opt --braid-derive-inference="batch=3 mixed-rows=8" %S/../../examples/llama-tiny.mlir 2>&1 | FileCheck %s --check-prefix=UNPAGED
// RUN: not braid-opt --braid-derive-inference="batch=3 page-size=4 mixed-rows=8" %S/../../examples/hybrid-tiny.mlir 2>&1 | FileCheck %s --check-prefix=MAMBA
// RUN: not braid-opt --braid-derive-inference="batch=3 page-size=4 mixed-rows=-1" %S/../../examples/llama-tiny.mlir 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: braid-opt --braid-derive-inference="batch=3 page-size=4 mixed-rows=20,4,9,11" %S/../../examples/llama-tiny.mlir | FileCheck %s --check-prefix=SIZES
// RUN: not braid-opt --braid-derive-inference="batch=3 page-size=4 mixed-rows=4,8,14,20,26" %S/../../examples/llama-tiny.mlir 2>&1 | FileCheck %s --check-prefix=MANY

// One pool for every program: 3 sequences of 4 pages.
// CHECK:      braid.state @cache.layers.0.k zeros : tensor<12x4x2x16xf32>
// CHECK-NOT:  braid.state @cache.layers.0.k

// 9 rows in 5 groups: 10 rows of one token, each with its position, last row
// and page table.
// CHECK-LABEL: func.func private @llama_layer.mixed_0(
// CHECK-SAME:    %[[POS:arg10]]: tensor<10xi32>, %[[LAST:arg11]]: tensor<10xi32>, %[[PAGES:arg12]]: tensor<10x4xi32>, %[[KC:arg13]]: tensor<12x4x2x16xf32>, %{{.*}}: tensor<12x4x2x16xf32>) -> tensor<10x1x64xf32>
// CHECK:         braid.paged_cache_write %[[KC]], %{{.*}}, %[[POS]], %[[PAGES]], %[[LAST]] {{.*}} : tensor<12x4x2x16xf32>, tensor<10x1x2x16xf32>, tensor<10xi32>, tensor<10x4xi32>, tensor<10xi32>
// CHECK:         braid.paged_cache_attention {{.*}} : tensor<10x1x4x16xf32>, tensor<12x4x2x16xf32>, tensor<12x4x2x16xf32>, tensor<10xi32>, tensor<10x4xi32>, tensor<10xi32> -> tensor<10x1x4x16xf32>

// CHECK-LABEL: func.func @mixed_0(
// CHECK-SAME:    %arg0: tensor<10x1xi32>, %arg1: tensor<10xi32>, %arg2: tensor<10xi32>, %arg3: tensor<10x4xi32>, %[[GROUPS:arg4]]: tensor<5xi32> {braid.input = "logit_rows"}, %arg5: tensor<5xi64>, %arg6: tensor<5xi64>, %arg7: tensor<5xf32>, %arg8: tensor<5xi32>, %arg9: tensor<5xf32>) -> (tensor<5x256xf32>, tensor<5xi32>) attributes {braid.entry = "prefill"}
// CHECK:         %[[H:.*]] = call @llama_layer.mixed_0(
// CHECK:         %[[H2:.*]] = call @llama_layer.mixed_0(%[[H]],
// CHECK-NEXT:    %[[G:.*]] = braid.reshape %[[H2]] : tensor<10x1x64xf32> -> tensor<5x2x64xf32>
// CHECK-NEXT:    %[[ROWS:.*]] = braid.take_rows %[[G]], %[[GROUPS]] : tensor<5x2x64xf32>, tensor<5xi32> -> tensor<5x64xf32>
// CHECK:         braid.rms_norm %[[ROWS]]
// CHECK:         %[[LOGITS:.*]] = braid.linear {{.*}} -> tensor<5x256xf32>
// CHECK:         %[[IDS:.*]] = braid.sample greedy %[[LOGITS]], %arg5, %arg6, %arg7, %arg8, %arg9
// CHECK:         return %[[LOGITS]], %[[IDS]]

// Learned positions are added at each row's own position.
// GPT-LABEL: func.func @mixed_0(
// GPT-SAME:    %arg0: tensor<10x1xi32>, %[[POS:arg1]]: tensor<10xi32>
// GPT:         braid.add_positions %{{.*}}, %{{.*}}, %[[POS]] : tensor<10x1x64xf32>, tensor<16x64xf32>, tensor<10xi32> -> tensor<10x1x64xf32>
// GPT:         braid.take_rows %{{.*}}, %{{.*}} : tensor<5x2x64xf32>, tensor<5xi32> -> tensor<5x64xf32>

// SMALL: error: --braid-derive-inference: mixed-rows (3) must exceed the batch (3): its rows hold every decode row and the prompt tokens beside them
// UNPAGED: error: --braid-derive-inference: mixed-rows needs a paged cache (page-size)
// MAMBA: error: --braid-derive-inference: mixed-rows needs a model without Mamba layers (their states advance one token per call)
// NEGATIVE: error: --braid-derive-inference: mixed-rows (-1) must exceed the batch (3)

// Sizes in increasing order, each rounded up to a multiple of 6 groups (batch
// 3 and prefill-batch, by default the batch), the same size once: mixed_0 ..
// mixed_2.
// SIZES-DAG: func.func @mixed_0(%arg0: tensor<6x1xi32>
// SIZES-DAG: func.func @mixed_1(%arg0: tensor<12x1xi32>
// SIZES-DAG: func.func @mixed_2(%arg0: tensor<24x1xi32>
// SIZES-NOT: func.func @mixed_3
// MANY: error: --braid-derive-inference: mixed-rows has 5 sizes (after rounding up to multiples of 6); at most 4 are derived
