// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir -o %t.inference.mlir
// RUN: braid-opt --braid-partition="grid=cp=2" %t.inference.mlir | FileCheck %s --check-prefix=CP2
// RUN: braid-opt --braid-partition="grid=cp=2,tp=2" %t.inference.mlir | FileCheck %s --check-prefix=CPTP
// RUN: braid-opt --braid-derive-inference="prompt-len=7" %S/../../examples/llama-tiny.mlir | braid-opt --braid-partition="grid=cp=2" | FileCheck %s --check-prefix=ODD
// RUN: braid-opt --braid-training-pipeline="optimizer=none grid=cp=2" %t.inference.mlir | FileCheck %s --check-prefix=DIST
// RUN: braid-opt --braid-training-pipeline="optimizer=none grid=cp=2 lower-to-dist=false" --braid-test-inject-fault=kind=wrong-cp-merge %t.inference.mlir | braid-opt --convert-braid-to-dist | FileCheck %s --check-prefix=FAULT
// RUN: not braid-opt --braid-training-pipeline="optimizer=none grid=tp=2 lower-to-dist=false" --braid-test-inject-fault=kind=wrong-cp-merge %t.inference.mlir 2>&1 | FileCheck %s --check-prefix=NO-CP

// Context parallelism of the inference programs (PartitionCacheContext.cpp):
// every KV cache is split by sequence over cp in contiguous chunks (rank c
// holds rows [8c, 8c + 8) of each sequence's 16), in prefill and decode
// alike since they share the state.

// Prefill: the prompt is split over cp as training splits its sequence. The
// new keys and values are gathered whole and each rank's cache_write keeps
// the rows of its chunk; the queries are gathered whole, each rank attends
// over its chunk (cache_axes) and the result, whole on every cp rank, is
// sliced back to the rank's rows.
// CP2: braid.state @cache.layers.0.k zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}[], ["cp"], [], []]} : tensor<2x8x2x16xf32>
// CP2: braid.state @cache.layers.1.v zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}[], ["cp"], [], []]} : tensor<2x8x2x16xf32>
// CP2-LABEL: func.func private @llama_layer.prefill(
// CP2-SAME: %arg0: tensor<2x8x64xf32> {braid.global_shape = array<i64: 2, 16, 64>, braid.split = {{\[}}[], ["cp"], []]}
// CP2-SAME: %arg11: tensor<2x8x2x16xf32> {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}[], ["cp"], [], []]}
// CP2: %[[KR:.*]] = shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 1 : tensor<2x8x2x16xf32> -> tensor<2x16x2x16xf32>
// CP2-NEXT: %[[K:.*]] = braid.cache_write %arg11, %[[KR]], %arg10 {cache_axes = ["cp"], rope_theta = 1.000000e+04 : f64} : tensor<2x8x2x16xf32>, tensor<2x16x2x16xf32>, tensor<2xi32>
// CP2: %[[V:.*]] = braid.cache_write %arg12, %{{.*}}, %arg10 {cache_axes = ["cp"]} : tensor<2x8x2x16xf32>, tensor<2x16x2x16xf32>, tensor<2xi32>
// CP2-NEXT: %[[Q:.*]] = shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 1 : tensor<2x8x4x16xf32> -> tensor<2x16x4x16xf32>
// CP2-NEXT: %[[O:.*]] = braid.cache_attention %[[Q]], %[[K]], %[[V]], %arg10 {cache_axes = ["cp"], rope_theta = 1.000000e+04 : f64} : tensor<2x16x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2xi32> -> tensor<2x16x4x16xf32>
// CP2-NEXT: %[[S:.*]] = shard.all_slice %[[O]] on @grid grid_axes = [0] slice_axis = 1 : tensor<2x16x4x16xf32> -> tensor<2x8x4x16xf32>
// CP2-NEXT: braid.reshape %[[S]] : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>

