// RUN: braid-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// Helpers of backward graphs
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<f32>) {
  // expected-error @+2 {{'braid.sum_rows' op input must have at least one dimension, found 'tensor<f32>'}}
  // expected-error @+1 {{'braid.sum_rows' op failed to infer returned types}}
  %0 = braid.sum_rows %x : tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>) {
  // The Elementwise trait's verifier runs before ConvertOp::verify and rejects
  // differing shapes first, so its own "converts element types only; shapes
  // differ" message is not reachable.
  // expected-error @+1 {{'braid.convert' op all non-scalar operands/results must have the same shape and base type}}
  %0 = braid.convert %x : tensor<2x4xf32> -> tensor<8xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Vector-Jacobian products
//===----------------------------------------------------------------------===//

func.func @f(%q: tensor<2x8x4xf32>, %k: tensor<2x8x2x4xf32>, %g: tensor<2x8x4xf32>) {
  // expected-error @+2 {{'braid.attention_grad' op query must be [batch, seq, heads, head_dim], found 'tensor<2x8x4xf32>'}}
  // expected-error @+1 {{'braid.attention_grad' op failed to infer returned types}}
  %0:3 = braid.attention_grad %q, %k, %k, %g : tensor<2x8x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x3x4xf32>, %g: tensor<2x8x4x4xf32>) {
  // expected-error @+2 {{'braid.attention_grad' op query heads (4) must be a multiple of key/value heads (3)}}
  // expected-error @+1 {{'braid.attention_grad' op failed to infer returned types}}
  %0:3 = braid.attention_grad %q, %k, %k, %g : tensor<2x8x4x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x4x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x6xf32>, %g: tensor<2x8x4x4xf32>) {
  // expected-error @+2 {{'braid.attention_grad' op grad must have the attention result's type 'tensor<2x8x4x6xf32>', found 'tensor<2x8x4x4xf32>'}}
  // expected-error @+1 {{'braid.attention_grad' op failed to infer returned types}}
  %0:3 = braid.attention_grad %q, %k, %v, %g : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x6xf32>, tensor<2x8x4x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x6xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %s: tensor<5xf32>) {
  // expected-error @+2 {{'braid.rms_norm_grad' op scale must be [4], found 'tensor<5xf32>'}}
  // expected-error @+1 {{'braid.rms_norm_grad' op failed to infer returned types}}
  %0:2 = braid.rms_norm_grad %x, %s, %x : tensor<2x4xf32>, tensor<5xf32>, tensor<2x4xf32> -> tensor<2x4xf32>, tensor<5xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %g: tensor<2x4xbf16>) {
  // expected-error @+2 {{'braid.rms_norm_grad' op grad must have the input's type 'tensor<2x4xf32>', found 'tensor<2x4xbf16>'}}
  // expected-error @+1 {{'braid.rms_norm_grad' op failed to infer returned types}}
  %0:2 = braid.rms_norm_grad %x, %s, %g : tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xbf16> -> tensor<2x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %s: tensor<2x4xf32>) {
  // expected-error @+2 {{'braid.layer_norm_grad' op scale must be [4], found 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'braid.layer_norm_grad' op failed to infer returned types}}
  %0:3 = braid.layer_norm_grad %x, %s, %x : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %g: tensor<3x4xf32>) {
  // expected-error @+2 {{'braid.layer_norm_grad' op grad must have the input's type 'tensor<2x4xf32>', found 'tensor<3x4xf32>'}}
  // expected-error @+1 {{'braid.layer_norm_grad' op failed to infer returned types}}
  %0:3 = braid.layer_norm_grad %x, %s, %g : tensor<2x4xf32>, tensor<4xf32>, tensor<3x4xf32> -> tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @f(%t: tensor<2x8xi32>, %g: tensor<2x6x4xf32>) {
  // expected-error @+1 {{'braid.embedding_grad' op grad must be the tokens' shape plus a hidden dimension, found 'tensor<2x6x4xf32>'}}
  %0 = braid.embedding_grad %t, %g : tensor<2x8xi32>, tensor<2x6x4xf32> -> tensor<16x4xf32>
  return
}

// -----

func.func @f(%t: tensor<2x8xi32>, %g: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'braid.embedding_grad' op result must be [vocab >= 1, 4], found 'tensor<16x8xf32>'}}
  %0 = braid.embedding_grad %t, %g : tensor<2x8xi32>, tensor<2x8x4xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%t: tensor<2x8xi32>, %g: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'braid.embedding_grad' op result element type differs from the grad's}}
  %0 = braid.embedding_grad %t, %g : tensor<2x8xi32>, tensor<2x8x4xf32> -> tensor<16x4xbf16>
  return
}

