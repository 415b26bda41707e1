// RUN: braid-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'normal' initialization needs a standard deviation}}
braid.param @w normal : tensor<4x4xf32>

// -----

// expected-error @+1 {{standard deviation must be positive and finite, found -1.000000e+00}}
braid.param @w normal(-1.0) : tensor<4x4xf32>

// -----

// expected-error @+1 {{'zeros' initialization takes no standard deviation}}
braid.param @w zeros(0.5) : tensor<4xf32>

// -----

// expected-error @+1 {{'mamba_dt' initialization takes no standard deviation}}
braid.param @w mamba_dt(0.5) : tensor<4xf32>

// -----

// expected-error @+1 {{'s4d_real' initialization runs along the last dimension: it needs a tensor of rank at least 1}}
braid.param @w s4d_real : tensor<f32>

// -----

// expected-error @+1 {{'braid.param' op attribute 'type' failed to satisfy constraint}}
braid.param @w zeros : tensor<?x4xf32>

// -----

func.func @f() {
  // expected-error @+1 {{'braid.param' op expects parent op 'builtin.module'}}
  braid.param @w zeros : tensor<4xf32>
  return
}

// -----

func.func @f() -> tensor<4xf32> {
  // expected-error @+1 {{'@missing' does not reference a braid.param}}
  %0 = braid.get_param @missing : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

braid.param @w ones : tensor<4xf32>
func.func @f() -> tensor<8xf32> {
  // expected-error @+1 {{result type 'tensor<8xf32>' does not match the type 'tensor<4xf32>' declared by '@w'}}
  %0 = braid.get_param @w : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// expected-error @+1 {{unknown braid attribute 'braid.unknown'}}
module attributes {braid.unknown = 1 : i64} {}

// -----

// expected-error @+1 {{'braid.model' must be attached to a builtin.module}}
func.func @f() attributes {braid.model = {name = "m", family = "gpt"}} {
  return
}

// -----

// expected-error @+1 {{'braid.model' must be a dictionary, found "gpt"}}
module attributes {braid.model = "gpt"} {}

// -----

// expected-error @+1 {{'braid.model' needs a string entry 'family'}}
module attributes {braid.model = {name = "m"}} {}

// -----

// expected-error @+1 {{'braid.model' entry 'sizes' must be an integer, float, string, bool or array of those}}
module attributes {braid.model = {name = "m", family = "gpt", sizes = {a = 1}}} {}

// -----

//===----------------------------------------------------------------------===//
// Transformer
//===----------------------------------------------------------------------===//

func.func @f(%t: tensor<i32>, %w: tensor<8x4xf32>) {
  // expected-error @+2 {{'braid.embedding' op tokens must have at least one dimension, found 'tensor<i32>'}}
  // expected-error @+1 {{'braid.embedding' op failed to infer returned types}}
  %0 = braid.embedding %t, %w : tensor<i32>, tensor<8x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f(%t: tensor<2x3xi32>, %w: tensor<8x4x2xf32>) {
  // expected-error @+2 {{'braid.embedding' op table must be [vocab, hidden], found 'tensor<8x4x2xf32>'}}
  // expected-error @+1 {{'braid.embedding' op failed to infer returned types}}
  %0 = braid.embedding %t, %w : tensor<2x3xi32>, tensor<8x4x2xf32> -> tensor<2x3x4xf32>
  return
}

// -----

func.func @f(%t: tensor<2x3xi32>, %w: tensor<8x4xf32>, %p: tensor<3xf32>) {
  // expected-error @+2 {{'braid.embedding' op position table must be [positions, hidden], found 'tensor<3xf32>'}}
  // expected-error @+1 {{'braid.embedding' op failed to infer returned types}}
  %0 = braid.embedding %t, %w positions %p : tensor<2x3xi32>, tensor<8x4xf32>, tensor<3xf32> -> tensor<2x3x4xf32>
  return
}

// -----

func.func @f(%t: tensor<2x3xi32>, %w: tensor<8x4xf32>, %p: tensor<3x4xbf16>) {
  // expected-error @+2 {{'braid.embedding' op operands must share one element type, found 'f32' and 'bf16'}}
  // expected-error @+1 {{'braid.embedding' op failed to infer returned types}}
  %0 = braid.embedding %t, %w positions %p : tensor<2x3xi32>, tensor<8x4xf32>, tensor<3x4xbf16> -> tensor<2x3x4xf32>
  return
}

// -----

func.func @f(%t: tensor<2x3xi32>, %w: tensor<8x4xf32>, %p: tensor<3x5xf32>) {
  // expected-error @+2 {{'braid.embedding' op position table hidden size 5 differs from the table's 4}}
  // expected-error @+1 {{'braid.embedding' op failed to infer returned types}}
  %0 = braid.embedding %t, %w positions %p : tensor<2x3xi32>, tensor<8x4xf32>, tensor<3x5xf32> -> tensor<2x3x4xf32>
  return
}

// -----

func.func @f(%t: tensor<2x3xi32>, %w: tensor<8x4xf32>, %p: tensor<2x4xf32>) {
  // expected-error @+2 {{'braid.embedding' op position table has 2 positions but the sequence has 3}}
  // expected-error @+1 {{'braid.embedding' op failed to infer returned types}}
  %0 = braid.embedding %t, %w positions %p : tensor<2x3xi32>, tensor<8x4xf32>, tensor<2x4xf32> -> tensor<2x3x4xf32>
  return
}

// -----

func.func @f(%t: tensor<2x3xi32>, %w: tensor<8x4xf32>) {
  // expected-error @+2 {{'braid.embedding' op inferred type(s) 'tensor<2x3x4xf32>' are incompatible with return type(s) of operation 'tensor<2x3x5xf32>'}}
  // expected-error @+1 {{'braid.embedding' op failed to infer returned types}}
  %0 = braid.embedding %t, %w : tensor<2x3xi32>, tensor<8x4xf32> -> tensor<2x3x5xf32>
  return
}

// -----

func.func @f(%t: tensor<2x3xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'braid.embedding' op operand #0 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = braid.embedding %t, %w : tensor<2x3xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<f32>, %w: tensor<4x8xf32>) {
  // expected-error @+2 {{'braid.linear' op input must have at least one dimension, found 'tensor<f32>'}}
  // expected-error @+1 {{'braid.linear' op failed to infer returned types}}
  %0 = braid.linear %x, %w : tensor<f32>, tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+2 {{'braid.linear' op weight must be [in, out], found 'tensor<4xf32>'}}
  // expected-error @+1 {{'braid.linear' op failed to infer returned types}}
  %0 = braid.linear %x, %w : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %w: tensor<8x5xf32>) {
  // expected-error @+2 {{'braid.linear' op input feature size 4 differs from the weight's 5 (weight is transposed)}}
  // expected-error @+1 {{'braid.linear' op failed to infer returned types}}
  %0 = braid.linear %x, %w transpose_weight : tensor<2x4xf32>, tensor<8x5xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'braid.linear' op bias must be [8], found 'tensor<4xf32>'}}
  // expected-error @+1 {{'braid.linear' op failed to infer returned types}}
  %0 = braid.linear %x, %w bias %b : tensor<2x4xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @f(%a: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'braid.batch_matmul' op operands must have one rank of at least 2, found 'tensor<8xf32>' and 'tensor<8xf32>'}}
  // expected-error @+1 {{'braid.batch_matmul' op failed to infer returned types}}
  %0 = braid.batch_matmul %a, %b : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+2 {{'braid.batch_matmul' op batch dimensions differ: 'tensor<2x4x8xf32>' and 'tensor<3x8x4xf32>'}}
  // expected-error @+1 {{'braid.batch_matmul' op failed to infer returned types}}
  %0 = braid.batch_matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

func.func @f(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>) {
  // expected-error @+2 {{'braid.batch_matmul' op contraction sizes differ: 4 (lhs) and 8 (rhs)}}
  // expected-error @+1 {{'braid.batch_matmul' op failed to infer returned types}}
  %0 = braid.batch_matmul %a, %b transpose_a : tensor<2x4x8xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4xf32>, %k: tensor<2x8x2x4xf32>) {
  // expected-error @+2 {{'braid.attention' op query must be [batch, seq, heads, head_dim], found 'tensor<2x8x4xf32>'}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k : tensor<2x8x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2xf32>) {
  // expected-error @+2 {{'braid.attention' op key must be [batch, seq, kv_heads, head_dim], found 'tensor<2x8x2xf32>'}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k : tensor<2x8x4x4xf32>, tensor<2x8x2xf32>, tensor<2x8x2xf32> -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2xf32>) {
  // expected-error @+2 {{'braid.attention' op value must be [batch, seq, kv_heads, head_dim], found 'tensor<2x8x2xf32>'}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %v : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2xf32> -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<3x8x2x4xf32>) {
  // expected-error @+2 {{'braid.attention' op batch sizes differ}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k : tensor<2x8x4x4xf32>, tensor<3x8x2x4xf32>, tensor<3x8x2x4xf32> -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>, %v: tensor<2x6x2x4xf32>) {
  // expected-error @+2 {{'braid.attention' op key and value must agree on batch, sequence and heads, found 'tensor<2x8x2x4xf32>' and 'tensor<2x6x2x4xf32>'}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %v : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x6x2x4xf32> -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x8xf32>) {
  // expected-error @+2 {{'braid.attention' op key head dim 8 differs from the query's 4}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k : tensor<2x8x4x4xf32>, tensor<2x8x2x8xf32>, tensor<2x8x2x8xf32> -> tensor<2x8x4x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x3x4xf32>) {
  // expected-error @+2 {{'braid.attention' op query heads (4) must be a multiple of key/value heads (3)}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k : tensor<2x8x4x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32> -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>) {
  // expected-error @+2 {{'braid.attention' op ring_axes and query_offset_axes exclude each other: a ring passes the key chunks, an offset chunk sees every key}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k causal {ring_axes = ["cp"], query_offset_axes = ["cp"]} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>) {
  // expected-error @+2 {{'braid.attention' op sequence_zigzag must be at least 1, found 0}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k causal {sequence_zigzag = 0 : i64} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x4x4xf32>
  return
}

// -----

// expected-error @+1 {{'braid.zigzag_axis' must name a grid axis with a string on a module}}
module attributes {braid.zigzag_axis = 2 : i64} {
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x6x2x4xf32>) {
  // expected-error @+2 {{'braid.attention' op causal attention needs equal query and key lengths, found 8 and 6}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k causal : tensor<2x8x4x4xf32>, tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32> -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>) {
  // expected-error @+2 {{'braid.attention' op scale must be positive and finite, found 0.000000e+00}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k {scale = 0.0 : f64} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>) {
  // expected-error @+2 {{'braid.attention' op rope_theta must be positive and finite, found -1.000000e+00}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k {rope_theta = -1.0 : f64} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x5xf32>, %k: tensor<2x8x2x5xf32>) {
  // expected-error @+2 {{'braid.attention' op rotary embedding needs an even head dim, found 5}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k {rope_theta = 1.0e4 : f64} : tensor<2x8x4x5xf32>, tensor<2x8x2x5xf32>, tensor<2x8x2x5xf32> -> tensor<2x8x4x5xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xbf16>) {
  // expected-error @+2 {{'braid.attention' op operands must share one element type, found 'f32' and 'bf16'}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k : tensor<2x8x4x4xf32>, tensor<2x8x2x4xbf16>, tensor<2x8x2x4xbf16> -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<f32>, %g: tensor<4xf32>) {
  // expected-error @+2 {{'braid.rms_norm' op input must have at least one dimension, found 'tensor<f32>'}}
  // expected-error @+1 {{'braid.rms_norm' op failed to infer returned types}}
  %0 = braid.rms_norm %x, %g : tensor<f32>, tensor<4xf32> -> tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<f32>) {
  // expected-error @+1 {{'braid.softmax' op input must have at least one dimension (softmax is over the last), found 'tensor<f32>'}}
  %0 = braid.softmax %x : tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<3xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'braid.softmax' op requires the same type for all operands and results}}
  %0 = "braid.softmax"(%x) : (tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%y: tensor<f32>) {
  // expected-error @+1 {{'braid.softmax_grad' op softmax's result must have at least one dimension, found 'tensor<f32>'}}
  %0 = braid.softmax_grad %y, %y : tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %g: tensor<5xf32>) {
  // expected-error @+2 {{'braid.rms_norm' op scale and shift must be [4], found 'tensor<5xf32>'}}
  // expected-error @+1 {{'braid.rms_norm' op failed to infer returned types}}
  %0 = braid.rms_norm %x, %g : tensor<2x4xf32>, tensor<5xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+2 {{'braid.rms_norm' op epsilon must be positive and finite, found 0.000000e+00}}
  // expected-error @+1 {{'braid.rms_norm' op failed to infer returned types}}
  %0 = braid.rms_norm %x, %g {epsilon = 0.0 : f64} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{'braid.layer_norm' op scale and shift must be [4], found 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'braid.layer_norm' op failed to infer returned types}}
  %0 = braid.layer_norm %x, %g, %b : tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %g: tensor<4xbf16>) {
  // expected-error @+2 {{'braid.layer_norm' op operands must share one element type, found 'f32' and 'bf16'}}
  // expected-error @+1 {{'braid.layer_norm' op failed to infer returned types}}
  %0 = braid.layer_norm %x, %g, %g : tensor<2x4xf32>, tensor<4xbf16>, tensor<4xbf16> -> tensor<2x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise and layout
//===----------------------------------------------------------------------===//

func.func @f(%a: tensor<2x4xf32>, %b: tensor<2x4xbf16>) {
  // expected-error @+1 {{'braid.add' op requires the same type for all operands and results}}
  %0 = "braid.add"(%a, %b) : (tensor<2x4xf32>, tensor<2x4xbf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%a: tensor<2x4xi32>) {
  // expected-error @+1 {{'braid.silu' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = braid.silu %a : tensor<2x4xi32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'braid.reshape' op element type 'bf16' of the result differs from 'f32' of the input}}
  %0 = braid.reshape %x : tensor<2x4xf32> -> tensor<8xbf16>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'braid.reshape' op result has 9 elements but the input has 8}}
  %0 = braid.reshape %x : tensor<2x4xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x3xf32>) {
  // expected-error @+2 {{'braid.transpose' op permutation has 2 entries but the input has rank 3}}
  // expected-error @+1 {{'braid.transpose' op failed to infer returned types}}
  %0 = braid.transpose %x [1, 0] : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x3xf32>) {
  // expected-error @+2 {{'braid.transpose' op [0, 0, 1] is not a permutation of the input's dimensions}}
  // expected-error @+1 {{'braid.transpose' op failed to infer returned types}}
  %0 = braid.transpose %x [0, 0, 1] : tensor<2x4x3xf32> -> tensor<2x2x4xf32>
  return
}

