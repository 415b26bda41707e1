// RUN: braid-opt --braid-derive-inference --braid-training-pipeline="optimizer=none dtype=bf16" %S/../../examples/llama-tiny.mlir | FileCheck %s
// RUN: braid-opt --braid-derive-inference --braid-training-pipeline="optimizer=none dtype=bf16" %S/../../examples/gpt-tiny.mlir | FileCheck %s --check-prefix=GPT
// RUN: braid-opt --braid-derive-inference --braid-training-pipeline="optimizer=none dtype=bf16" %S/../../examples/mamba-tiny.mlir | FileCheck %s --check-prefix=MAMBA
// RUN: braid-opt --braid-derive-inference --braid-training-pipeline="grid=tp=2 optimizer=none dtype=bf16" %S/../../examples/mamba-tiny.mlir | FileCheck %s --check-prefix=MAMBA-TP
// RUN: braid-opt --braid-derive-inference --braid-convert-element-type="to=bf16 master-weights=true" %S/../../examples/llama-tiny.mlir | FileCheck %s --check-prefix=MASTER
// RUN: braid-opt --braid-derive-inference --braid-convert-element-type=to=f16 %S/../../examples/llama-tiny.mlir | FileCheck %s --check-prefix=F16
// RUN: braid-opt --braid-derive-inference --braid-training-pipeline="optimizer=none dtype=bf16" %S/../../examples/llama-tiny.mlir -o %t.mlir
// RUN: rm -rf %t.cpp && braid-translate --braid-to-cpp --braid-output-dir=%t.cpp %t.mlir -o /dev/null
// RUN: FileCheck %s --check-prefix=CPP < %t.cpp/decode.cpp

// The KV cache is state of the model's values, in the model's dtype
// (issue 42): --braid-convert-element-type converts the cache states with
// the parameters, and every program reads, writes and attends over bf16
// rows; prefill and decode return bf16 logits.
// CHECK: braid.param @tok_embeddings normal(2.000000e-02) : tensor<256x64xbf16>
// CHECK: braid.state @cache.layers.0.k zeros : tensor<2x16x2x16xbf16>
// CHECK: braid.state @cache.layers.0.v zeros : tensor<2x16x2x16xbf16>
// CHECK: braid.state @cache.layers.1.k zeros : tensor<2x16x2x16xbf16>
// CHECK: braid.state @cache.layers.1.v zeros : tensor<2x16x2x16xbf16>

// CHECK-LABEL: func.func private @llama_layer.prefill(
// CHECK-SAME: %[[POS:arg10]]: tensor<2xi32>, %[[KC:arg11]]: tensor<2x16x2x16xbf16>, %[[VC:arg12]]: tensor<2x16x2x16xbf16>) -> tensor<2x16x64xbf16>
// CHECK: %[[K:.*]] = braid.cache_write %[[KC]], %{{.*}}, %[[POS]] {rope_theta = 1.000000e+04 : f64} : tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2xi32>
// CHECK: %[[V:.*]] = braid.cache_write %[[VC]], %{{.*}}, %[[POS]] : tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2xi32>
// CHECK: braid.cache_attention %{{.*}}, %[[K]], %[[V]], %[[POS]] {rope_theta = 1.000000e+04 : f64} : tensor<2x16x4x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2xi32> -> tensor<2x16x4x16xbf16>

// CHECK-LABEL: func.func private @llama_layer.decode(
// CHECK-SAME: %arg0: tensor<2x1x64xbf16>
// CHECK: braid.cache_write {{.*}} : tensor<2x16x2x16xbf16>, tensor<2x1x2x16xbf16>, tensor<2xi32>
// CHECK: braid.cache_attention {{.*}} -> tensor<2x1x4x16xbf16>

// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: -> tensor<2x256xbf16> attributes {braid.entry = "prefill"}
// CHECK: braid.get_param @cache.layers.0.k : tensor<2x16x2x16xbf16>
// CHECK: braid.take_rows {{.*}} : tensor<2x16x64xbf16>, tensor<2xi32> -> tensor<2x64xbf16>
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %arg0: tensor<2x1xi32>, %arg1: tensor<2xi32>) -> tensor<2x256xbf16> attributes {braid.entry = "decode"}
// CHECK: braid.get_param @cache.layers.1.v : tensor<2x16x2x16xbf16>
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: -> tensor<2x16x256xbf16> attributes {braid.entry = "forward"}
// CHECK-NOT: braid.get_param @cache

