// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | braid-opt --braid-partition="grid=tp=2" | FileCheck %s --check-prefix=TP2
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | braid-opt --braid-partition="grid=tp=4" 2>/dev/null | FileCheck %s --check-prefix=TP4
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | braid-opt --braid-partition="grid=dp=2" | FileCheck %s --check-prefix=DP2
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | braid-opt --braid-partition="grid=dp=2,tp=2" | FileCheck %s --check-prefix=DPTP
// RUN: braid-opt --braid-derive-inference %S/../../examples/gpt-tiny.mlir | braid-opt --braid-partition="grid=tp=2" 2>&1 >/dev/null | FileCheck %s --check-prefix=GPT-WARN
// RUN: braid-opt --braid-derive-inference %S/../../examples/gpt-tiny.mlir | braid-opt --braid-partition="grid=tp=2" 2>/dev/null | FileCheck %s --check-prefix=GPT

// Every program of an inference module is partitioned (prefill, decode and
// forward), with one set of dimension classes over all of them, so that a
// parameter or a cache state has one layout in every program that reads it.

// tp=2 (2 key/value heads): the cache splits by kv head, like the k and v
// projections' outputs; decode writes and attends over its heads' cache, and
// each row-parallel linear (wo, w_down) is followed by an all-reduce. The
// vocabulary-parallel logits are gathered at the return: a program returns
// whole logits.
// TP2: braid.param @layers.0.attn.wk {{.*}}braid.split = {{\[}}[], ["tp"]]} : tensor<64x16xf32>
// TP2: braid.state @cache.layers.0.k zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}[], [], ["tp"], []]} : tensor<2x16x1x16xf32>
// TP2: braid.state @cache.layers.0.v zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}[], [], ["tp"], []]} : tensor<2x16x1x16xf32>
// TP2: braid.state @cache.layers.1.v zeros {{.*}} : tensor<2x16x1x16xf32>
// TP2-LABEL: func.func private @llama_layer.prefill(
// TP2: braid.cache_write %arg11, %{{.*}}, %arg10 {{.*}} : tensor<2x16x1x16xf32>, tensor<2x16x1x16xf32>, tensor<2xi32>
// TP2-LABEL: func.func private @llama_layer.decode(
// TP2-SAME: %arg11: tensor<2x16x1x16xf32> {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}[], [], ["tp"], []]}
// TP2: %[[K:.*]] = braid.cache_write %arg11, %{{.*}}, %arg10 {{.*}} : tensor<2x16x1x16xf32>, tensor<2x1x1x16xf32>, tensor<2xi32>
// TP2: %[[V:.*]] = braid.cache_write %arg12, %{{.*}}, %arg10 : tensor<2x16x1x16xf32>, tensor<2x1x1x16xf32>, tensor<2xi32>
// TP2: %[[O:.*]] = braid.cache_attention %{{.*}}, %[[K]], %[[V]], %arg10 {{.*}} : tensor<2x1x2x16xf32>, tensor<2x16x1x16xf32>, tensor<2x16x1x16xf32>, tensor<2xi32> -> tensor<2x1x2x16xf32>
// TP2: %[[A:.*]] = braid.reshape %[[O]] : tensor<2x1x2x16xf32> -> tensor<2x1x32xf32>
// TP2: %[[WO:.*]] = braid.linear %[[A]], %arg5 : tensor<2x1x32xf32>, tensor<32x64xf32> -> tensor<2x1x64xf32>
// TP2-NEXT: %[[R:.*]] = shard.all_reduce %[[WO]] on @grid grid_axes = [0] : tensor<2x1x64xf32>
// TP2-NEXT: braid.add %arg0, %[[R]]
// TP2: %[[DOWN:.*]] = braid.linear %{{.*}}, %arg9 : tensor<2x1x64xf32>, tensor<64x64xf32> -> tensor<2x1x64xf32>
// TP2-NEXT: %[[R2:.*]] = shard.all_reduce %[[DOWN]] on @grid grid_axes = [0] : tensor<2x1x64xf32>
// TP2-NEXT: braid.add %{{.*}}, %[[R2]]
// TP2-LABEL: func.func @prefill(
// TP2: braid.get_param @cache.layers.0.k : tensor<2x16x1x16xf32>
// TP2: %[[L:.*]] = braid.linear {{.*}} -> tensor<2x128xf32>
// TP2-NEXT: %[[G:.*]] = shard.all_gather %[[L]] on @grid grid_axes = [0] gather_axis = 1 : tensor<2x128xf32> -> tensor<2x256xf32>
// TP2-NEXT: return %[[G]] : tensor<2x256xf32>
// TP2-LABEL: func.func @decode(
// TP2: braid.get_param @cache.layers.1.v : tensor<2x16x1x16xf32>
// TP2: shard.all_gather {{.*}} gather_axis = 1 : tensor<2x128xf32> -> tensor<2x256xf32>
// TP2-LABEL: func.func @forward(
// TP2: shard.all_gather {{.*}} gather_axis = 2 : tensor<2x16x128xf32> -> tensor<2x16x256xf32>