// Decode: the one new token per sequence is not split; the rank owning its
// position writes it, and every rank attends over its chunk. No cache row
// moves.
// CP2-LABEL: func.func private @llama_layer.decode(
// CP2-SAME: %arg0: tensor<2x1x64xf32>,
// CP2-NOT: shard.all_gather
// CP2: %[[DK:.*]] = braid.cache_write %arg11, %{{.*}}, %arg10 {cache_axes = ["cp"], rope_theta = 1.000000e+04 : f64} : tensor<2x8x2x16xf32>, tensor<2x1x2x16xf32>, tensor<2xi32>
// CP2-NEXT: %[[DV:.*]] = braid.cache_write %arg12, %{{.*}}, %arg10 {cache_axes = ["cp"]} : tensor<2x8x2x16xf32>, tensor<2x1x2x16xf32>, tensor<2xi32>
// CP2-NEXT: braid.cache_attention %{{.*}}, %[[DK]], %[[DV]], %arg10 {cache_axes = ["cp"], rope_theta = 1.000000e+04 : f64} : tensor<2x1x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2xi32> -> tensor<2x1x4x16xf32>
// CP2-NOT: shard.all_gather
// CP2-LABEL: func.func private @llama_layer.forward(

// The forward program (verification's reference) is training's cp forward:
// all-gather attention, contiguous chunks (the cache's layout rules out the
// zigzag order in a module with the inference programs).
// CP2: braid.attention %{{.*}} causal {query_offset_axes = ["cp"], rope_theta = 1.000000e+04 : f64}

// The entries: prefill's prompt is split over cp, its last rows gathered
// for take_rows; decode's tokens are whole.
// CP2-LABEL: func.func @prefill(
// CP2-SAME: %arg0: tensor<2x8xi32> {braid.global_shape = array<i64: 2, 16>, braid.split = {{\[}}[], ["cp"]]}
// CP2: braid.get_param @cache.layers.0.k : tensor<2x8x2x16xf32>
// CP2: %[[H:.*]] = shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 1 : tensor<2x8x64xf32> -> tensor<2x16x64xf32>
// CP2-NEXT: braid.take_rows %[[H]], %arg2
// CP2-LABEL: func.func @decode(
// CP2-SAME: %arg0: tensor<2x1xi32>, %arg1: tensor<2xi32>) -> tensor<2x256xf32>
// CP2-LABEL: func.func @forward(
// CP2-SAME: %arg0: tensor<2x8xi32> {braid.global_shape = array<i64: 2, 16>, braid.split = {{\[}}[], ["cp"]]}

// cp x tp: the cache is split by sequence over cp and by kv head over tp.
// CPTP: braid.state @cache.layers.0.k zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}[], ["cp"], ["tp"], []]} : tensor<2x8x1x16xf32>
// CPTP-LABEL: func.func private @llama_layer.decode(
// CPTP: braid.cache_write %arg11, %{{.*}}, %arg10 {cache_axes = ["cp"], rope_theta = 1.000000e+04 : f64} : tensor<2x8x1x16xf32>, tensor<2x1x1x16xf32>, tensor<2xi32>
// CPTP: braid.cache_attention %{{.*}} {cache_axes = ["cp"], rope_theta = 1.000000e+04 : f64} : tensor<2x1x2x16xf32>, tensor<2x8x1x16xf32>, tensor<2x8x1x16xf32>, tensor<2xi32> -> tensor<2x1x2x16xf32>
// CPTP: shard.all_reduce %{{.*}} on @grid grid_axes = [1] : tensor<2x1x64xf32>

// A prompt length cp does not divide (7): prefill runs whole on every cp
// rank; its cache is still split, written and attended by chunks.
// ODD-LABEL: func.func private @llama_layer.prefill(
// ODD-SAME: %arg0: tensor<2x7x64xf32>,
// ODD: braid.cache_write %arg11, %{{.*}}, %arg10 {cache_axes = ["cp"], rope_theta = 1.000000e+04 : f64} : tensor<2x8x2x16xf32>, tensor<2x7x2x16xf32>, tensor<2xi32>
// ODD: braid.cache_attention {{.*}} {cache_axes = ["cp"], rope_theta = 1.000000e+04 : f64} : tensor<2x7x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2xi32> -> tensor<2x7x4x16xf32>
// ODD-NOT: shard.all_slice
// ODD-LABEL: func.func @prefill(
// ODD-SAME: %arg0: tensor<2x7xi32>, %arg1: tensor<2xi32>, %arg2: tensor<2xi32>)

