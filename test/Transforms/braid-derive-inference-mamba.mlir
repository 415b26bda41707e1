// Mamba layers in the inference programs: each braid.conv1d / selective_scan of
// prefill and decode becomes its step over the new rows from a persistent state
// (cache.layers.<n>.conv [B, K-1, Di], .ssm f32 [B, Di, N]), updated in place;
// prefill's layer functions take each prompt's last row, where the states are
// taken; the forward program keeps the whole-sequence ops.
// RUN: braid-opt --braid-derive-inference %S/../../examples/mamba-tiny.mlir | FileCheck %s
// RUN: braid-opt --braid-derive-inference="batch=3 prompt-len=8" %S/../../examples/mamba-tiny.mlir | FileCheck %s --check-prefix=SIZES
// RUN: braid-opt --braid-derive-inference %S/../../examples/hybrid-tiny.mlir | FileCheck %s --check-prefix=HYBRID
// RUN: braid-opt --braid-derive-inference %S/../../examples/mamba-tiny.mlir | braid-opt --braid-print-memory-plan="program=decode" -o /dev/null | FileCheck %s --check-prefix=PLAN

// CHECK:      braid.state @cache.layers.0.conv zeros : tensor<2x3x128xf32>
// CHECK-NEXT: braid.state @cache.layers.0.ssm zeros : tensor<2x128x16xf32>
// CHECK-NEXT: braid.state @cache.layers.1.conv zeros : tensor<2x3x128xf32>
// CHECK-NEXT: braid.state @cache.layers.1.ssm zeros : tensor<2x128x16xf32>

// Prefill: positions, last rows, then the two states.
// CHECK-LABEL: func.func private @mamba_layer.prefill(
// CHECK-SAME:    %[[POS:arg14]]: tensor<2xi32>, %[[LAST:arg15]]: tensor<2xi32>, %[[CONV:arg16]]: tensor<2x3x128xf32>, %[[SSM:arg17]]: tensor<2x128x16xf32>) -> tensor<2x16x64xf32>
// CHECK:         %[[X:.*]] = braid.linear %{{.*}}, %arg2
// CHECK:         %[[Y:.*]], %{{.*}} = braid.conv_step %[[CONV]], %[[X]], %arg4 bias %arg5, %[[POS]] last %[[LAST]] : tensor<2x3x128xf32>, tensor<2x16x128xf32>, tensor<128x4xf32> bias tensor<128xf32>, tensor<2xi32>, tensor<2xi32>
// CHECK:         %[[ACT:.*]] = braid.silu %[[Y]]
// CHECK:         braid.scan_step %[[SSM]], %[[ACT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %arg12, %[[POS]] last %[[LAST]] delta_softplus : tensor<2x128x16xf32>, tensor<2x16x128xf32>
// CHECK-NOT:     braid.conv1d
// CHECK-NOT:     braid.selective_scan

// Decode: no last rows (its one row is the last).
// CHECK-LABEL: func.func private @mamba_layer.decode(
// CHECK-SAME:    %[[DPOS:arg14]]: tensor<2xi32>, %[[DCONV:arg15]]: tensor<2x3x128xf32>, %[[DSSM:arg16]]: tensor<2x128x16xf32>) -> tensor<2x1x64xf32>
// CHECK:         braid.conv_step %[[DCONV]], %{{.*}}, %arg4 bias %arg5, %[[DPOS]] : tensor<2x3x128xf32>, tensor<2x1x128xf32>, tensor<128x4xf32> bias tensor<128xf32>, tensor<2xi32>
// CHECK:         braid.scan_step %[[DSSM]], %{{.*}}, %[[DPOS]] delta_softplus : tensor<2x128x16xf32>, tensor<2x1x128xf32>

// The forward program is the step's.
// CHECK-LABEL: func.func private @mamba_layer.forward(
// CHECK:         braid.conv1d
// CHECK:         braid.selective_scan

