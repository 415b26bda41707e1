// RUN: braid-opt %s -split-input-file -verify-diagnostics

func.func @zigzag(%s: index) {
  // expected-error @+1 {{'braid.sequence_positions' op a sequence of 10 positions in zigzag order over 2 ranks needs a multiple of 4}}
  %p = braid.sequence_positions %s of 10 {zigzag = 2 : i64} : tensor<4xi64>
  return
}

// -----

func.func @rows(%s: index) {
  // expected-error @+1 {{'braid.sequence_positions' op result of 16 rows does not fit a sequence of 8}}
  %p = braid.sequence_positions %s of 8 : tensor<16xi64>
  return
}

// -----

func.func @heads(%q: tensor<2x8x3x16xf32>, %k: tensor<2x8x2x16xf32>, %p: tensor<8xi64>) {
  // expected-error @+1 {{'braid.attention_block' op query heads 3 are not a multiple of the key/value heads 2}}
  %o, %l = braid.attention_block %q, %k, %k, %p, %p scale 0.25 : tensor<2x8x3x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<8xi64>, tensor<8xi64> -> tensor<2x8x3x16xf32>, tensor<2x8x3xf32>
  return
}

// -----

func.func @positions(%q: tensor<2x8x4x16xf32>, %k: tensor<2x4x2x16xf32>, %p: tensor<8xi64>) {
  // expected-error @+1 {{'braid.attention_block' op positions must be one per query row (8) and per key row (4), found 'tensor<8xi64>', 'tensor<8xi64>'}}
  %o, %l = braid.attention_block %q, %k, %k, %p, %p scale 0.25 : tensor<2x8x4x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>, tensor<8xi64>, tensor<8xi64> -> tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @lse(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %p: tensor<8xi64>) {
  // expected-error @+1 {{'braid.attention_block' op lse must be 'tensor<2x8x4xf32>', found 'tensor<2x8xf32>'}}
  %o, %l = braid.attention_block %q, %k, %k, %p, %p scale 0.25 : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<8xi64>, tensor<8xi64> -> tensor<2x8x4x16xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rope(%q: tensor<2x8x4x5xf32>, %k: tensor<2x8x2x5xf32>, %p: tensor<8xi64>) {
  // expected-error @+1 {{'braid.attention_block' op rotary embedding needs an even head dimension, found 5}}
  %o, %l = braid.attention_block %q, %k, %k, %p, %p scale 0.25 {rope_theta = 1.0e4 : f64} : tensor<2x8x4x5xf32>, tensor<2x8x2x5xf32>, tensor<2x8x2x5xf32>, tensor<8xi64>, tensor<8xi64> -> tensor<2x8x4x5xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @merge(%o: tensor<2x8x4x16xf32>, %l: tensor<2x8x4xf32>, %bl: tensor<2x8xf32>) {
  // expected-error @+1 {{'braid.attention_merge' op lse must be 'tensor<2x8x4xf32>', found 'tensor<2x8xf32>'}}
  %mo, %ml = braid.attention_merge %o, %bl, %o, %bl : tensor<2x8x4x16xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @delta(%g: tensor<2x8x4x16xf32>, %o: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{'braid.attention_delta' op out must be 'tensor<2x8x4x16xf32>', found 'tensor<2x8x4x8xf32>'}}
  %d = braid.attention_delta %g, %o : tensor<2x8x4x16xf32>, tensor<2x8x4x8xf32> -> tensor<2x8x4xf32>
  return
}

// -----

func.func @accumulator(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %p: tensor<8xi64>, %l: tensor<2x8x4xf32>, %dk: tensor<2x8x4x16xf32>) {
  // expected-error @+1 {{'braid.attention_block_grad' op dkey must be 'tensor<2x8x2x16xf32>', found 'tensor<2x8x4x16xf32>'}}
  %a, %b, %c = braid.attention_block_grad %q, %k, %k, %q, %p, %p, %l, %l into %q, %dk, %dk scale 0.25 : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<8xi64>, tensor<8xi64>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
  return
}

// -----

func.func @types(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xbf16>, %p: tensor<8xi64>) {
  // expected-error @+1 {{'braid.attention_block' op query, key and value must have one element type}}
  %o, %l = braid.attention_block %q, %k, %k, %p, %p scale 0.25 : tensor<2x8x4x16xf32>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<8xi64>, tensor<8xi64> -> tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
  return
}