// -----

func.func @f(%l: tensor<2x8x10xf32>, %t: tensor<2x10xi32>) {
  // expected-error @+2 {{'braid.cross_entropy' op labels must have the logits' shape without the vocabulary dimension, found 'tensor<2x8x10xf32>' and 'tensor<2x10xi32>'}}
  // expected-error @+1 {{'braid.cross_entropy' op failed to infer returned types}}
  %0 = braid.cross_entropy %l, %t : tensor<2x8x10xf32>, tensor<2x10xi32> -> tensor<f32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Mamba
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+2 {{'braid.conv1d' op input must be [batch, seq, channels], found 'tensor<2x8xf32>'}}
  // expected-error @+1 {{'braid.conv1d' op failed to infer returned types}}
  %0 = braid.conv1d %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+2 {{'braid.conv1d' op weight must be [channels, kernel], found 'tensor<16xf32>'}}
  // expected-error @+1 {{'braid.conv1d' op failed to infer returned types}}
  %0 = braid.conv1d %x, %w : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+2 {{'braid.conv1d' op weight has 8 channels but the input has 16}}
  // expected-error @+1 {{'braid.conv1d' op failed to infer returned types}}
  %0 = braid.conv1d %x, %w : tensor<2x8x16xf32>, tensor<8x4xf32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %w: tensor<16x0xf32>) {
  // expected-error @+2 {{'braid.conv1d' op kernel size must be at least 1, found 0}}
  // expected-error @+1 {{'braid.conv1d' op failed to infer returned types}}
  %0 = braid.conv1d %x, %w : tensor<2x8x16xf32>, tensor<16x0xf32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'braid.conv1d' op bias must be [16], found 'tensor<8xf32>'}}
  // expected-error @+1 {{'braid.conv1d' op failed to infer returned types}}
  %0 = braid.conv1d %x, %w bias %b : tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<8xf32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %A: tensor<16x4xf32>, %B: tensor<2x8x4xf32>, %D: tensor<16xf32>) {
  // expected-error @+2 {{'braid.selective_scan' op input must be [batch, seq, channels], found 'tensor<16x4xf32>'}}
  // expected-error @+1 {{'braid.selective_scan' op failed to infer returned types}}
  %0 = braid.selective_scan %A, %x, %A, %B, %B, %D : tensor<16x4xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %dt: tensor<2x8x8xf32>, %A: tensor<16x4xf32>, %B: tensor<2x8x4xf32>, %D: tensor<16xf32>) {
  // expected-error @+2 {{'braid.selective_scan' op delta must have the input's shape 'tensor<2x8x16xf32>', found 'tensor<2x8x8xf32>'}}
  // expected-error @+1 {{'braid.selective_scan' op failed to infer returned types}}
  %0 = braid.selective_scan %x, %dt, %A, %B, %B, %D : tensor<2x8x16xf32>, tensor<2x8x8xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %A: tensor<8x4xf32>, %B: tensor<2x8x4xf32>, %D: tensor<16xf32>) {
  // expected-error @+2 {{'braid.selective_scan' op A must be [16, state], found 'tensor<8x4xf32>'}}
  // expected-error @+1 {{'braid.selective_scan' op failed to infer returned types}}
  %0 = braid.selective_scan %x, %x, %A, %B, %B, %D : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %A: tensor<16x4xf32>, %B: tensor<2x8x3xf32>, %C: tensor<2x8x4xf32>, %D: tensor<16xf32>) {
  // expected-error @+2 {{'braid.selective_scan' op B must be [2, 8, 4], found 'tensor<2x8x3xf32>'}}
  // expected-error @+1 {{'braid.selective_scan' op failed to infer returned types}}
  %0 = braid.selective_scan %x, %x, %A, %B, %C, %D : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x3xf32>, tensor<2x8x4xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %A: tensor<16x4xf32>, %B: tensor<2x8x4xf32>, %C: tensor<2x4x4xf32>, %D: tensor<16xf32>) {
  // expected-error @+2 {{'braid.selective_scan' op C must be [2, 8, 4], found 'tensor<2x4x4xf32>'}}
  // expected-error @+1 {{'braid.selective_scan' op failed to infer returned types}}
  %0 = braid.selective_scan %x, %x, %A, %B, %C, %D : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x4x4xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %A: tensor<16x4xf32>, %B: tensor<2x8x4xf32>, %D: tensor<4xf32>) {
  // expected-error @+2 {{'braid.selective_scan' op D must be [16], found 'tensor<4xf32>'}}
  // expected-error @+1 {{'braid.selective_scan' op failed to infer returned types}}
  %0 = braid.selective_scan %x, %x, %A, %B, %B, %D : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<4xf32> -> tensor<2x8x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

func.func @f(%l: tensor<2x16x8xf32>) {
  // expected-error @+2 {{'braid.router' op logits must be [tokens, experts], found 'tensor<2x16x8xf32>'}}
  // expected-error @+1 {{'braid.router' op failed to infer returned types}}
  %w, %i = braid.router %l top_k 2 : tensor<2x16x8xf32> -> tensor<2x2xf32>, tensor<2x2xi32>
  return
}

// -----

func.func @f(%l: tensor<16x8xf32>) {
  // expected-error @+2 {{'braid.router' op top_k must lie in [1, 8] (the number of experts), found 9}}
  // expected-error @+1 {{'braid.router' op failed to infer returned types}}
  %w, %i = braid.router %l top_k 9 : tensor<16x8xf32> -> tensor<16x9xf32>, tensor<16x9xi32>
  return
}

// -----

func.func @f(%l: tensor<16x8xf32>) {
  // expected-error @+1 {{'braid.router' op attribute 'top_k' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %w, %i = braid.router %l top_k 0 : tensor<16x8xf32> -> tensor<16x0xf32>, tensor<16x0xi32>
  return
}

// -----

func.func @f(%x: tensor<2x16x8xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+1 {{'braid.dispatch' op input must be [tokens, hidden], found 'tensor<2x16x8xf32>'}}
  %0 = braid.dispatch %x, %i : tensor<2x16x8xf32>, tensor<16x2xi32> -> tensor<4x8x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>, %i: tensor<8x2xi32>) {
  // expected-error @+1 {{'braid.dispatch' op indices must be [16, k] to match the input, found 'tensor<8x2xi32>'}}
  %0 = braid.dispatch %x, %i : tensor<16x8xf32>, tensor<8x2xi32> -> tensor<4x8x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+1 {{'braid.dispatch' op result must be [experts, capacity, hidden], found 'tensor<32x8xf32>'}}
  %0 = braid.dispatch %x, %i : tensor<16x8xf32>, tensor<16x2xi32> -> tensor<32x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+1 {{'braid.dispatch' op needs at least one expert and a capacity of at least one, found 'tensor<4x0x8xf32>'}}
  %0 = braid.dispatch %x, %i : tensor<16x8xf32>, tensor<16x2xi32> -> tensor<4x0x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+1 {{'braid.dispatch' op result hidden size 4 differs from the input's 8}}
  %0 = braid.dispatch %x, %i : tensor<16x8xf32>, tensor<16x2xi32> -> tensor<4x8x4xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+1 {{'braid.dispatch' op result element type 'bf16' differs from the input's 'f32'}}
  %0 = braid.dispatch %x, %i : tensor<16x8xf32>, tensor<16x2xi32> -> tensor<4x8x8xbf16>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %u: tensor<4x8x16xf32>, %d: tensor<4x16x8xf32>) {
  // expected-error @+2 {{'braid.expert_ffn' op input must be [experts, capacity, hidden], found 'tensor<4x8xf32>'}}
  // expected-error @+1 {{'braid.expert_ffn' op failed to infer returned types}}
  %0 = braid.expert_ffn silu %x, %u, %d : tensor<4x8xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6x8xf32>, %u: tensor<8x16xf32>, %d: tensor<4x16x8xf32>) {
  // expected-error @+2 {{'braid.expert_ffn' op w_up must be [experts, hidden, ffn], found 'tensor<8x16xf32>'}}
  // expected-error @+1 {{'braid.expert_ffn' op failed to infer returned types}}
  %0 = braid.expert_ffn silu %x, %u, %d : tensor<4x6x8xf32>, tensor<8x16xf32>, tensor<4x16x8xf32> -> tensor<4x6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6x8xf32>, %u: tensor<2x8x16xf32>, %d: tensor<4x16x8xf32>) {
  // expected-error @+2 {{'braid.expert_ffn' op w_up must be [4, 8, ffn], found 'tensor<2x8x16xf32>'}}
  // expected-error @+1 {{'braid.expert_ffn' op failed to infer returned types}}
  %0 = braid.expert_ffn silu %x, %u, %d : tensor<4x6x8xf32>, tensor<2x8x16xf32>, tensor<4x16x8xf32> -> tensor<4x6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6x8xf32>, %u: tensor<4x8x16xf32>, %d: tensor<4x8x16xf32>) {
  // expected-error @+2 {{'braid.expert_ffn' op w_down must be [4, 16, 8], found 'tensor<4x8x16xf32>'}}
  // expected-error @+1 {{'braid.expert_ffn' op failed to infer returned types}}
  %0 = braid.expert_ffn silu %x, %u, %d : tensor<4x6x8xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6x8xf32>, %u: tensor<4x8x16xf32>, %d: tensor<4x16x8xf32>, %g: tensor<4x8x12xf32>) {
  // expected-error @+2 {{'braid.expert_ffn' op w_gate must have w_up's shape 'tensor<4x8x16xf32>', found 'tensor<4x8x12xf32>'}}
  // expected-error @+1 {{'braid.expert_ffn' op failed to infer returned types}}
  %0 = braid.expert_ffn silu %x, %u, %d gate %g : tensor<4x6x8xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>, tensor<4x8x12xf32> -> tensor<4x6x8xf32>
  return
}

// -----

func.func @f(%e: tensor<4x6xf32>, %w: tensor<16x2xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+2 {{'braid.combine' op expert output must be [experts, capacity, hidden], found 'tensor<4x6xf32>'}}
  // expected-error @+1 {{'braid.combine' op failed to infer returned types}}
  %0 = braid.combine %e, %w, %i : tensor<4x6xf32>, tensor<16x2xf32>, tensor<16x2xi32> -> tensor<16x6xf32>
  return
}

// -----

func.func @f(%e: tensor<4x6x8xf32>, %w: tensor<16xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+2 {{'braid.combine' op weights must be [tokens, k], found 'tensor<16xf32>'}}
  // expected-error @+1 {{'braid.combine' op failed to infer returned types}}
  %0 = braid.combine %e, %w, %i : tensor<4x6x8xf32>, tensor<16xf32>, tensor<16x2xi32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%e: tensor<4x6x8xf32>, %w: tensor<16x2xf32>, %i: tensor<16x1xi32>) {
  // expected-error @+2 {{'braid.combine' op indices must have the weights' shape 'tensor<16x2xf32>', found 'tensor<16x1xi32>'}}
  // expected-error @+1 {{'braid.combine' op failed to infer returned types}}
  %0 = braid.combine %e, %w, %i : tensor<4x6x8xf32>, tensor<16x2xf32>, tensor<16x1xi32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+1 {{'braid.dispatch' op 16 tokens do not cut into capacity groups of 5}}
  %0 = braid.dispatch %x, %i group_size 5 : tensor<16x8xf32>, tensor<16x2xi32> -> tensor<4x8x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+1 {{'braid.dispatch' op 9 slots per expert do not divide into 2 groups of 8 tokens}}
  %0 = braid.dispatch %x, %i group_size 8 : tensor<16x8xf32>, tensor<16x2xi32> -> tensor<4x9x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+1 {{'braid.dispatch' op attribute 'group_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = braid.dispatch %x, %i group_size 0 : tensor<16x8xf32>, tensor<16x2xi32> -> tensor<4x8x8xf32>
  return
}

// -----

func.func @f(%e: tensor<4x9x8xf32>, %w: tensor<16x2xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+2 {{'braid.combine' op 9 slots per expert do not divide into 4 groups of 4 tokens}}
  // expected-error @+1 {{'braid.combine' op failed to infer returned types}}
  %0 = braid.combine %e, %w, %i group_size 4 : tensor<4x9x8xf32>, tensor<16x2xf32>, tensor<16x2xi32> -> tensor<16x8xf32>
  return
}