// -----

func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'braid.position_grad' op grad must be [..., seq, hidden], found 'tensor<4xf32>'}}
  %0 = braid.position_grad %g : tensor<4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @f(%g: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'braid.position_grad' op result must be [positions >= 8, 4], found 'tensor<6x4xf32>'}}
  %0 = braid.position_grad %g : tensor<2x8x4xf32> -> tensor<6x4xf32>
  return
}

// -----

func.func @f(%g: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'braid.position_grad' op result element type differs from the grad's}}
  %0 = braid.position_grad %g : tensor<2x8x4xf32> -> tensor<8x4xf16>
  return
}

// -----

func.func @f(%l: tensor<2x8x10xf32>, %t: tensor<2x10xi32>, %g: tensor<f32>) {
  // expected-error @+2 {{'braid.cross_entropy_grad' op labels must have the logits' shape without the vocabulary dimension, found 'tensor<2x8x10xf32>' and 'tensor<2x10xi32>'}}
  // expected-error @+1 {{'braid.cross_entropy_grad' op failed to infer returned types}}
  %0 = braid.cross_entropy_grad %l, %t, %g : tensor<2x8x10xf32>, tensor<2x10xi32>, tensor<f32> -> tensor<2x8x10xf32>
  return
}

// -----

func.func @f(%l: tensor<2x8x10xf32>, %t: tensor<2x8xi32>, %g: tensor<bf16>) {
  // expected-error @+1 {{'braid.cross_entropy_grad' op operand #2 must be 0D tensor of 32-bit float values}}
  %0 = braid.cross_entropy_grad %l, %t, %g : tensor<2x8x10xf32>, tensor<2x8xi32>, tensor<bf16> -> tensor<2x8x10xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+2 {{'braid.conv1d_grad' op expects input [B, S, C], weight [C, K] and grad of the input's type, found 'tensor<2x8x16xf32>', 'tensor<8x4xf32>', 'tensor<2x8x16xf32>'}}
  // expected-error @+1 {{'braid.conv1d_grad' op failed to infer returned types}}
  %0:3 = braid.conv1d_grad %x, %w, %x : tensor<2x8x16xf32>, tensor<8x4xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<8x4xf32>, tensor<16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %A: tensor<16x4xf32>, %B: tensor<2x8x4xf32>, %D: tensor<4xf32>) {
  // expected-error @+2 {{'braid.selective_scan' op D must be [16], found 'tensor<4xf32>'}}
  // expected-error @+1 {{'braid.selective_scan_grad' op failed to infer returned types}}
  %0:6 = braid.selective_scan_grad %x, %x, %A, %B, %B, %D, %x : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<4xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x16xf32>, %A: tensor<16x4xf32>, %B: tensor<2x8x4xf32>, %D: tensor<16xf32>, %g: tensor<2x8x8xf32>) {
  // expected-error @+2 {{'braid.selective_scan_grad' op grad must have the input's type 'tensor<2x8x16xf32>'}}
  // expected-error @+1 {{'braid.selective_scan_grad' op failed to infer returned types}}
  %0:6 = braid.selective_scan_grad %x, %x, %A, %B, %B, %D, %g delta_softplus : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32>, tensor<2x8x8xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32>
  return
}

// -----

func.func @f(%l: tensor<16x8xf32>, %i: tensor<16x2xi32>, %g: tensor<16x1xf32>) {
  // expected-error @+2 {{'braid.router_grad' op expects logits [T, E], indices [T, k] and grad [T, k], found 'tensor<16x8xf32>', 'tensor<16x2xi32>', 'tensor<16x1xf32>'}}
  // expected-error @+1 {{'braid.router_grad' op failed to infer returned types}}
  %0 = braid.router_grad %l, %i, %g normalize : tensor<16x8xf32>, tensor<16x2xi32>, tensor<16x1xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%g: tensor<4x8xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+2 {{'braid.dispatch_grad' op expects grad [E >= 1, C >= 1, H] and indices [T, k], found 'tensor<4x8xf32>' and 'tensor<16x2xi32>'}}
  // expected-error @+1 {{'braid.dispatch_grad' op failed to infer returned types}}
  %0 = braid.dispatch_grad %g, %i : tensor<4x8xf32>, tensor<16x2xi32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%e: tensor<4x6x8xf32>, %w: tensor<16x2xf32>, %i: tensor<16x2xi32>, %g: tensor<16x4xf32>) {
  // expected-error @+2 {{'braid.combine_grad' op grad must have the combined result's type 'tensor<16x8xf32>'}}
  // expected-error @+1 {{'braid.combine_grad' op failed to infer returned types}}
  %0:2 = braid.combine_grad %e, %w, %i, %g : tensor<4x6x8xf32>, tensor<16x2xf32>, tensor<16x2xi32>, tensor<16x4xf32> -> tensor<4x6x8xf32>, tensor<16x2xf32>
  return
}

// -----

func.func @f(%e: tensor<4x6x8xf32>, %w: tensor<16x2xf32>, %i: tensor<16x1xi32>, %g: tensor<16x8xf32>) {
  // expected-error @+2 {{'braid.combine' op indices must have the weights' shape 'tensor<16x2xf32>', found 'tensor<16x1xi32>'}}
  // expected-error @+1 {{'braid.combine_grad' op failed to infer returned types}}
  %0:2 = braid.combine_grad %e, %w, %i, %g : tensor<4x6x8xf32>, tensor<16x2xf32>, tensor<16x1xi32>, tensor<16x8xf32> -> tensor<4x6x8xf32>, tensor<16x2xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// State and updates
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'braid.state' op state starts as zeros or ones, not normal}}
braid.state @s normal : tensor<4xf32>

// -----

// expected-error @+1 {{'braid.state' op state starts as zeros or ones, not s4d_real}}
braid.state @s s4d_real : tensor<4xf32>

// -----

braid.param @step zeros : tensor<f32>
func.func @f() {
  // expected-error @+1 {{'braid.increment' op '@step' (counter) does not reference a braid.state}}
  braid.increment @step
  return
}

// -----

braid.state @step zeros : tensor<2xf32>
func.func @f() {
  // expected-error @+1 {{'braid.increment' op counter must be a tensor<f32>, found 'tensor<2xf32>'}}
  braid.increment @step
  return
}

// -----

func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.sgd_update' op '@w' does not reference a braid.param}}
  braid.sgd_update @w, %g, %c {lr = 0.1 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w zeros : tensor<4xf32>
func.func @f(%g: tensor<8xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.sgd_update' op grad shape 'tensor<8xf32>' differs from the parameter's 'tensor<4xf32>'}}
  braid.sgd_update @w, %g, %c {lr = 0.1 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>
  return
}

// -----

braid.state @m zeros : tensor<4xf32>
braid.state @v zeros : tensor<4xf32>
braid.state @t zeros : tensor<f32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op '@w' does not reference a braid.param}}
  braid.adamw_update @w, %g, %c moments @m, @v step @t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w zeros : tensor<4xf32>