// CHECK-LABEL: func.func @prefill(%arg0: tensor<2x16xi32>, %arg1: tensor<2xi32>, %arg2: tensor<2xi32>) -> tensor<2x128xf32>
// CHECK:         %[[C0:.*]] = braid.get_param @cache.layers.0.conv : tensor<2x3x128xf32>
// CHECK-NEXT:    %[[S0:.*]] = braid.get_param @cache.layers.0.ssm : tensor<2x128x16xf32>
// CHECK-NEXT:    call @mamba_layer.prefill({{.*}}, %arg1, %arg2, %[[C0]], %[[S0]])
// CHECK:         %[[C1:.*]] = braid.get_param @cache.layers.1.conv
// CHECK-NEXT:    %[[S1:.*]] = braid.get_param @cache.layers.1.ssm
// CHECK-NEXT:    call @mamba_layer.prefill({{.*}}, %arg1, %arg2, %[[C1]], %[[S1]])
// CHECK:         braid.take_rows %{{.*}}, %arg2
// CHECK-LABEL: func.func @decode(%arg0: tensor<2x1xi32>, %arg1: tensor<2xi32>) -> tensor<2x128xf32>
// CHECK:         call @mamba_layer.decode({{.*}}, %arg1, %{{.*}}, %{{.*}})
// CHECK-LABEL: func.func @forward(%arg0: tensor<2x16xi32>) -> tensor<2x16x128xf32>
// CHECK-NOT:     cache.

// The states follow the programs' batch; the prompt length only prefill's rows.
// SIZES:      braid.state @cache.layers.0.conv zeros : tensor<3x3x128xf32>
// SIZES-NEXT: braid.state @cache.layers.0.ssm zeros : tensor<3x128x16xf32>
// SIZES:      braid.conv_step {{.*}} : tensor<3x3x128xf32>, tensor<3x8x128xf32>, tensor<128x4xf32> bias tensor<128xf32>, tensor<3xi32>, tensor<3xi32>
// SIZES:      braid.conv_step {{.*}} : tensor<3x3x128xf32>, tensor<3x1x128xf32>, tensor<128x4xf32> bias tensor<128xf32>, tensor<3xi32>

// A hybrid carries both: Mamba states per Mamba layer, a KV cache per attention
// layer; the attention layer's prefill function takes no last rows.
// HYBRID:      braid.state @cache.layers.0.conv zeros : tensor<2x3x128xf32>
// HYBRID-NEXT: braid.state @cache.layers.0.ssm zeros : tensor<2x128x16xf32>
// HYBRID-NEXT: braid.state @cache.layers.1.conv zeros : tensor<2x3x128xf32>
// HYBRID-NEXT: braid.state @cache.layers.1.ssm zeros : tensor<2x128x16xf32>
// HYBRID-NEXT: braid.state @cache.layers.2.k zeros : tensor<2x16x2x16xf32>
// HYBRID-NEXT: braid.state @cache.layers.2.v zeros : tensor<2x16x2x16xf32>
// HYBRID-NEXT: braid.state @cache.layers.3.conv zeros : tensor<2x3x128xf32>
// HYBRID-NEXT: braid.state @cache.layers.3.ssm zeros : tensor<2x128x16xf32>
// HYBRID-LABEL: func.func private @mamba_moe_layer.prefill(
// HYBRID-SAME:    tensor<2xi32>, %{{.*}}: tensor<2xi32>, %{{.*}}: tensor<2x3x128xf32>, %{{.*}}: tensor<2x128x16xf32>) -> tensor<2x16x64xf32>
// HYBRID-LABEL: func.func private @attn_mlp_layer.prefill(
// HYBRID-SAME:    %{{.*}}: tensor<128x64xf32>, %{{.*}}: tensor<2xi32>, %{{.*}}: tensor<2x16x2x16xf32>, %{{.*}}: tensor<2x16x2x16xf32>) -> tensor<2x16x64xf32>
// HYBRID-LABEL: func.func @prefill(
// HYBRID:         call @mamba_mlp_layer.prefill({{.*}}, %arg1, %arg2, %{{.*}}, %{{.*}})
// HYBRID:         call @mamba_moe_layer.prefill({{.*}}, %arg1, %arg2, %{{.*}}, %{{.*}})
// HYBRID:         call @attn_mlp_layer.prefill({{.*}}, %arg1, %{{.*}}, %{{.*}})
// HYBRID:         call @mamba_moe_layer.prefill({{.*}}, %arg1, %arg2, %{{.*}}, %{{.*}})

// In place: the states' new values get no buffer of their own in the frames
// (3072 and 16384 bytes); the states sit in the persistent part.
// PLAN:     state @cache.layers.0.conv offset {{[0-9]+}} bytes 3072
// PLAN:     state @cache.layers.0.ssm offset {{[0-9]+}} bytes 16384
// PLAN:     func @mamba_layer.decode frame_bytes
// PLAN-NOT: bytes 3072
// PLAN-NOT: bytes 16384
// PLAN:     func @decode frame_bytes
