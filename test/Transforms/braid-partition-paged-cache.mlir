// RUN: braid-opt --braid-partition="grid=tp=2" %s | FileCheck %s --check-prefix=TP2
// RUN: braid-opt --braid-partition="grid=tp=4" %s 2>/dev/null | FileCheck %s --check-prefix=TP4
// RUN: not braid-opt --braid-partition="grid=dp=2,tp=2" %s 2>&1 | FileCheck %s --check-prefix=DPTP

// A serving decode step over a paged KV cache (pools [N, P, Hkv, D]).

// tp=2 (2 key/value heads): each pool splits by kv head with the k and v
// projections' outputs; its pages and rows stay whole. Each rank writes and
// attends over its heads' pools; the page table is whole on every rank.
// TP2: braid.state @cache.layers.0.k zeros {braid.global_shape = array<i64: 8, 4, 2, 8>, braid.split = {{\[}}[], [], ["tp"], []]} : tensor<8x4x1x8xf32>
// TP2: braid.state @cache.layers.0.v zeros {braid.global_shape = array<i64: 8, 4, 2, 8>, braid.split = {{\[}}[], [], ["tp"], []]} : tensor<8x4x1x8xf32>
// TP2-LABEL: func.func @decode(
// TP2-SAME: %arg2: tensor<2x3xi32>
// TP2: %[[K:.*]] = braid.paged_cache_write %{{.*}}, %{{.*}}, %arg1, %arg2, %arg3 {rope_theta = 1.000000e+04 : f64} : tensor<8x4x1x8xf32>, tensor<2x1x1x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
// TP2: %[[V:.*]] = braid.paged_cache_write %{{.*}}, %{{.*}}, %arg1, %arg2, %arg3 : tensor<8x4x1x8xf32>, tensor<2x1x1x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
// TP2: braid.paged_cache_attention %{{.*}}, %[[K]], %[[V]], %arg1, %arg2, %arg3 {{.*}} : tensor<2x1x2x8xf32>, tensor<8x4x1x8xf32>, tensor<8x4x1x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x2x8xf32>
// TP2: shard.all_reduce

// tp=4, 2 kv heads: the pools are whole on every rank (written whole), and
// each rank attends with its query head over its group's kv head, sliced.
// TP4: braid.state @cache.layers.0.k zeros : tensor<8x4x2x8xf32>
// TP4: %[[K:.*]] = braid.paged_cache_write %{{.*}} : tensor<8x4x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
// TP4: %[[V:.*]] = braid.paged_cache_write %{{.*}} : tensor<8x4x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
// TP4: %[[KS:.*]] = braid.slice %[[K]] along 2 over ["tp"] {replicas = 2 : i64} : tensor<8x4x2x8xf32> -> tensor<8x4x1x8xf32>
// TP4: %[[VS:.*]] = braid.slice %[[V]] along 2 over ["tp"] {replicas = 2 : i64} : tensor<8x4x2x8xf32> -> tensor<8x4x1x8xf32>
// TP4: braid.paged_cache_attention %{{.*}}, %[[KS]], %[[VS]], %arg1, %arg2, %arg3 {{.*}} : tensor<2x1x1x8xf32>, tensor<8x4x1x8xf32>, tensor<8x4x1x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x1x8xf32>

// dp=2,tp=2: refused. A pool holds the pages of every sequence of the
// program; a batch split over dp would leave each rank a whole pool written
// only for its own sequences (a replicated state whose copies differ).
// Serving runs dp as replicas of the program (braid-run --serve --grid dp=N).
// DPTP: error: --braid-partition: a paged KV cache is not split over dp (dp=2 in the grid): serve dp as replicas of the program (braid-run --serve --grid dp=N,tp=T)

module {
  braid.param @tok_embeddings normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @layers.0.attn_norm ones : tensor<32xf32>
  braid.param @layers.0.attn.wq normal(2.000000e-02) : tensor<32x32xf32>
  braid.param @layers.0.attn.wk normal(2.000000e-02) : tensor<32x16xf32>
  braid.param @layers.0.attn.wv normal(2.000000e-02) : tensor<32x16xf32>
  braid.param @layers.0.attn.wo normal(1.000000e-02) : tensor<32x32xf32>
  braid.state @cache.layers.0.k zeros : tensor<8x4x2x8xf32>
  braid.state @cache.layers.0.v zeros : tensor<8x4x2x8xf32>
  func.func @decode(%tokens: tensor<2x1xi32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<2x32xf32> attributes {braid.entry = "decode"} {
    %e = braid.get_param @tok_embeddings : tensor<64x32xf32>
    %x = braid.embedding %tokens, %e : tensor<2x1xi32>, tensor<64x32xf32> -> tensor<2x1x32xf32>
    %g = braid.get_param @layers.0.attn_norm : tensor<32xf32>
    %n = braid.rms_norm %x, %g : tensor<2x1x32xf32>, tensor<32xf32> -> tensor<2x1x32xf32>
    %wq = braid.get_param @layers.0.attn.wq : tensor<32x32xf32>
    %wk = braid.get_param @layers.0.attn.wk : tensor<32x16xf32>
    %wv = braid.get_param @layers.0.attn.wv : tensor<32x16xf32>
    %wo = braid.get_param @layers.0.attn.wo : tensor<32x32xf32>
    %q = braid.linear %n, %wq : tensor<2x1x32xf32>, tensor<32x32xf32> -> tensor<2x1x32xf32>
    %k = braid.linear %n, %wk : tensor<2x1x32xf32>, tensor<32x16xf32> -> tensor<2x1x16xf32>
    %v = braid.linear %n, %wv : tensor<2x1x32xf32>, tensor<32x16xf32> -> tensor<2x1x16xf32>
    %q4 = braid.reshape %q : tensor<2x1x32xf32> -> tensor<2x1x4x8xf32>
    %k4 = braid.reshape %k : tensor<2x1x16xf32> -> tensor<2x1x2x8xf32>
    %v4 = braid.reshape %v : tensor<2x1x16xf32> -> tensor<2x1x2x8xf32>
    %kp = braid.get_param @cache.layers.0.k : tensor<8x4x2x8xf32>
    %vp = braid.get_param @cache.layers.0.v : tensor<8x4x2x8xf32>
    %kp1 = braid.paged_cache_write %kp, %k4, %pos, %pages, %last {rope_theta = 1.000000e+04 : f64} : tensor<8x4x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
    %vp1 = braid.paged_cache_write %vp, %v4, %pos, %pages, %last : tensor<8x4x2x8xf32>, tensor<2x1x2x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
    %o = braid.paged_cache_attention %q4, %kp1, %vp1, %pos, %pages, %last {rope_theta = 1.000000e+04 : f64} : tensor<2x1x4x8xf32>, tensor<8x4x2x8xf32>, tensor<8x4x2x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x4x8xf32>
    %o3 = braid.reshape %o : tensor<2x1x4x8xf32> -> tensor<2x1x32xf32>
    %a = braid.linear %o3, %wo : tensor<2x1x32xf32>, tensor<32x32xf32> -> tensor<2x1x32xf32>
    %h = braid.add %x, %a : tensor<2x1x32xf32>
    %r = braid.take_rows %h, %last : tensor<2x1x32xf32>, tensor<2xi32> -> tensor<2x32xf32>
    return %r : tensor<2x32xf32>
  }
}