braid.state @m zeros : tensor<4xf32>
braid.state @v zeros : tensor<4xf32>
braid.state @t zeros : tensor<f32>
func.func @f(%g: tensor<2x2xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op grad shape 'tensor<2x2xf32>' differs from the parameter's 'tensor<4xf32>'}}
  braid.adamw_update @w, %g, %c moments @m, @v step @t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<2x2xf32>, tensor<f32>
  return
}

// -----

braid.param @w zeros : tensor<4xf32>
braid.state @v zeros : tensor<4xf32>
braid.state @t zeros : tensor<f32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op '@w' (first moment) does not reference a braid.state}}
  braid.adamw_update @w, %g, %c moments @w, @v step @t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w zeros : tensor<4xf32>
braid.state @m zeros : tensor<4xf32>
braid.state @t zeros : tensor<f32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op '@missing' (second moment) does not reference a braid.state}}
  braid.adamw_update @w, %g, %c moments @m, @missing step @t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w zeros : tensor<4xf32>
braid.state @m zeros : tensor<4xbf16>
braid.state @v zeros : tensor<4xf32>
braid.state @t zeros : tensor<f32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op the first moment must be an f32 tensor of the parameter's shape, found 'tensor<4xbf16>'}}
  braid.adamw_update @w, %g, %c moments @m, @v step @t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w zeros : tensor<4xf32>