// tp=4 over 2 kv heads (Megatron's replication): k and v projections stay
// whole, so every rank writes every kv head into a whole cache and attends
// with its query head over the slice of its group's kv head.
// TP4: braid.state @cache.layers.0.k zeros : tensor<2x16x2x16xf32>
// TP4-LABEL: func.func private @llama_layer.decode(
// TP4: %[[K:.*]] = braid.cache_write %arg11, %{{.*}}, %arg10 {{.*}} : tensor<2x16x2x16xf32>, tensor<2x1x2x16xf32>, tensor<2xi32>
// TP4: %[[V:.*]] = braid.cache_write %arg12, %{{.*}}, %arg10 : tensor<2x16x2x16xf32>, tensor<2x1x2x16xf32>, tensor<2xi32>
// TP4-NEXT: %[[KS:.*]] = braid.slice %[[K]] along 2 over ["tp"] {replicas = 2 : i64} : tensor<2x16x2x16xf32> -> tensor<2x16x1x16xf32>
// TP4-NEXT: %[[VS:.*]] = braid.slice %[[V]] along 2 over ["tp"] {replicas = 2 : i64} : tensor<2x16x2x16xf32> -> tensor<2x16x1x16xf32>
// TP4-NEXT: braid.cache_attention %{{.*}}, %[[KS]], %[[VS]], %arg10 {{.*}} : tensor<2x1x1x16xf32>, tensor<2x16x1x16xf32>, tensor<2x16x1x16xf32>, tensor<2xi32> -> tensor<2x1x1x16xf32>
// TP4: braid.linear %{{.*}}, %arg5 : tensor<2x1x16xf32>, tensor<16x64xf32> -> tensor<2x1x64xf32>
// TP4-NEXT: shard.all_reduce

// dp=2: sequences split; every program's inputs and the cache split on the
// batch, the logits gathered over dp at the return.
// DP2: braid.state @cache.layers.0.k zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}["dp"], [], [], []]} : tensor<1x16x2x16xf32>
// DP2-LABEL: func.func private @llama_layer.decode(
// DP2: braid.cache_write %arg11, %{{.*}}, %arg10 {{.*}} : tensor<1x16x2x16xf32>, tensor<1x1x2x16xf32>, tensor<1xi32>
// DP2-NOT: shard.all_reduce
// DP2-LABEL: func.func @prefill(
// DP2-SAME: %arg0: tensor<1x16xi32> {braid.global_shape = array<i64: 2, 16>, braid.split = {{\[}}["dp"], []]}
// DP2-SAME: %arg1: tensor<1xi32> {braid.global_shape = array<i64: 2>, braid.split = {{\[}}["dp"]]}
// DP2-SAME: %arg2: tensor<1xi32> {braid.global_shape = array<i64: 2>, braid.split = {{\[}}["dp"]]}
// DP2-LABEL: func.func @decode(
// DP2-SAME: %arg0: tensor<1x1xi32> {braid.global_shape = array<i64: 2, 1>, braid.split = {{\[}}["dp"], []]}
// DP2-SAME: %arg1: tensor<1xi32> {braid.global_shape = array<i64: 2>, braid.split = {{\[}}["dp"]]}
// DP2: shard.all_gather {{.*}} gather_axis = 0 : tensor<1x256xf32> -> tensor<2x256xf32>

// dp=2 x tp=2: the cache splits on both.
// DPTP: braid.state @cache.layers.1.v zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}["dp"], [], ["tp"], []]} : tensor<1x16x1x16xf32>
// DPTP-LABEL: func.func private @llama_layer.decode(
// DPTP: braid.cache_attention {{.*}} : tensor<1x1x2x16xf32>, tensor<1x16x1x16xf32>, tensor<1x16x1x16xf32>, tensor<1xi32> -> tensor<1x1x2x16xf32>
// DPTP: shard.all_reduce {{.*}} grid_axes = [1] : tensor<1x1x64xf32>

// GPT's vocabulary (97) does not divide over tp=2 and the programs return
// it: a padded split cannot be gathered, so the tied embedding and LM head
// stay whole (each tp rank computes every logit); the rest is split.
// GPT-WARN: warning: the megatron plan keeps this embedding's table whole: tp=2 does not divide its vocabulary, which a program returns
// GPT: braid.param @tok_embeddings normal(2.000000e-02) : tensor<97x64xf32>
// GPT: braid.state @cache.layers.0.k zeros {braid.global_shape = array<i64: 2, 16, 4, 16>, braid.split = {{\[}}[], [], ["tp"], []]} : tensor<2x16x2x16xf32>
// GPT-LABEL: func.func @decode(
// GPT-NOT: shard.all_gather
// GPT: return %{{.*}} : tensor<2x97xf32>
