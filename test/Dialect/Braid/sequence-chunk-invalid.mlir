// RUN: braid-opt %s -split-input-file -verify-diagnostics

func.func @halo(%x: tensor<2x8x16xf32>, %h: tensor<2x2x16xf32>, %w: tensor<16x4xf32>) {
  // expected-error @+1 {{'braid.conv1d_halo' op halo must be 'tensor<2x3x16xf32>', found 'tensor<2x2x16xf32>'}}
  %y = braid.conv1d_halo %x, %h, %w : (tensor<2x8x16xf32>, tensor<2x2x16xf32>, tensor<16x4xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @short(%x: tensor<2x2x16xf32>, %h: tensor<2x3x16xf32>, %w: tensor<16x4xf32>) {
  // expected-error @+1 {{'braid.conv1d_halo' op a chunk of 2 rows is shorter than the convolution's 3-row halo}}
  %y = braid.conv1d_halo %x, %h, %w : (tensor<2x2x16xf32>, tensor<2x3x16xf32>, tensor<16x4xf32>) -> tensor<2x2x16xf32>
  return
}

// -----

func.func @dhalo(%x: tensor<2x8x16xf32>, %h: tensor<2x3x16xf32>, %w: tensor<16x4xf32>) {
  // expected-error @+1 {{'braid.conv1d_halo_grad' op dbias must be 'tensor<16xf32>', found 'tensor<4xf32>'}}
  %a, %b, %c, %d = braid.conv1d_halo_grad %x, %h, %w, %x : (tensor<2x8x16xf32>, tensor<2x3x16xf32>, tensor<16x4xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<4xf32>, tensor<2x3x16xf32>)
  return
}

// -----

func.func @tail(%x: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'braid.tail' op the tail 'tensor<2x9x16xf32>' must be the last rows of the chunk 'tensor<2x8x16xf32>'}}
  %t = braid.tail %x : tensor<2x8x16xf32> -> tensor<2x9x16xf32>
  return
}

// -----

func.func @add_tail(%x: tensor<2x8x16xf32>, %t: tensor<2x3x8xf32>) {
  // expected-error @+1 {{'braid.add_tail' op the tail 'tensor<2x3x8xf32>' must be the last rows of the chunk 'tensor<2x8x16xf32>'}}
  %y = braid.add_tail %x, %t : tensor<2x8x16xf32>, tensor<2x3x8xf32>
  return
}

// -----

func.func @scan_d(%x: tensor<2x8x16xf32>, %a: tensor<16x4xf32>, %b: tensor<2x8x4xf32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{'braid.scan_chunk_state' op D must be 'tensor<16xf32>', found 'tensor<8xf32>'}}
  %h, %k = braid.scan_chunk_state %x, %x, %a, %b, %b, %d : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<8xf32>) -> (tensor<2x16x4xf32>, tensor<2x16x4xf32>)
  return
}

// -----

func.func @scan_state(%x: tensor<2x8x16xf32>, %a: tensor<16x4xf32>, %b: tensor<2x8x4xf32>, %d: tensor<16xf32>, %h0: tensor<2x4x16xf32>) {
  // expected-error @+1 {{'braid.scan_chunk' op h0 must be 'tensor<2x16x4xf32>', found 'tensor<2x4x16xf32>'}}
  %y = braid.scan_chunk %x, %x, %a, %b, %b, %d from %h0 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32>, tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @carry(%all: tensor<3x16x4xf32>, %c: index) {
  // expected-error @+1 {{'braid.scan_carry' op decay_all must be every chunk's 'tensor<2x16x4xf32>' stacked along dimension 0, found 'tensor<3x16x4xf32>'}}
  %h0 = braid.scan_carry %all, %all chunk %c : tensor<3x16x4xf32> -> tensor<2x16x4xf32>
  return
}

// -----

func.func @accumulators(%x: tensor<2x8x16xf32>, %a: tensor<16x4xf32>, %b: tensor<2x8x4xf32>, %d: tensor<16xf32>, %s: tensor<2x16x4xf32>) {
  // expected-error @+1 {{'braid.scan_chunk_state_grad' op accumulator #2 must be 'tensor<16x4xf32>', found 'tensor<16xf32>'}}
  %r:6 = braid.scan_chunk_state_grad %x, %x, %a, %b, %b, %d, %s, %s into %x, %x, %d, %b, %b, %d : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<16xf32>)
  return
}
