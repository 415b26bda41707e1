// RUN: braid-opt %s -split-input-file -verify-diagnostics

func.func @chunk_past_context(%c: tensor<2x8x2x4xf32>, %r: tensor<2x1x2x4xf32>, %p: tensor<2xi32>, %f: index) {
  // expected-error @+1 {{'braid.cache_write_chunk' op a chunk of 8 rows does not fit a context of 4}}
  %w = braid.cache_write_chunk %c, %r, %p at %f of 4 : tensor<2x8x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>
  return
}

// -----

func.func @positions(%c: tensor<2x8x2x4xf32>, %r: tensor<2x1x2x4xf32>, %p: tensor<3xi32>, %f: index) {
  // expected-error @+1 {{'braid.cache_write_chunk' op positions must be [2] (one per sequence), found 'tensor<3xi32>'}}
  %w = braid.cache_write_chunk %c, %r, %p at %f of 16 : tensor<2x8x2x4xf32>, tensor<2x1x2x4xf32>, tensor<3xi32>
  return
}

// -----

func.func @rows(%c: tensor<2x8x2x4xf32>, %r: tensor<2x1x1x4xf32>, %p: tensor<2xi32>, %f: index) {
  // expected-error @+1 {{'braid.cache_write_chunk' op rows 'tensor<2x1x1x4xf32>' do not fit the cache 'tensor<2x8x2x4xf32>': the sequences, heads, head dimension and type must match}}
  %w = braid.cache_write_chunk %c, %r, %p at %f of 16 : tensor<2x8x2x4xf32>, tensor<2x1x1x4xf32>, tensor<2xi32>
  return
}

// -----

func.func @two_uses(%c: tensor<2x8x2x4xf32>, %r: tensor<2x1x2x4xf32>, %p: tensor<2xi32>, %f: index) -> tensor<2x8x2x4xf32> {
  // expected-error @+1 {{'braid.cache_write_chunk' op writes its cache in place, so the cache operand must have no other use}}
  %w = braid.cache_write_chunk %c, %r, %p at %f of 16 : tensor<2x8x2x4xf32>, tensor<2x1x2x4xf32>, tensor<2xi32>
  return %c : tensor<2x8x2x4xf32>
}

// -----

func.func @heads(%q: tensor<2x1x3x4xf32>, %c: tensor<2x8x2x4xf32>, %p: tensor<2xi32>, %f: index) {
  // expected-error @+1 {{'braid.cache_attention_chunk' op query 'tensor<2x1x3x4xf32>' does not fit the caches 'tensor<2x8x2x4xf32>' and 'tensor<2x8x2x4xf32>'}}
  %o, %l = braid.cache_attention_chunk %q, %c, %c, %p at %f of 16 : tensor<2x1x3x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2xi32> -> tensor<2x1x3x4xf32>, tensor<2x1x3xf32>
  return
}

// -----

func.func @lse(%q: tensor<2x1x4x4xf32>, %c: tensor<2x8x2x4xf32>, %p: tensor<2xi32>, %f: index) {
  // expected-error @+1 {{'braid.cache_attention_chunk' op lse must be 'tensor<2x1x4xf32>', found 'tensor<2x4xf32>'}}
  %o, %l = braid.cache_attention_chunk %q, %c, %c, %p at %f of 16 : tensor<2x1x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2xi32> -> tensor<2x1x4x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @merge_parts(%o: tensor<3x1x4x4xf32>, %l: tensor<3x1x4xf32>) {
  // expected-error @+1 {{'braid.cache_attention_merge' op outs 'tensor<3x1x4x4xf32>' must stack whole chunks of the result 'tensor<2x1x4x4xf32>' along dimension 0}}
  %m = braid.cache_attention_merge %o, %l : tensor<3x1x4x4xf32>, tensor<3x1x4xf32> -> tensor<2x1x4x4xf32>
  return
}

// -----

func.func @merge_lses(%o: tensor<4x1x4x4xf32>, %l: tensor<4x1xf32>) {
  // expected-error @+1 {{'braid.cache_attention_merge' op lses must be 'tensor<4x1x4xf32>', found 'tensor<4x1xf32>'}}
  %m = braid.cache_attention_merge %o, %l : tensor<4x1x4x4xf32>, tensor<4x1xf32> -> tensor<2x1x4x4xf32>
  return
}
