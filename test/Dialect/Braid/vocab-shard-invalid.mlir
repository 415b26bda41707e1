// RUN: braid-opt %s -split-input-file -verify-diagnostics

func.func @lookup(%t: tensor<2x4xi32>, %e: tensor<8x16xf32>, %o: index) {
  // expected-error @+1 {{'braid.embedding_shard' op result must be 'tensor<2x4x16xf32>', found 'tensor<2x4x8xf32>'}}
  %y = braid.embedding_shard %t, %e at %o : tensor<2x4xi32>, tensor<8x16xf32> -> tensor<2x4x8xf32>
  return
}

// -----

func.func @scatter(%t: tensor<2x4xi32>, %g: tensor<2x4x8xf32>, %o: index) {
  // expected-error @+1 {{'braid.embedding_grad_shard' op grad must be 'tensor<2x4x16xf32>', found 'tensor<2x4x8xf32>'}}
  %y = braid.embedding_grad_shard %t, %g at %o : tensor<2x4xi32>, tensor<2x4x8xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @labels(%l: tensor<2x4x8xf32>, %y: tensor<2x8xi32>, %m: tensor<2x4xf32>, %o: index) {
  // expected-error @+1 {{'braid.cross_entropy_stats' op labels 'tensor<2x8xi32>' must have one entry per row of the logits 'tensor<2x4x8xf32>'}}
  %s = braid.cross_entropy_stats %l, %y, %m at %o valid 8 : tensor<2x4x8xf32>, tensor<2x8xi32>, tensor<2x4xf32> -> tensor<2x8x2xf32>
  return
}

// -----

func.func @stats(%m: tensor<2x4xf32>, %s: tensor<2x4xf32>) {
  // expected-error @+1 {{'braid.cross_entropy_from_stats' op stats must be 'tensor<2x4x2xf32>', found 'tensor<2x4xf32>'}}
  %loss = braid.cross_entropy_from_stats %m, %s denominator 8 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
  return
}

// -----

func.func @denominator(%m: tensor<2x4xf32>, %s: tensor<2x4x2xf32>) {
  // expected-error @+1 {{'braid.cross_entropy_from_stats' op denominator must be positive, found 0}}
  %loss = braid.cross_entropy_from_stats %m, %s denominator 0 : tensor<2x4xf32>, tensor<2x4x2xf32> -> tensor<f32>
  return
}

// -----

func.func @row_max(%l: tensor<2x4x8xf32>, %o: index) {
  // expected-error @+1 {{'braid.cross_entropy_row_max' op result must be 'tensor<2x4xf32>', found 'tensor<2x4x8xf32>'}}
  %m = braid.cross_entropy_row_max %l at %o valid 8 : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return
}
