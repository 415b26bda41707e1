// RUN: braid-opt --raise-linalg-to-braid --split-input-file %s | FileCheck %s

// A Megatron MLP as a front end writes it: products into zero-filled
// tensors, a bias broadcast over the rows, ReLU as a max with zero, the
// weights annotated column- and row-parallel over the grid's second axis.
// The annotations stay; an init's annotation (the result's sharding in
// destination-passing style) moves to the raised result; the inits go.
shard.grid @grid(shape = 2x2)
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bias = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x8x16xf32>, %[[W1:[^:]*]]: tensor<16x64xf32>, %[[B1:[^:]*]]: tensor<64xf32>, %[[W2:[^:]*]]: tensor<64x16xf32>
func.func @mlp(%x: tensor<2x8x16xf32>, %w1: tensor<16x64xf32>, %b1: tensor<64xf32>, %w2: tensor<64x16xf32>) -> tensor<2x8x16xf32> {
  // CHECK: %[[COL:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [1]]
  // CHECK: %[[W1S:.*]] = shard.shard %[[W1]] to %[[COL]]
  // CHECK: %[[ROW:.*]] = shard.sharding @grid split_axes = {{\[\[}}1]]
  // CHECK: %[[W2S:.*]] = shard.shard %[[W2]] to %[[ROW]]
  // CHECK: %[[HID:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [], [1]]
  %col = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %w1s = shard.shard %w1 to %col : tensor<16x64xf32>
  %row = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %w2s = shard.shard %w2 to %row : tensor<64x16xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x8x64xf32>
  %hid = shard.sharding @grid split_axes = [[], [], [1]] : !shard.sharding
  %e1s = shard.shard %e1 to %hid : tensor<2x8x64xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1s : tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK-NOT: linalg.
  // CHECK-NOT: tensor.empty
  // CHECK: %[[H:.*]] = braid.linear %[[X]], %[[W1S]] : tensor<2x8x16xf32>, tensor<16x64xf32> -> tensor<2x8x64xf32>
  %h = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                                        affine_map<(d0, d1, d2, d3) -> (d3, d2)>,
                                        affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w1s : tensor<2x8x16xf32>, tensor<16x64xf32>) outs(%z1 : tensor<2x8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x64xf32>
  // CHECK-NEXT: %[[HS:.*]] = shard.shard %[[H]] to %[[HID]] : tensor<2x8x64xf32>
  // CHECK-NEXT: %[[HB:.*]] = braid.bias_add %[[HS]], %[[B1]] : tensor<2x8x64xf32>, tensor<64xf32>
  // CHECK: %[[R:.*]] = braid.relu %[[HB]] : tensor<2x8x64xf32>
  %act = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%h, %b1 : tensor<2x8x64xf32>, tensor<64xf32>) outs(%e1 : tensor<2x8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x8x64xf32>
  // CHECK-NEXT: shard.shard %[[R]] to %[[HID]]
  %acts = shard.shard %act to %hid : tensor<2x8x64xf32>
  %flat = tensor.collapse_shape %acts [[0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  // CHECK: %[[F:.*]] = braid.reshape %{{.*}} : tensor<2x8x64xf32> -> tensor<16x64xf32>
  // CHECK: %[[Y:.*]] = braid.linear %[[F]], %[[W2S]] : tensor<16x64xf32>, tensor<64x16xf32> -> tensor<16x16xf32>
  %y = linalg.matmul ins(%flat, %w2s : tensor<16x64xf32>, tensor<64x16xf32>) outs(%z2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  // CHECK: %[[Y3:.*]] = braid.reshape %[[Y]] : tensor<16x16xf32> -> tensor<2x8x16xf32>
  %y3 = tensor.expand_shape %y [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
  // CHECK: %[[OUT:.*]] = braid.add %[[X]], %[[Y3]] : tensor<2x8x16xf32>
  %out = linalg.add ins(%x, %y3 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%x : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // CHECK: return %[[OUT]]
  return %out : tensor<2x8x16xf32>
}

// -----

// SwiGLU, sigmoid, SiLU and subtraction from their arithmetic; named
// elementwise ops; a transposed weight (an LM head tied to the embedding).
#id2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @activations
// CHECK-SAME: %[[G:[^:]*]]: tensor<4x8xf32>, %[[U:[^:]*]]: tensor<4x8xf32>
func.func @activations(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  // CHECK: %[[GLU:.*]] = braid.glu silu %[[G]], %[[U]] : tensor<4x8xf32>
  %swiglu = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%g, %u : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %n = arith.negf %a : f32
    %x = math.exp %n : f32
    %d = arith.addf %x, %one : f32
    %s = arith.divf %a, %d : f32
    %r = arith.mulf %s, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  // CHECK: %[[SIG:.*]] = braid.sigmoid %[[G]] : tensor<4x8xf32>
  %sig = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %n = arith.negf %a : f32
    %x = math.exp %n : f32
    %d = arith.addf %one, %x : f32
    %s = arith.divf %one, %d : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  // CHECK: %[[SILU:.*]] = braid.silu %[[U]] : tensor<4x8xf32>
  %silu = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%u : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %n = arith.negf %a : f32
    %x = math.exp %n : f32
    %d = arith.addf %one, %x : f32
    %s = arith.divf %one, %d : f32
    %m = arith.mulf %a, %s : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  // CHECK: %[[NEG:.*]] = braid.neg %[[U]] : tensor<4x8xf32>
  // CHECK: %[[SUB:.*]] = braid.add %[[G]], %[[NEG]] : tensor<4x8xf32>
  %sub = linalg.sub ins(%g, %u : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[EXP:.*]] = braid.exp %[[G]] : tensor<4x8xf32>
  // CHECK: %[[MUL:.*]] = braid.mul %[[EXP]], %[[U]] : tensor<4x8xf32>
  %exp = linalg.exp ins(%g : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mul = linalg.mul ins(%exp, %u : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: return %[[GLU]], %[[SIG]], %[[SILU]], %[[SUB]], %[[MUL]]
  return %swiglu, %sig, %silu, %sub, %mul : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// GELU's exact form as PyTorch lowers it, 0.5 x (1 + erf(x / sqrt 2)), in
// two orders of its factors.
#id3 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>
func.func @gelu(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %inv_sqrt2 = arith.constant 0.707106769 : f32
  %sqrt2 = arith.constant 1.41421354 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  // CHECK: %[[G1:.*]] = braid.gelu %[[X]] : tensor<4x8xf32>
  %g1 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %s = arith.mulf %a, %inv_sqrt2 : f32
    %r = math.erf %s : f32
    %p = arith.addf %r, %one : f32
    %h = arith.mulf %a, %half : f32
    %y = arith.mulf %h, %p : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  // CHECK: %[[G2:.*]] = braid.gelu %[[X]] : tensor<4x8xf32>
  %g2 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %s = arith.divf %a, %sqrt2 : f32
    %r = math.erf %s : f32
    %p = arith.addf %one, %r : f32
    %y0 = arith.mulf %p, %a : f32
    %y = arith.mulf %half, %y0 : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  // CHECK: return %[[G1]], %[[G2]]
  return %g1, %g2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Batched products (attention's scores and values) and transposes; bf16.
// CHECK-LABEL: func.func @products
// CHECK-SAME: %[[Q:[^:]*]]: tensor<4x16x8xbf16>, %[[K:[^:]*]]: tensor<4x16x8xbf16>, %[[H:[^:]*]]: tensor<16x8xbf16>, %[[E:[^:]*]]: tensor<32x8xbf16>
func.func @products(%q: tensor<4x16x8xbf16>, %k: tensor<4x16x8xbf16>, %h: tensor<16x8xbf16>, %emb: tensor<32x8xbf16>) -> (tensor<4x16x16xbf16>, tensor<4x8x16xbf16>, tensor<16x32xbf16>) {
  %zero = arith.constant dense<0.0> : tensor<4x16x16xbf16>
  // CHECK: %[[S:.*]] = braid.batch_matmul %[[Q]], %[[K]] transpose_b : tensor<4x16x8xbf16>, tensor<4x16x8xbf16> -> tensor<4x16x16xbf16>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                                            affine_map<(b, m, n, k) -> (b, n, k)>,
                                            affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%q, %k : tensor<4x16x8xbf16>, tensor<4x16x8xbf16>) outs(%zero : tensor<4x16x16xbf16>) -> tensor<4x16x16xbf16>
  // CHECK: %[[T:.*]] = braid.transpose %[[Q]] [0, 2, 1] : tensor<4x16x8xbf16> -> tensor<4x8x16xbf16>
  %e = tensor.empty() : tensor<4x8x16xbf16>
  %t = linalg.transpose ins(%q : tensor<4x16x8xbf16>) outs(%e : tensor<4x8x16xbf16>) permutation = [0, 2, 1]
  %z = arith.constant 0.0 : bf16
  %el = tensor.empty() : tensor<16x32xbf16>
  %zl = linalg.fill ins(%z : bf16) outs(%el : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  // CHECK: %[[L:.*]] = braid.linear %[[H]], %[[E]] transpose_weight : tensor<16x8xbf16>, tensor<32x8xbf16> -> tensor<16x32xbf16>
  %l = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%h, %emb : tensor<16x8xbf16>, tensor<32x8xbf16>) outs(%zl : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  // CHECK: return %[[S]], %[[T]], %[[L]]
  return %s, %t, %l : tensor<4x16x16xbf16>, tensor<4x8x16xbf16>, tensor<16x32xbf16>
}

// -----

// Softmax over the last dimension is braid.softmax; over another, the
// dimension is swapped with the last around it. The init's annotation moves
// to the raised result.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xf32>)
// CHECK: %[[LAST:.*]] = braid.softmax %[[X]] : tensor<2x8x16xf32>
// CHECK: %[[T:.*]] = braid.transpose %[[X]] [0, 2, 1] : tensor<2x8x16xf32> -> tensor<2x16x8xf32>
// CHECK: %[[S:.*]] = braid.softmax %[[T]] : tensor<2x16x8xf32>
// CHECK: %[[MID:.*]] = braid.transpose %[[S]] [0, 2, 1] : tensor<2x16x8xf32> -> tensor<2x8x16xf32>
// CHECK: %[[SH:.*]] = shard.shard %[[MID]] to
// CHECK-NOT: linalg.
// CHECK: return %[[LAST]], %[[SH]]
shard.grid @g(shape = 2)
func.func @softmax(%x: tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %e = tensor.empty() : tensor<2x8x16xf32>
  %last = linalg.softmax dimension(2) ins(%x : tensor<2x8x16xf32>) outs(%e : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %e2 = tensor.empty() : tensor<2x8x16xf32>
  %sharding = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %init = shard.shard %e2 to %sharding : tensor<2x8x16xf32>
  %mid = linalg.softmax dimension(1) ins(%x : tensor<2x8x16xf32>) outs(%init : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %last, %mid : tensor<2x8x16xf32>, tensor<2x8x16xf32>
}

// -----

// A module of braid ops passes through unchanged.
// CHECK-LABEL: func.func @braid_only
// CHECK-NEXT: braid.gelu
// CHECK-NEXT: return
func.func @braid_only(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %y = braid.gelu %x : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
