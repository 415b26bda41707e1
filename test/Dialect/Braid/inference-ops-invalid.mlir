// RUN: braid-opt -split-input-file -verify-diagnostics %s

func.func @cache_read_twice(%kc: tensor<2x8x2x4xf32>, %k: tensor<2x1x2x4xf32>, %pos: tensor<2xi32>) -> tensor<2x8x2x4xf32> {
  // expected-error @+1 {{'braid.cache_write' op writes its cache in place, so the cache operand must have no other use}}
  %k1 = braid.cache_write %kc, %k, %pos : tensor<2x8x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>
  %s = braid.add %k1, %kc : tensor<2x8x2x4xf32>
  return %s : tensor<2x8x2x4xf32>
}

// -----

func.func @rows_mismatch(%kc: tensor<2x8x2x4xf32>, %k: tensor<2x1x1x4xf32>, %pos: tensor<2xi32>) -> tensor<2x8x2x4xf32> {
  // expected-error @+1 {{'braid.cache_write' op rows 'tensor<2x1x1x4xf32>' do not fit the cache 'tensor<2x8x2x4xf32>': the sequences, heads and head dimension must match}}
  %k1 = braid.cache_write %kc, %k, %pos : tensor<2x8x2x4xf32>, tensor<2x1x1x4xf32>, tensor<2xi32>
  return %k1 : tensor<2x8x2x4xf32>
}

// -----

func.func @too_many_rows(%kc: tensor<2x2x2x4xf32>, %k: tensor<2x3x2x4xf32>, %pos: tensor<2xi32>) -> tensor<2x2x2x4xf32> {
  // expected-error @+1 {{'braid.cache_write' op writes 3 rows per sequence into a cache of 2}}
  %k1 = braid.cache_write %kc, %k, %pos : tensor<2x2x2x4xf32>, tensor<2x3x2x4xf32>, tensor<2xi32>
  return %k1 : tensor<2x2x2x4xf32>
}

// -----

func.func @positions_per_sequence(%kc: tensor<2x8x2x4xf32>, %k: tensor<2x1x2x4xf32>, %pos: tensor<3xi32>) -> tensor<2x8x2x4xf32> {
  // expected-error @+1 {{'braid.cache_write' op positions must be [2] (one per sequence), found 'tensor<3xi32>'}}
  %k1 = braid.cache_write %kc, %k, %pos : tensor<2x8x2x4xf32>, tensor<2x1x2x4xf32>, tensor<3xi32>
  return %k1 : tensor<2x8x2x4xf32>
}

// -----

func.func @rope_odd_dim(%kc: tensor<2x8x2x3xf32>, %k: tensor<2x1x2x3xf32>, %pos: tensor<2xi32>) -> tensor<2x8x2x3xf32> {
  // expected-error @+1 {{'braid.cache_write' op rope_theta needs a positive theta and an even head dimension, found 1.000000e+04 and 3}}
  %k1 = braid.cache_write %kc, %k, %pos {rope_theta = 1.000000e+04 : f64} : tensor<2x8x2x3xf32>, tensor<2x1x2x3xf32>, tensor<2xi32>
  return %k1 : tensor<2x8x2x3xf32>
}

// -----

func.func @gqa_groups(%q: tensor<2x1x3x4xf32>, %kc: tensor<2x8x2x4xf32>, %vc: tensor<2x8x2x4xf32>, %pos: tensor<2xi32>) -> tensor<2x1x3x4xf32> {
  // expected-error @+2 {{'braid.cache_attention' op 3 query heads are not a multiple of 2 key/value heads}}
  // expected-error @+1 {{'braid.cache_attention' op failed to infer returned types}}
  %o = braid.cache_attention %q, %kc, %vc, %pos : tensor<2x1x3x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2xi32> -> tensor<2x1x3x4xf32>
  return %o : tensor<2x1x3x4xf32>
}

// -----

func.func @caches_differ(%q: tensor<2x1x4x4xf32>, %kc: tensor<2x8x2x4xf32>, %vc: tensor<2x6x2x4xf32>, %pos: tensor<2xi32>) -> tensor<2x1x4x4xf32> {
  // expected-error @+2 {{'braid.cache_attention' op the key cache 'tensor<2x8x2x4xf32>' and the value cache 'tensor<2x6x2x4xf32>' differ in rows or heads}}
  // expected-error @+1 {{'braid.cache_attention' op failed to infer returned types}}
  %o = braid.cache_attention %q, %kc, %vc, %pos : tensor<2x1x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x6x2x4xf32>, tensor<2xi32> -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

func.func @cache_sequences(%q: tensor<3x1x4x4xf32>, %kc: tensor<2x8x2x4xf32>, %vc: tensor<2x8x2x4xf32>, %pos: tensor<3xi32>) -> tensor<3x1x4x4xf32> {
  // expected-error @+2 {{'braid.cache_attention' op the caches hold 2 and 2 sequences, the query 3}}
  // expected-error @+1 {{'braid.cache_attention' op failed to infer returned types}}
  %o = braid.cache_attention %q, %kc, %vc, %pos : tensor<3x1x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<3xi32> -> tensor<3x1x4x4xf32>
  return %o : tensor<3x1x4x4xf32>
}

// -----

func.func @key_dim(%q: tensor<2x1x4x4xf32>, %kc: tensor<2x8x2x8xf32>, %vc: tensor<2x8x2x4xf32>, %pos: tensor<2xi32>) -> tensor<2x1x4x4xf32> {
  // expected-error @+2 {{'braid.cache_attention' op the key cache's head dimension 8 differs from the query's 4}}
  // expected-error @+1 {{'braid.cache_attention' op failed to infer returned types}}
  %o = braid.cache_attention %q, %kc, %vc, %pos : tensor<2x1x4x4xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x4xf32>, tensor<2xi32> -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

func.func @take_index(%x: tensor<2x6x8xf32>, %i: tensor<4xi32>) -> tensor<2x8xf32> {
  // expected-error @+2 {{'braid.take_rows' op index must be [2] (one per sequence), found 'tensor<4xi32>'}}
  // expected-error @+1 {{'braid.take_rows' op failed to infer returned types}}
  %r = braid.take_rows %x, %i : tensor<2x6x8xf32>, tensor<4xi32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @take_rank(%x: tensor<12x8xf32>, %i: tensor<2xi32>) -> tensor<2x8xf32> {
  // expected-error @+2 {{'braid.take_rows' op input must be [B, S, H], found 'tensor<12x8xf32>'}}
  // expected-error @+1 {{'braid.take_rows' op failed to infer returned types}}
  %r = braid.take_rows %x, %i : tensor<12x8xf32>, tensor<2xi32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @positions_hidden(%x: tensor<2x6x8xf32>, %table: tensor<16x4xf32>, %i: tensor<2xi32>) -> tensor<2x6x8xf32> {
  // expected-error @+2 {{'braid.add_positions' op table hidden size 4 differs from the input's 8}}
  // expected-error @+1 {{'braid.add_positions' op failed to infer returned types}}
  %p = braid.add_positions %x, %table, %i : tensor<2x6x8xf32>, tensor<16x4xf32>, tensor<2xi32> -> tensor<2x6x8xf32>
  return %p : tensor<2x6x8xf32>
}
