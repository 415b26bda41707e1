// The serving programs (page-size > 0, issue 43): every attention layer's KV
// cache is a pool of pages [N, P, Hkv, D] written and read through each row's
// page table (braid.paged_cache_write / paged_cache_attention); prefill has
// prefill-batch rows of prompt-len tokens, decode batch rows; both take each
// row's last real row (-1: idle) and page table, and prefill of a model with
// Mamba layers the decode row (slot) whose states it advances. Mamba states
// keep one slot per decode row.
// RUN: braid-opt --braid-derive-inference="batch=3 prefill-batch=2 prompt-len=8 page-size=4 kv-pages=10" %S/../../examples/llama-tiny.mlir | FileCheck %s
// RUN: braid-opt --braid-derive-inference="batch=3 prefill-batch=2 prompt-len=8 page-size=4" %S/../../examples/hybrid-tiny.mlir | FileCheck %s --check-prefix=HYBRID
// RUN: braid-opt --braid-derive-inference="batch=3 prefill-batch=2 prompt-len=8 page-size=4" %S/../../examples/mamba-tiny.mlir | FileCheck %s --check-prefix=MAMBA
// RUN: braid-opt --braid-derive-inference="batch=3 page-size=5 sample=true" %S/../../examples/llama-tiny.mlir | FileCheck %s --check-prefix=DEFAULTS
// RUN: not braid-opt --braid-derive-inference="kv-pages=3" %S/../../examples/llama-tiny.mlir 2>&1 | FileCheck %s --check-prefix=UNPAGED
// RUN: not braid-opt --braid-derive-inference="prefill-batch=1" %S/../../examples/llama-tiny.mlir 2>&1 | FileCheck %s --check-prefix=UNPAGED
// RUN: not braid-opt --braid-derive-inference="page-size=-1" %S/../../examples/llama-tiny.mlir 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// CHECK:      braid.state @cache.layers.0.k zeros : tensor<10x4x2x16xf32>
// CHECK-NEXT: braid.state @cache.layers.0.v zeros : tensor<10x4x2x16xf32>

// CHECK-LABEL: func.func private @llama_layer.prefill(
// CHECK-SAME:    %[[POS:arg10]]: tensor<2xi32>, %[[LAST:arg11]]: tensor<2xi32>, %[[PAGES:arg12]]: tensor<2x4xi32>, %[[KC:arg13]]: tensor<10x4x2x16xf32>, %[[VC:arg14]]: tensor<10x4x2x16xf32>) -> tensor<2x8x64xf32>
// CHECK:         %[[K:.*]] = braid.paged_cache_write %[[KC]], %{{.*}}, %[[POS]], %[[PAGES]], %[[LAST]] {rope_theta = 1.000000e+04 : f64} : tensor<10x4x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2xi32>, tensor<2x4xi32>, tensor<2xi32>
// CHECK:         %[[V:.*]] = braid.paged_cache_write %[[VC]], %{{.*}}, %[[POS]], %[[PAGES]], %[[LAST]] : tensor<10x4x2x16xf32>
// CHECK:         braid.paged_cache_attention %{{.*}}, %[[K]], %[[V]], %[[POS]], %[[PAGES]], %[[LAST]] {rope_theta = 1.000000e+04 : f64} : tensor<2x8x4x16xf32>, tensor<10x4x2x16xf32>, tensor<10x4x2x16xf32>, tensor<2xi32>, tensor<2x4xi32>, tensor<2xi32> -> tensor<2x8x4x16xf32>
// CHECK-NOT:     braid.attention

// CHECK-LABEL: func.func private @llama_layer.decode(
// CHECK-SAME:    %{{.*}}: tensor<3xi32>, %{{.*}}: tensor<3xi32>, %{{.*}}: tensor<3x4xi32>, %{{.*}}: tensor<10x4x2x16xf32>, %{{.*}}: tensor<10x4x2x16xf32>) -> tensor<3x1x64xf32>
// CHECK:         braid.paged_cache_attention {{.*}} : tensor<3x1x4x16xf32>, tensor<10x4x2x16xf32>, tensor<10x4x2x16xf32>, tensor<3xi32>, tensor<3x4xi32>, tensor<3xi32> -> tensor<3x1x4x16xf32>