braid.state @m zeros : tensor<4xf32>
braid.state @v zeros : tensor<8xf32>
braid.state @t zeros : tensor<f32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op the second moment must be an f32 tensor of the parameter's shape, found 'tensor<8xf32>'}}
  braid.adamw_update @w, %g, %c moments @m, @v step @t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w zeros : tensor<4xf32>
braid.state @m zeros : tensor<4xf32>
braid.state @v zeros : tensor<4xf32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op '@t' (step) does not reference a braid.state}}
  braid.adamw_update @w, %g, %c moments @m, @v step @t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w zeros : tensor<4xf32>
braid.state @m zeros : tensor<4xf32>
braid.state @v zeros : tensor<4xf32>
braid.state @t zeros : tensor<1xf32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op step must be a tensor<f32>, found 'tensor<1xf32>'}}
  braid.adamw_update @w, %g, %c moments @m, @v step @t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

// expected-error @+1 {{'braid.gradients' must be an array of symbol references on a func.func}}
func.func @f() attributes {braid.gradients = ["w"]} {
  return
}

// -----

// expected-error @+1 {{'braid.gradients' must be an array of symbol references on a func.func}}
module attributes {braid.gradients = [@w]} {}

// -----

// expected-error @+1 {{'braid.finish' must be a symbol reference on a func.func}}
module attributes {braid.finish = @f} {}

// -----

// expected-error @+1 {{'braid.finish' names @missing, which is not a func.func}}
func.func @step() attributes {braid.finish = @missing} {
  return
}

// -----

// expected-error @+1 {{'braid.finish' names @fin, which must take no arguments and return nothing, not '(tensor<f32>) -> ()'}}
func.func @step() attributes {braid.finish = @fin} {
  return
}
func.func private @fin(%x: tensor<f32>) {
  return
}

// -----

func.func @f(%q: tensor<2x8x4x4xf32>, %k: tensor<2x6x2x4xf32>, %g: tensor<2x8x4x4xf32>) {
  // expected-error @+2 {{'braid.attention_grad' op causal attention needs equal query and key lengths, found 8 and 6}}
  // expected-error @+1 {{'braid.attention_grad' op failed to infer returned types}}
  %dq, %dk, %dv = braid.attention_grad %q, %k, %k, %g causal : tensor<2x8x4x4xf32>, tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>, tensor<2x8x4x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x6x2x4xf32>, tensor<2x6x2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8xf32>, %g: tensor<8xbf16>) {
  // expected-error @+2 {{'braid.rms_norm_grad' op scale element type 'bf16' differs from the input's 'f32'}}
  // expected-error @+1 {{'braid.rms_norm_grad' op failed to infer returned types}}
  %dx, %dg = braid.rms_norm_grad %x, %g, %x : tensor<2x8xf32>, tensor<8xbf16>, tensor<2x8xf32> -> tensor<2x8xf32>, tensor<8xbf16>
  return
}

