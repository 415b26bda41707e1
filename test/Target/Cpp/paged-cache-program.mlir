// RUN: braid-translate --braid-to-cpp --braid-program=decode %s | FileCheck %s

// A serving decode step over a paged KV cache: the writes update the pools
// (states) in place, at the pools' own arena offsets, which the attention
// then reads; the page table and last rows are step inputs of their own.
// CHECK: braid_k_paged_cache_write(rt, BRAID_F32, at(arena, [[K:[0-9]+]]), static_cast<const void *>({{.*}}), static_cast<const int32_t *>(args[1]), static_cast<const int32_t *>(args[2]), static_cast<const int32_t *>(args[3]), 2, 1, 8, 4, 3, 1, 16, 10000);
// CHECK: braid_k_paged_cache_write(rt, BRAID_F32, at(arena, [[V:[0-9]+]]), static_cast<const void *>({{.*}}), static_cast<const int32_t *>(args[1]), static_cast<const int32_t *>(args[2]), static_cast<const int32_t *>(args[3]), 2, 1, 8, 4, 3, 1, 16, 0);
// CHECK: braid_k_paged_cache_attention(rt, BRAID_F32, {{.*}}, at(arena, [[K]]), at(arena, [[V]]), static_cast<const int32_t *>(args[1]), static_cast<const int32_t *>(args[2]), static_cast<const int32_t *>(args[3]), {{.*}}, braid::params(braid_paged_cache_attention_shape{.batch = 2, .seq = 1, .pages = 8, .page_size = 4, .pages_per_seq = 3, .heads = 2, .kv_heads = 1, .head_dim = 16, .v_head_dim = 16, .scale = 0.25, .rope_theta = 10000}));
// CHECK: braid_k_take_rows(rt, BRAID_F32, {{.*}}, static_cast<const int32_t *>(args[3]), {{.*}}, 2, 1, 32);
// CHECK: {"cache.layers.0.k", BRAID_F32, 4, {{.*}}, BRAID_INIT_ZEROS, 0, 0, [[K]]},
// CHECK: {"cache.layers.0.v", BRAID_F32, 4, {{.*}}, BRAID_INIT_ZEROS, 0, 0, [[V]]},
// CHECK: kInputs[] = {
// CHECK-NEXT: {"tokens", BRAID_I32, 2,
// CHECK-NEXT: {"positions", BRAID_I32, 1,
// CHECK-NEXT: {"pages", BRAID_I32, 2,
// CHECK-NEXT: {"last_rows", BRAID_I32, 1,
// CHECK-NEXT: };

module {
  braid.param @emb normal(2.000000e-02) : tensor<64x32xf32>
  braid.param @wq normal(2.000000e-02) : tensor<32x32xf32>
  braid.param @wk normal(2.000000e-02) : tensor<32x16xf32>
  braid.param @wv normal(2.000000e-02) : tensor<32x16xf32>
  braid.state @cache.layers.0.k zeros : tensor<8x4x1x16xf32>
  braid.state @cache.layers.0.v zeros : tensor<8x4x1x16xf32>
  func.func @decode(%tokens: tensor<2x1xi32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<2x32xf32> attributes {braid.entry = "decode"} {
    %e = braid.get_param @emb : tensor<64x32xf32>
    %x = braid.embedding %tokens, %e : tensor<2x1xi32>, tensor<64x32xf32> -> tensor<2x1x32xf32>
    %wq = braid.get_param @wq : tensor<32x32xf32>
    %wk = braid.get_param @wk : tensor<32x16xf32>
    %wv = braid.get_param @wv : tensor<32x16xf32>
    %q = braid.linear %x, %wq : tensor<2x1x32xf32>, tensor<32x32xf32> -> tensor<2x1x32xf32>
    %k = braid.linear %x, %wk : tensor<2x1x32xf32>, tensor<32x16xf32> -> tensor<2x1x16xf32>
    %v = braid.linear %x, %wv : tensor<2x1x32xf32>, tensor<32x16xf32> -> tensor<2x1x16xf32>
    %q4 = braid.reshape %q : tensor<2x1x32xf32> -> tensor<2x1x2x16xf32>
    %k4 = braid.reshape %k : tensor<2x1x16xf32> -> tensor<2x1x1x16xf32>
    %v4 = braid.reshape %v : tensor<2x1x16xf32> -> tensor<2x1x1x16xf32>
    %kp = braid.get_param @cache.layers.0.k : tensor<8x4x1x16xf32>
    %vp = braid.get_param @cache.layers.0.v : tensor<8x4x1x16xf32>
    %kp1 = braid.paged_cache_write %kp, %k4, %pos, %pages, %last {rope_theta = 1.000000e+04 : f64} : tensor<8x4x1x16xf32>, tensor<2x1x1x16xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
    %vp1 = braid.paged_cache_write %vp, %v4, %pos, %pages, %last : tensor<8x4x1x16xf32>, tensor<2x1x1x16xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
    %o = braid.paged_cache_attention %q4, %kp1, %vp1, %pos, %pages, %last {rope_theta = 1.000000e+04 : f64} : tensor<2x1x2x16xf32>, tensor<8x4x1x16xf32>, tensor<8x4x1x16xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x2x16xf32>
    %o3 = braid.reshape %o : tensor<2x1x2x16xf32> -> tensor<2x1x32xf32>
    %r = braid.take_rows %o3, %last : tensor<2x1x32xf32>, tensor<2xi32> -> tensor<2x32xf32>
    return %r : tensor<2x32xf32>
  }
}