// gpt-tiny: its caches follow the model too, as do the learned positions added at
// each sequence's offset.
// GPT: braid.state @cache.layers.0.k zeros : tensor<2x16x4x16xbf16>
// GPT: braid.state @cache.layers.1.v zeros : tensor<2x16x4x16xbf16>
// GPT-LABEL: func.func @prefill(
// GPT: braid.add_positions {{.*}} : tensor<2x16x64xbf16>, tensor<16x64xbf16>, tensor<2xi32> -> tensor<2x16x64xbf16>

// mamba-tiny: the conv state holds the model's rows, in its dtype; the SSM
// state stays f32, as braid.scan_step carries h in f32 from one call to the
// next: it is kept from the scan back through the layer function's argument
// to the state, also when a partitioned module reads it through collectives.
// MAMBA: braid.state @cache.layers.0.conv zeros : tensor<2x3x128xbf16>
// MAMBA-NEXT: braid.state @cache.layers.0.ssm zeros : tensor<2x128x16xf32>
// MAMBA-LABEL: func.func private @mamba_layer.decode(
// MAMBA-SAME: %[[CONV:arg15]]: tensor<2x3x128xbf16>, %[[SSM:arg16]]: tensor<2x128x16xf32>) -> tensor<2x1x64xbf16>
// MAMBA: braid.conv_step %[[CONV]], {{.*}} : tensor<2x3x128xbf16>, tensor<2x1x128xbf16>
// MAMBA: braid.scan_step %[[SSM]], {{.*}} : tensor<2x128x16xf32>, tensor<2x1x128xbf16>, tensor<2x1x128xbf16>
// MAMBA-LABEL: func.func @decode(
// MAMBA: braid.get_param @cache.layers.0.conv : tensor<2x3x128xbf16>
// MAMBA-NEXT: braid.get_param @cache.layers.0.ssm : tensor<2x128x16xf32>
// MAMBA-TP: braid.state @cache.layers.0.conv zeros {{.*}} : tensor<2x3x64xbf16>
// MAMBA-TP-NEXT: braid.state @cache.layers.0.ssm zeros {{.*}} : tensor<2x64x16xf32>
// MAMBA-TP: braid.scan_step {{.*}} : tensor<2x64x16xf32>, tensor<2x1x64xbf16>

// Master weights: parameters stay f32 and each read feeds a converted copy;
// a cache is not trained, so it has no master copy: its state is bf16 and
// its reads are used as they are.
// MASTER: braid.param @tok_embeddings normal(2.000000e-02) : tensor<256x64xf32>
// MASTER: braid.state @cache.layers.0.k zeros : tensor<2x16x2x16xbf16>
// MASTER-LABEL: func.func @decode(
// MASTER: %[[W:.*]] = braid.get_param @tok_embeddings : tensor<256x64xf32>
// MASTER-NEXT: braid.convert %[[W]] : tensor<256x64xf32> -> tensor<256x64xbf16>
// MASTER: %[[KC:.*]] = braid.get_param @cache.layers.0.k : tensor<2x16x2x16xbf16>
// MASTER-NEXT: %[[VC:.*]] = braid.get_param @cache.layers.0.v : tensor<2x16x2x16xbf16>
// MASTER-NEXT: call @llama_layer.decode({{.*}}, %[[KC]], %[[VC]])
// MASTER-NOT: braid.convert {{.*}} : tensor<2x16x2x16xf32>

// F16: braid.state @cache.layers.0.k zeros : tensor<2x16x2x16xf16>
// F16-LABEL: func.func @decode(
// F16-SAME: -> tensor<2x256xf16>

// The emitted decode program: bf16 cache states and logits, bf16 kernels.
// CPP: braid_k_cache_write(rt, BRAID_BF16,
// CPP: braid_k_cache_attention(rt, BRAID_BF16,
// CPP: {"cache.layers.0.k", BRAID_BF16, 4,
// CPP: const braid_tensor_desc kOutputs[] = {
// CPP-NEXT: {nullptr, BRAID_BF16, 2,