// -----

func.func @f(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{'braid.layer_norm_grad' op epsilon must be positive and finite, found 0.000000e+00}}
  // expected-error @+1 {{'braid.layer_norm_grad' op failed to infer returned types}}
  %dx, %dg, %db = braid.layer_norm_grad %x, %g, %x {epsilon = 0.0 : f64} : tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x5x3xf32>, %w: tensor<3x0xf32>) {
  // expected-error @+2 {{'braid.conv1d_grad' op weight must be [C, K >= 1] of the input's element type, found 'tensor<3x0xf32>'}}
  // expected-error @+1 {{'braid.conv1d_grad' op failed to infer returned types}}
  %dx, %dw, %db = braid.conv1d_grad %x, %w, %x : tensor<2x5x3xf32>, tensor<3x0xf32>, tensor<2x5x3xf32> -> tensor<2x5x3xf32>, tensor<3x0xf32>, tensor<3xf32>
  return
}

// -----

func.func @f(%l: tensor<6x4xf32>, %i: tensor<6x5xi32>, %g: tensor<6x5xf32>) {
  // expected-error @+2 {{'braid.router_grad' op grad must be [T, k <= E] of the logits' element type, found 'tensor<6x5xf32>'}}
  // expected-error @+1 {{'braid.router_grad' op failed to infer returned types}}
  %d = braid.router_grad %l, %i, %g : tensor<6x4xf32>, tensor<6x5xi32>, tensor<6x5xf32> -> tensor<6x4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'braid.sum_squares' op needs at least one operand}}
  %s = "braid.sum_squares"() : () -> tensor<f32>
  return
}

// -----

func.func @f(%s: tensor<f32>) {
  // expected-error @+1 {{'braid.clip_coefficient' op max_norm must be a number}}
  %c = braid.clip_coefficient %s max_norm 0x7FF8000000000000 : tensor<f32>
  return
}

// -----