// Prefill: tokens, positions, last rows, pages; the logits of each row's last real row.
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME:    %arg0: tensor<2x8xi32>, %arg1: tensor<2xi32>, %[[PLAST:arg2]]: tensor<2xi32>, %arg3: tensor<2x4xi32>) -> tensor<2x256xf32> attributes {braid.entry = "prefill"}
// CHECK:         braid.take_rows %{{.*}}, %[[PLAST]] : tensor<2x8x64xf32>, tensor<2xi32> -> tensor<2x64xf32>
// CHECK-LABEL: func.func @decode(
// CHECK-SAME:    %arg0: tensor<3x1xi32>, %arg1: tensor<3xi32>, %arg2: tensor<3xi32>, %arg3: tensor<3x4xi32>) -> tensor<3x256xf32> attributes {braid.entry = "decode"}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %arg0: tensor<3x16xi32>) -> tensor<3x16x256xf32>

// HYBRID:      braid.state @cache.layers.0.conv zeros : tensor<3x3x128xf32>
// HYBRID-NEXT: braid.state @cache.layers.0.ssm zeros : tensor<3x128x16xf32>
// HYBRID:      braid.state @cache.layers.2.k zeros : tensor<12x4x2x16xf32>
// HYBRID-LABEL: func.func private @mamba_mlp_layer.prefill(
// HYBRID-SAME:    %[[POS:arg18]]: tensor<2xi32>, %[[LAST:arg19]]: tensor<2xi32>, %[[SLOTS:arg20]]: tensor<2xi32>, %[[CONV:arg21]]: tensor<3x3x128xf32>, %[[SSM:arg22]]: tensor<3x128x16xf32>) -> tensor<2x8x64xf32>
// HYBRID:         braid.conv_step %[[CONV]], %{{.*}}, %arg4 bias %arg5, %[[POS]] last %[[LAST]] slots %[[SLOTS]] : tensor<3x3x128xf32>, tensor<2x8x128xf32>
// HYBRID:         braid.scan_step %[[SSM]], {{.*}}, %[[POS]] last %[[LAST]] slots %[[SLOTS]] delta_softplus : tensor<3x128x16xf32>, tensor<2x8x128xf32>
// HYBRID-LABEL: func.func private @mamba_mlp_layer.decode(
// HYBRID-SAME:    %[[DPOS:arg18]]: tensor<3xi32>, %[[DLAST:arg19]]: tensor<3xi32>, %{{.*}}: tensor<3x3x128xf32>, %{{.*}}: tensor<3x128x16xf32>) -> tensor<3x1x64xf32>
// HYBRID:         braid.conv_step %{{.*}}, %[[DPOS]] last %[[DLAST]] : tensor<3x3x128xf32>, tensor<3x1x128xf32>
// HYBRID-LABEL: func.func @prefill(
// HYBRID-SAME:    %arg0: tensor<2x8xi32>, %arg1: tensor<2xi32>, %arg2: tensor<2xi32>, %arg3: tensor<2x4xi32>, %arg4: tensor<2xi32>) -> tensor<2x128xf32>
// HYBRID-LABEL: func.func @decode(
// HYBRID-SAME:    %arg0: tensor<3x1xi32>, %arg1: tensor<3xi32>, %arg2: tensor<3xi32>, %arg3: tensor<3x4xi32>) -> tensor<3x128xf32>

// No attention layer, no page table.
// MAMBA-LABEL: func.func @prefill(
// MAMBA-SAME:    %arg0: tensor<2x8xi32>, %arg1: tensor<2xi32>, %arg2: tensor<2xi32>, %arg3: tensor<2xi32>) -> tensor<2x128xf32>
// MAMBA-LABEL: func.func @decode(
// MAMBA-SAME:    %arg0: tensor<3x1xi32>, %arg1: tensor<3xi32>, %arg2: tensor<3xi32>) -> tensor<3x128xf32>

// Defaults: prefill has the batch's rows and the context's tokens; the pool
// holds every row's whole context (3 x ceil(16 / 5) pages).
// DEFAULTS:      braid.state @cache.layers.0.k zeros : tensor<12x5x2x16xf32>
// DEFAULTS-LABEL: func.func @prefill(
// DEFAULTS-SAME:    %arg0: tensor<3x16xi32>, %arg1: tensor<3xi32>, %arg2: tensor<3xi32>, %arg3: tensor<3x4xi32>, %arg4: tensor<3xi64>

// UNPAGED: error: --braid-derive-inference: kv-pages and a prefill-batch other than the batch need a paged cache (page-size)
// NEGATIVE: error: --braid-derive-inference: prefill-batch, page-size and kv-pages must be >= 0
