// RUN: braid-opt -split-input-file -verify-diagnostics %s

func.func @pool_read_twice(%kp: tensor<8x4x2x4xf32>, %k: tensor<2x1x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<8x4x2x4xf32> {
  // expected-error @+1 {{'braid.paged_cache_write' op writes its pool in place, so the pool operand must have no other use}}
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last : tensor<8x4x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
  %s = braid.add %k1, %kp : tensor<8x4x2x4xf32>
  return %s : tensor<8x4x2x4xf32>
}

// -----

func.func @write_pool_rank(%kp: tensor<8x4x8xf32>, %k: tensor<2x1x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<8x4x8xf32> {
  // expected-error @+1 {{'braid.paged_cache_write' op pool must be [N, P, H, D], found 'tensor<8x4x8xf32>'}}
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last : tensor<8x4x8xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
  return %k1 : tensor<8x4x8xf32>
}

// -----

func.func @write_heads(%kp: tensor<8x4x2x4xf32>, %k: tensor<2x1x1x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<8x4x2x4xf32> {
  // expected-error @+1 {{'braid.paged_cache_write' op rows 'tensor<2x1x1x4xf32>' do not fit the pool 'tensor<8x4x2x4xf32>': the heads and head dimension must match}}
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last : tensor<8x4x2x4xf32>, tensor<2x1x1x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
  return %k1 : tensor<8x4x2x4xf32>
}

// -----

func.func @write_element_types(%kp: tensor<8x4x2x4xbf16>, %k: tensor<2x1x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<8x4x2x4xbf16> {
  // expected-error @+1 {{'braid.paged_cache_write' op operands must share one element type, found 'bf16' and 'f32'}}
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last : tensor<8x4x2x4xbf16>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
  return %k1 : tensor<8x4x2x4xbf16>
}

// -----

func.func @write_positions(%kp: tensor<8x4x2x4xf32>, %k: tensor<2x1x2x4xf32>, %pos: tensor<3xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<8x4x2x4xf32> {
  // expected-error @+1 {{'braid.paged_cache_write' op positions must be [2] (one per sequence), found 'tensor<3xi32>'}}
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last : tensor<8x4x2x4xf32>, tensor<2x1x2x4xf32>, tensor<3xi32>, tensor<2x3xi32>, tensor<2xi32>
  return %k1 : tensor<8x4x2x4xf32>
}

// -----

func.func @write_last_rows(%kp: tensor<8x4x2x4xf32>, %k: tensor<2x1x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2x1xi32>) -> tensor<8x4x2x4xf32> {
  // expected-error @+1 {{'braid.paged_cache_write' op last_rows must be [2] (one per sequence), found 'tensor<2x1xi32>'}}
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last : tensor<8x4x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2x1xi32>
  return %k1 : tensor<8x4x2x4xf32>
}

// -----

func.func @write_pages(%kp: tensor<8x4x2x4xf32>, %k: tensor<2x1x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<3x3xi32>, %last: tensor<2xi32>) -> tensor<8x4x2x4xf32> {
  // expected-error @+1 {{'braid.paged_cache_write' op pages must be [2, T] (one page table per sequence), found 'tensor<3x3xi32>'}}
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last : tensor<8x4x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<3x3xi32>, tensor<2xi32>
  return %k1 : tensor<8x4x2x4xf32>
}

// -----

func.func @write_pages_i64(%kp: tensor<8x4x2x4xf32>, %k: tensor<2x1x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi64>, %last: tensor<2xi32>) -> tensor<8x4x2x4xf32> {
  // expected-error @+1 {{'braid.paged_cache_write' op operand #3 must be statically shaped tensor of 32-bit signless integer values, but got 'tensor<2x3xi64>'}}
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last : tensor<8x4x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<2x3xi64>, tensor<2xi32>
  return %k1 : tensor<8x4x2x4xf32>
}

// -----

func.func @write_rope_odd_dim(%kp: tensor<8x4x2x3xf32>, %k: tensor<2x1x2x3xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<8x4x2x3xf32> {
  // expected-error @+1 {{'braid.paged_cache_write' op rope_theta needs a positive theta and an even head dimension, found 1.000000e+04 and 3}}
  %k1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last {rope_theta = 1.000000e+04 : f64} : tensor<8x4x2x3xf32>, tensor<2x1x2x3xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
  return %k1 : tensor<8x4x2x3xf32>
}

// -----

func.func @write_result_type(%kp: tensor<8x4x2x4xf32>, %k: tensor<2x1x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<8x4x2x4xf32> {
  // expected-error @+1 {{'braid.paged_cache_write' op failed to verify that all of {pool, result} have same type}}
  %k1 = "braid.paged_cache_write"(%kp, %k, %pos, %pages, %last) : (tensor<8x4x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>) -> tensor<4x4x2x4xf32>
  return %kp : tensor<8x4x2x4xf32>
}

// -----

func.func @attention_gqa(%q: tensor<2x1x3x4xf32>, %kp: tensor<8x4x2x4xf32>, %vp: tensor<8x4x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<2x1x3x4xf32> {
  // expected-error @+2 {{'braid.paged_cache_attention' op 3 query heads are not a multiple of 2 key/value heads}}
  // expected-error @+1 {{'braid.paged_cache_attention' op failed to infer returned types}}
  %o = braid.paged_cache_attention %q, %kp, %vp, %pos, %pages, %last : tensor<2x1x3x4xf32>, tensor<8x4x2x4xf32>, tensor<8x4x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x3x4xf32>
  return %o : tensor<2x1x3x4xf32>
}

// -----

func.func @attention_pools_differ(%q: tensor<2x1x4x4xf32>, %kp: tensor<8x4x2x4xf32>, %vp: tensor<8x2x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<2x1x4x4xf32> {
  // expected-error @+2 {{'braid.paged_cache_attention' op the key pool 'tensor<8x4x2x4xf32>' and the value pool 'tensor<8x2x2x4xf32>' differ in pages, page size or heads}}
  // expected-error @+1 {{'braid.paged_cache_attention' op failed to infer returned types}}
  %o = braid.paged_cache_attention %q, %kp, %vp, %pos, %pages, %last : tensor<2x1x4x4xf32>, tensor<8x4x2x4xf32>, tensor<8x2x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

func.func @attention_head_dim(%q: tensor<2x1x4x8xf32>, %kp: tensor<8x4x2x4xf32>, %vp: tensor<8x4x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<2x1x4x4xf32> {
  // expected-error @+2 {{'braid.paged_cache_attention' op the key pool's head dimension 4 differs from the query's 8}}
  // expected-error @+1 {{'braid.paged_cache_attention' op failed to infer returned types}}
  %o = braid.paged_cache_attention %q, %kp, %vp, %pos, %pages, %last : tensor<2x1x4x8xf32>, tensor<8x4x2x4xf32>, tensor<8x4x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

func.func @attention_query_rank(%q: tensor<2x4x4xf32>, %kp: tensor<8x4x2x4xf32>, %vp: tensor<8x4x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<2x1x4x4xf32> {
  // expected-error @+2 {{'braid.paged_cache_attention' op query must be [B, S, Hq, D], found 'tensor<2x4x4xf32>'}}
  // expected-error @+1 {{'braid.paged_cache_attention' op failed to infer returned types}}
  %o = braid.paged_cache_attention %q, %kp, %vp, %pos, %pages, %last : tensor<2x4x4xf32>, tensor<8x4x2x4xf32>, tensor<8x4x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

func.func @attention_pages(%q: tensor<2x1x4x4xf32>, %kp: tensor<8x4x2x4xf32>, %vp: tensor<8x4x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<6xi32>, %last: tensor<2xi32>) -> tensor<2x1x4x4xf32> {
  // expected-error @+2 {{'braid.paged_cache_attention' op pages must be [2, T] (one page table per sequence), found 'tensor<6xi32>'}}
  // expected-error @+1 {{'braid.paged_cache_attention' op failed to infer returned types}}
  %o = braid.paged_cache_attention %q, %kp, %vp, %pos, %pages, %last : tensor<2x1x4x4xf32>, tensor<8x4x2x4xf32>, tensor<8x4x2x4xf32>, tensor<2xi32>, tensor<6xi32>, tensor<2xi32> -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

func.func @attention_last_rows(%q: tensor<2x1x4x4xf32>, %kp: tensor<8x4x2x4xf32>, %vp: tensor<8x4x2x4xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<1xi32>) -> tensor<2x1x4x4xf32> {
  // expected-error @+2 {{'braid.paged_cache_attention' op last_rows must be [2] (one per sequence), found 'tensor<1xi32>'}}
  // expected-error @+1 {{'braid.paged_cache_attention' op failed to infer returned types}}
  %o = braid.paged_cache_attention %q, %kp, %vp, %pos, %pages, %last : tensor<2x1x4x4xf32>, tensor<8x4x2x4xf32>, tensor<8x4x2x4xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<1xi32> -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

func.func @attention_result(%q: tensor<2x1x4x4xf32>, %kp: tensor<8x4x2x4xf32>, %vp: tensor<8x4x2x6xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<2x1x4x4xf32> {
  // expected-error @+2 {{'braid.paged_cache_attention' op inferred type(s) 'tensor<2x1x4x6xf32>' are incompatible with return type(s) of operation 'tensor<2x1x4x4xf32>'}}
  // expected-error @+1 {{'braid.paged_cache_attention' op failed to infer returned types}}
  %o = braid.paged_cache_attention %q, %kp, %vp, %pos, %pages, %last : tensor<2x1x4x4xf32>, tensor<8x4x2x4xf32>, tensor<8x4x2x6xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}
