// RUN: braid-opt %s -split-input-file -verify-diagnostics

func.func @conv_chunk_tiles(%f: index, %s: tensor<2x3x8xf32>, %x: tensor<2x5x8xf32>, %w: tensor<8x4xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{'braid.conv_step_chunk' op a chunk of 5 rows does not tile a prompt of 16}}
  %y, %c = braid.conv_step_chunk %s, %s, %x, %w, %p last %p at %f of 16 : tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<8x4xf32>, tensor<2xi32>
  return
}

// -----

func.func @conv_state(%f: index, %s: tensor<2x2x8xf32>, %x: tensor<2x8x8xf32>, %w: tensor<8x4xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{'braid.conv_step_chunk' op state must be 'tensor<2x3x8xf32>', found 'tensor<2x2x8xf32>'}}
  %y, %c = braid.conv_step_chunk %s, %s, %x, %w, %p last %p at %f of 16 : tensor<2x2x8xf32>, tensor<2x8x8xf32>, tensor<8x4xf32>, tensor<2xi32>
  return
}

// -----

func.func @conv_positions(%f: index, %s: tensor<2x3x8xf32>, %x: tensor<2x8x8xf32>, %w: tensor<8x4xf32>, %p: tensor<3xi32>) {
  // expected-error @+1 {{'braid.conv_step_chunk' op positions and last_rows must be [2] (one per sequence), found 'tensor<3xi32>'}}
  %y, %c = braid.conv_step_chunk %s, %s, %x, %w, %p last %p at %f of 16 : tensor<2x3x8xf32>, tensor<2x8x8xf32>, tensor<8x4xf32>, tensor<3xi32>
  return
}

// -----

func.func @scan_gathered(%f: index, %h: tensor<2x8x4xf32>, %all: tensor<2x8x4xf32>, %x: tensor<2x8x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x8x4xf32>, %D: tensor<8xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{'braid.scan_step_chunk' op decay_all must be 'tensor<4x8x4xf32>', found 'tensor<2x8x4xf32>'}}
  %y, %s = braid.scan_step_chunk %h, %all, %all, %x, %x, %A, %B, %B, %D, %p last %p at %f of 16 : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<8xf32>, tensor<2xi32>
  return
}

// -----

func.func @scan_B(%f: index, %h: tensor<2x8x4xf32>, %all: tensor<4x8x4xf32>, %x: tensor<2x8x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x8x3xf32>, %D: tensor<8xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{'braid.scan_step_chunk' op B must be 'tensor<2x8x4xf32>', found 'tensor<2x8x3xf32>'}}
  %y, %s = braid.scan_step_chunk %h, %all, %all, %x, %x, %A, %B, %B, %D, %p last %p at %f of 16 : tensor<2x8x4xf32>, tensor<4x8x4xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<8x4xf32>, tensor<2x8x3xf32>, tensor<2x8x3xf32>, tensor<8xf32>, tensor<2xi32>
  return
}

// -----

func.func @take_stack(%s: tensor<2x3x8xf32>, %all: tensor<4x3x4xf32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'braid.take_chunk_state' op chunk_states 'tensor<4x3x4xf32>' must stack whole states 'tensor<2x3x8xf32>' along dimension 0}}
  %n = braid.take_chunk_state %s, %all, %l of 8 : tensor<2x3x8xf32>, tensor<4x3x4xf32>, tensor<2xi32>
  return
}

// -----

func.func @take_rows(%s: tensor<2x3x8xf32>, %all: tensor<4x3x8xf32>, %l: tensor<2xi32>) {
  // expected-error @+1 {{'braid.take_chunk_state' op chunk_rows must be positive, found 0}}
  %n = braid.take_chunk_state %s, %all, %l of 0 : tensor<2x3x8xf32>, tensor<4x3x8xf32>, tensor<2xi32>
  return
}