// Lowered to dist (CacheContext.cpp): the rank's first row is its cp
// coordinate times the chunk; the chunk's f32 out and log-sum-exp are
// all-gathered along dimension 0 and merged in rank order. Prefill's result
// is sliced back to the rank's rows: each rank receives the others' partials
// of its rows only (rows first, an all-to-all), merges them and views them
// back, in place of the all-gather and the slice.
// DIST-LABEL: func.func private @llama_layer.prefill(
// DIST: %[[PO:.*]], %[[PL:.*]] = braid.cache_attention_chunk {{.*}} -> tensor<2x16x4x16xf32>, tensor<2x16x4xf32>
// DIST-NEXT: %[[TO:.*]] = braid.transpose %[[PO]] [1, 0, 2, 3] : tensor<2x16x4x16xf32> -> tensor<16x2x4x16xf32>
// DIST-NEXT: %[[XO:.*]], %{{.*}} = dist.all_to_all %[[TO]] on @grid grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<16x2x4x16xf32> -> tensor<16x2x4x16xf32>
// DIST: %[[TL:.*]] = braid.transpose %[[PL]] [1, 0, 2] : tensor<2x16x4xf32> -> tensor<16x2x4xf32>
// DIST-NEXT: %[[XL:.*]], %{{.*}} = dist.all_to_all %[[TL]] on @grid grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<16x2x4xf32> -> tensor<16x2x4xf32>
// DIST: %[[M:.*]] = braid.cache_attention_merge %[[XO]], %[[XL]] : tensor<16x2x4x16xf32>, tensor<16x2x4xf32> -> tensor<8x2x4x16xf32>
// DIST-NEXT: %[[R:.*]] = braid.transpose %[[M]] [1, 0, 2, 3] : tensor<8x2x4x16xf32> -> tensor<2x8x4x16xf32>
// DIST-NEXT: braid.reshape %[[R]] : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
// DIST-LABEL: func.func private @llama_layer.decode(
// DIST: %[[C:.*]] = dist.coordinate on @grid grid_axes = [0] : index
// DIST: %[[FIRST:.*]] = arith.muli %[[C]], %{{.*}} : index
// DIST: braid.cache_write_chunk %arg11, %{{.*}}, %arg10 at %[[FIRST]] of 16 {rope_theta = 1.000000e+04 : f64} : tensor<2x8x2x16xf32>, tensor<2x1x2x16xf32>, tensor<2xi32>
// DIST: %[[OUT:.*]], %[[LSE:.*]] = braid.cache_attention_chunk %{{.*}}, %{{.*}}, %{{.*}}, %arg10 at %{{.*}} of 16 {rope_theta = 1.000000e+04 : f64} : tensor<2x1x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2xi32> -> tensor<2x1x4x16xf32>, tensor<2x1x4xf32>
// DIST-DAG: %[[OUTS:.*]], %{{.*}} = dist.all_gather %[[OUT]] on @grid grid_axes = [0] gather_axis = 0 : tensor<2x1x4x16xf32> -> tensor<4x1x4x16xf32>
// DIST-DAG: %[[LSES:.*]], %{{.*}} = dist.all_gather %[[LSE]] on @grid grid_axes = [0] gather_axis = 0 : tensor<2x1x4xf32> -> tensor<4x1x4xf32>
// DIST: braid.cache_attention_merge %[[OUTS]], %[[LSES]] : tensor<4x1x4x16xf32>, tensor<4x1x4xf32> -> tensor<2x1x4x16xf32>

// The test fault wrong-cp-merge (a negative test of --verify): the first
// cache_attention with cache_axes merges with equal weights.
// FAULT-LABEL: func.func private @llama_layer.prefill(
// FAULT: %[[XOUT:.*]], %{{.*}} = dist.all_to_all %{{.*}} split_axis = 0 concat_axis = 0 : tensor<16x2x4x16xf32> -> tensor<16x2x4x16xf32>
// FAULT: %[[ZERO:.*]] = braid.fill 0.000000e+00 : tensor<16x2x4xf32>
// FAULT-NEXT: braid.cache_attention_merge %[[XOUT]], %[[ZERO]]
// FAULT-LABEL: func.func private @llama_layer.decode(
// FAULT-NOT: braid.fill
// FAULT: braid.cache_attention_merge
// Without a cache split by sequence there is nothing to break.
// NO-CP: error: wrong-cp-merge: no braid.cache_attention with cache_axes
