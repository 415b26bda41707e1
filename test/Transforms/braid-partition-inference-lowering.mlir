// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir -o %t.inference.mlir
// RUN: braid-opt --braid-training-pipeline="optimizer=none grid=dp=2,tp=2" %t.inference.mlir -o %t.dptp.mlir
// RUN: FileCheck %s --check-prefix=DIST < %t.dptp.mlir
// RUN: rm -rf %t.dptp && braid-translate --braid-to-cpp --braid-output-dir=%t.dptp %t.dptp.mlir
// RUN: cat %t.dptp/prefill.cpp %t.dptp/decode.cpp | FileCheck %s --check-prefix=CPP
// RUN: braid-opt --braid-training-pipeline="optimizer=none grid=tp=4" %t.inference.mlir -o %t.tp4.mlir 2>/dev/null
// RUN: rm -rf %t.tp4 && braid-translate --braid-to-cpp --braid-output-dir=%t.tp4 %t.tp4.mlir
// RUN: FileCheck %s --check-prefix=TP4 < %t.tp4/decode.cpp

// The partitioned inference programs through the forward-only lowering
// (optimizer=none: partition, convert-braid-to-dist, the dist scheduling
// passes) to per-rank C++. The cache ops are local: each rank writes and
// reads its sequences' (dp) and its kv heads' (tp) part of the cache; the
// transfers are the row-parallel linears' all-reduces and the logits'
// gathers at the return.

// DIST: braid.state @cache.layers.0.k zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}["dp"], [], ["tp"], []]} : tensor<1x16x1x16xf32>
// DIST-LABEL: func.func private @llama_layer.decode(
// DIST: braid.cache_write %arg11, {{.*}} : tensor<1x16x1x16xf32>, tensor<1x1x1x16xf32>, tensor<1xi32>
// DIST: braid.cache_attention {{.*}} -> tensor<1x1x2x16xf32>
// DIST: dist.all_reduce %{{.*}} on @grid grid_axes = [1] reduction = sum : tensor<1x1x64xf32>
// DIST: dist.all_reduce %{{.*}} on @grid grid_axes = [1] reduction = sum : tensor<1x1x64xf32>
// DIST-LABEL: func.func @decode(
// DIST: dist.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 0 : tensor<1x128xf32> -> tensor<2x128xf32>
// DIST: dist.all_gather %{{.*}} on @grid grid_axes = [1]
// DIST: return %{{.*}} : tensor<2x256xf32>

// Each program describes the cache state with its global shape and split
// axes (so the runtime can place it), at the same arena offset in prefill
// and decode (one arena serves both).
// CPP: constexpr int64_t [[S:kShape[0-9]+]][] = {1, 16, 1, 16};
// CPP-NEXT: constexpr int64_t [[G:kGlobal[0-9]+]][] = {2, 16, 2, 16};
// CPP-NEXT: const char *const [[A:kSplit[0-9]+]][] = {"dp", "", "tp", ""};
// CPP: {"cache.layers.0.k", BRAID_F32, 4, [[S]], BRAID_INIT_ZEROS, 0, 0, [[OFF:[0-9]+]], [[G]], [[A]]},
// CPP: braid_program_get_prefill
// CPP: void fn_llama_layer_decode(
// CPP: braid_k_cache_write(rt, BRAID_F32, args[11], {{.*}}, 1, 16, 1, 1, 16, 10000);
// CPP: braid_k_cache_attention(rt, BRAID_F32, {{.*}}, args[11], args[12], {{.*}}.batch = 1, .seq = 1, .cache_len = 16, .heads = 2, .kv_heads = 1,
// CPP: braid_all_reduce(rt, braid_rt_comm(rt, "tp"), {{.*}}, 64, BRAID_F32, BRAID_RED_SUM);
// CPP: {"cache.layers.0.k", BRAID_F32, 4, {{kShape[0-9]+}}, BRAID_INIT_ZEROS, 0, 0, [[OFF]], {{kGlobal[0-9]+}}, {{kSplit[0-9]+}}},
// CPP: braid_program_get_decode

// tp=4 over 2 kv heads: a whole cache on every rank, each rank's query head
// attending over the slice of its group's kv head.
// TP4: void fn_llama_layer_decode(
// TP4: braid_k_cache_write(rt, BRAID_F32, args[11], {{.*}}, 2, 16, 1, 2, 16, 10000);
// TP4: braid_k_slice(rt, BRAID_F32, args[11], {{.*}}, (coord(rt, "tp") / 2) * 1);
// TP4: braid_k_cache_attention({{.*}}.heads = 1, .kv_heads = 1,
// TP4: {"cache.layers.0.k", BRAID_F32, 4, {{kShape[0-9]+}}, BRAID_INIT_ZEROS, 0, 0, {{[0-9]+}}},