braid.param @w normal(0.02) : tensor<4xf32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.sgd_update' op lr must be finite and >= 0, found -1.000000e+00}}
  braid.sgd_update @w, %g, %c {lr = -1.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w normal(0.02) : tensor<4xf32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.sgd_update' op weight_decay must be finite and >= 0, found -1.000000e-01}}
  braid.sgd_update @w, %g, %c {lr = 1.0 : f64, weight_decay = -0.1 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w normal(0.02) : tensor<4xf32>
braid.state @m zeros : tensor<4xf32>
braid.state @v zeros : tensor<4xf32>
braid.state @t zeros : tensor<f32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op beta2 must lie in [0, 1), found 2.000000e+00}}
  braid.adamw_update @w, %g, %c moments @m, @v step @t {beta1 = 0.9 : f64, beta2 = 2.0 : f64, eps = 1.0e-8 : f64, lr = 1.0e-3 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w normal(0.02) : tensor<4xf32>
braid.state @m zeros : tensor<4xf32>
braid.state @v zeros : tensor<4xf32>
braid.state @t zeros : tensor<f32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op eps must be positive, found -1.000000e+00}}
  braid.adamw_update @w, %g, %c moments @m, @v step @t {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = -1.0 : f64, lr = 1.0e-3 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w normal(0.02) : tensor<4xf32>
braid.state @m zeros : tensor<4xf32>
braid.state @t zeros : tensor<f32>
func.func @f(%g: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error @+1 {{'braid.adamw_update' op the two moments must be distinct states, found '@m' twice}}
  braid.adamw_update @w, %g, %c moments @m, @m step @t {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64, lr = 1.0e-3 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>, tensor<f32>
  return
}

// -----

// expected-error @+1 {{'braid.gradients' names @nope, which is not a braid.param}}
func.func @f() attributes {braid.gradients = [@nope]} {
  return
}

// -----

func.func @f(%g: tensor<4x8x8xf32>, %i: tensor<16x2xi32>) {
  // expected-error @+2 {{'braid.dispatch_grad' op 16 tokens do not cut into capacity groups of 3}}
  // expected-error @+1 {{'braid.dispatch_grad' op failed to infer returned types}}
  %0 = braid.dispatch_grad %g, %i group_size 3 : tensor<4x8x8xf32>, tensor<16x2xi32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%e: tensor<4x6x8xf32>, %w: tensor<16x2xf32>, %i: tensor<16x2xi32>, %g: tensor<16x8xf32>) {
  // expected-error @+2 {{'braid.combine_grad' op 6 slots per expert do not divide into 4 groups of 4 tokens}}
  // expected-error @+1 {{'braid.combine_grad' op failed to infer returned types}}
  %0:2 = braid.combine_grad %e, %w, %i, %g group_size 4 : tensor<4x6x8xf32>, tensor<16x2xf32>, tensor<16x2xi32>, tensor<16x8xf32> -> tensor<4x6x8xf32>, tensor<16x2xf32>
  return
}

// -----

braid.param @w normal(0.02) : tensor<8xf32>
func.func @range_alone(%g: tensor<8xf32>, %c: tensor<f32>, %o: index) {
  // expected-error @+1 {{'braid.sgd_update' op takes an offset and a range together}}
  braid.sgd_update @w at %o, %g, %c {lr = 1.0e-2 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>
  return
}

// -----

braid.param @w normal(0.02) : tensor<8xf32>
func.func @range_and_axes(%g: tensor<4xf32>, %c: tensor<f32>, %o: index) {
  // expected-error @+1 {{'braid.sgd_update' op takes zero_axes or an offset and a range, not both}}
  braid.sgd_update @w at %o, %g, %c {lr = 1.0e-2 : f64, weight_decay = 0.0 : f64, range = 4 : i64, zero_axes = ["dp"]} : tensor<4xf32>, tensor<f32>
  return
}

// -----

braid.param @w normal(0.02) : tensor<8xf32>
func.func @read_range(%o: index) {
  // expected-error @+1 {{'braid.get_param_range' op reads 'tensor<16xf32>', not a 1-D range of 'tensor<8xf32>'}}
  %r = braid.get_param_range @w at %o : tensor<16xf32>
  return
}

// -----

braid.param @w normal(0.02) : tensor<2x4xf32>
func.func @write(%x: tensor<4x2xf32>) {
  // expected-error @+1 {{'braid.set_param' op writes 'tensor<4x2xf32>', not all of 'tensor<2x4xf32>'}}
  braid.set_param @w, %x : tensor<4x2xf32>
  return
}

// -----

braid.param @w normal(0.02) : tensor<8xf32>
func.func @write_type(%x: tensor<8xbf16>) {
  // expected-error @+1 {{'braid.set_param' op element type 'bf16' differs from the parameter's 'f32'}}
  braid.set_param @w, %x : tensor<8xbf16>
  return
}

// -----

braid.param @w normal(0.02) : tensor<8xf32>
func.func @range_positive(%g: tensor<8xf32>, %c: tensor<f32>, %o: index) {
  // expected-error @+1 {{'braid.sgd_update' op range must be positive, found 0}}
  braid.sgd_update @w at %o, %g, %c {lr = 1.0e-2 : f64, weight_decay = 0.0 : f64, range = 0 : i64} : tensor<8xf32>, tensor<f32>
  return
}

// -----

// expected-error @+1 {{'braid.zero_axes' must be a non-empty array of grid axis names on a braid.param}}
func.func @zero_axes_place() attributes {braid.zero_axes = ["dp"]} {
  return
}

// -----

func.func @result_layouts_count(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'braid.result_layouts' must hold one dictionary per result, empty or with braid.global_shape, braid.split and optionally braid.partial}}
  %y = braid.gelu %x {braid.result_layouts = [{}, {}]} : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @result_layouts_entries(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'braid.result_layouts' must hold one dictionary per result}}
  %y = braid.gelu %x {braid.result_layouts = [{braid.split = [["dp"], []]}]} : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
