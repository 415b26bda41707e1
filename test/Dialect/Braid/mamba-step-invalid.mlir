// RUN: braid-opt -split-input-file -verify-diagnostics %s

func.func @conv_state_read_twice(%cs: tensor<2x3x8xf32>, %x: tensor<2x1x8xf32>, %w: tensor<8x4xf32>, %pos: tensor<2xi32>) -> tensor<2x3x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op updates its state in place, so the state operand must have no other use}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos : tensor<2x3x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2xi32>
  %s = braid.add %cs1, %cs : tensor<2x3x8xf32>
  return %s : tensor<2x3x8xf32>
}

// -----

func.func @conv_state_rows(%cs: tensor<2x4x8xf32>, %x: tensor<2x1x8xf32>, %w: tensor<8x4xf32>, %pos: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op state 'tensor<2x4x8xf32>' must hold the 3 inputs before each sequence's rows: [2, 3, 8]}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos : tensor<2x4x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @conv_weight(%cs: tensor<2x3x8xf32>, %x: tensor<2x1x8xf32>, %w: tensor<6x4xf32>, %pos: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op weight 'tensor<6x4xf32>' must be [8, K]}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos : tensor<2x3x8xf32>, tensor<2x1x8xf32>, tensor<6x4xf32>, tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @conv_bias(%cs: tensor<2x3x8xf32>, %x: tensor<2x1x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>, %pos: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op bias 'tensor<4xf32>' must be [8]}}
  %y, %cs1 = braid.conv_step %cs, %x, %w bias %b, %pos : tensor<2x3x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32> bias tensor<4xf32>, tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @conv_rank(%cs: tensor<2x3x8xf32>, %x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %pos: tensor<2xi32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op input must be [B, S, C], found 'tensor<2x8xf32>'}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos : tensor<2x3x8xf32>, tensor<2x8xf32>, tensor<8x4xf32>, tensor<2xi32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @conv_element_types(%cs: tensor<2x3x8xf32>, %x: tensor<2x1x8xbf16>, %w: tensor<8x4xbf16>, %pos: tensor<2xi32>) -> tensor<2x1x8xbf16> {
  // expected-error @+1 {{'braid.conv_step' op operands must share one element type, found 'f32' and 'bf16'}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos : tensor<2x3x8xf32>, tensor<2x1x8xbf16>, tensor<8x4xbf16>, tensor<2xi32>
  return %y : tensor<2x1x8xbf16>
}

// -----

func.func @conv_last_rows(%cs: tensor<2x3x8xf32>, %x: tensor<2x5x8xf32>, %w: tensor<8x4xf32>, %pos: tensor<2xi32>, %last: tensor<3xi32>) -> tensor<2x5x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op last_rows must be [2] (one per sequence), found 'tensor<3xi32>'}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos last %last : tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<8x4xf32>, tensor<2xi32>, tensor<3xi32>
  return %y : tensor<2x5x8xf32>
}

// -----

func.func @conv_positions(%cs: tensor<2x3x8xf32>, %x: tensor<2x1x8xf32>, %w: tensor<8x4xf32>, %pos: tensor<1xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op positions must be [2] (one per sequence), found 'tensor<1xi32>'}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos : tensor<2x3x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<1xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @scan_state_read_twice(%h: tensor<2x8x4xf32>, %x: tensor<2x1x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x1x4xf32>, %D: tensor<8xf32>, %pos: tensor<2xi32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'braid.scan_step' op updates its state in place, so the state operand must have no other use}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %B, %D, %pos : tensor<2x8x4xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<8xf32>, tensor<2xi32>
  %s = braid.add %h1, %h : tensor<2x8x4xf32>
  return %s : tensor<2x8x4xf32>
}

// -----

func.func @scan_state_shape(%h: tensor<2x8x5xf32>, %x: tensor<2x1x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x1x4xf32>, %D: tensor<8xf32>, %pos: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.scan_step' op state 'tensor<2x8x5xf32>' must be [2, 8, 4]}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %B, %D, %pos : tensor<2x8x5xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<8xf32>, tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @scan_state_f32(%h: tensor<2x8x4xbf16>, %x: tensor<2x1x8xbf16>, %A: tensor<8x4xbf16>, %B: tensor<2x1x4xbf16>, %D: tensor<8xbf16>, %pos: tensor<2xi32>) -> tensor<2x1x8xbf16> {
  // expected-error @+1 {{'braid.scan_step' op operand #0 must be statically shaped tensor of 32-bit float values, but got 'tensor<2x8x4xbf16>'}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %B, %D, %pos : tensor<2x8x4xbf16>, tensor<2x1x8xbf16>, tensor<2x1x8xbf16>, tensor<8x4xbf16>, tensor<2x1x4xbf16>, tensor<2x1x4xbf16>, tensor<8xbf16>, tensor<2xi32>
  return %y : tensor<2x1x8xbf16>
}

// -----

func.func @scan_delta(%h: tensor<2x8x4xf32>, %x: tensor<2x1x8xf32>, %dt: tensor<2x2x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x1x4xf32>, %D: tensor<8xf32>, %pos: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.scan_step' op delta 'tensor<2x2x8xf32>' must have the input's shape 'tensor<2x1x8xf32>'}}
  %y, %h1 = braid.scan_step %h, %x, %dt, %A, %B, %B, %D, %pos : tensor<2x8x4xf32>, tensor<2x1x8xf32>, tensor<2x2x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<8xf32>, tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @scan_A(%h: tensor<2x8x4xf32>, %x: tensor<2x1x8xf32>, %A: tensor<6x4xf32>, %B: tensor<2x1x4xf32>, %D: tensor<8xf32>, %pos: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.scan_step' op A 'tensor<6x4xf32>' must be [8, N]}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %B, %D, %pos : tensor<2x8x4xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<6x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<8xf32>, tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @scan_BC(%h: tensor<2x8x4xf32>, %x: tensor<2x1x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x1x4xf32>, %C: tensor<2x1x3xf32>, %D: tensor<8xf32>, %pos: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.scan_step' op B 'tensor<2x1x4xf32>' and C 'tensor<2x1x3xf32>' must be [2, 1, 4]}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %C, %D, %pos : tensor<2x8x4xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>, tensor<2x1x3xf32>, tensor<8xf32>, tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @scan_D(%h: tensor<2x8x4xf32>, %x: tensor<2x1x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x1x4xf32>, %D: tensor<4xf32>, %pos: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.scan_step' op D 'tensor<4xf32>' must be [8]}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %B, %D, %pos : tensor<2x8x4xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<4xf32>, tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @scan_last_rows(%h: tensor<2x8x4xf32>, %x: tensor<2x3x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x3x4xf32>, %D: tensor<8xf32>, %pos: tensor<2xi32>, %last: tensor<2x1xi32>) -> tensor<2x3x8xf32> {
  // expected-error @+1 {{'braid.scan_step' op last_rows must be [2] (one per sequence), found 'tensor<2x1xi32>'}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %B, %D, %pos last %last : tensor<2x8x4xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<8xf32>, tensor<2xi32>, tensor<2x1xi32>
  return %y : tensor<2x3x8xf32>
}

// -----

func.func @conv_state_not_batch(%cs: tensor<4x3x8xf32>, %x: tensor<2x1x8xf32>, %w: tensor<8x4xf32>, %pos: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op state 'tensor<4x3x8xf32>' must hold the 3 inputs before each sequence's rows: [2, 3, 8]}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos : tensor<4x3x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @conv_slots_state_rows(%cs: tensor<4x2x8xf32>, %x: tensor<2x1x8xf32>, %w: tensor<8x4xf32>, %pos: tensor<2xi32>, %slots: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op state 'tensor<4x2x8xf32>' must hold the 3 inputs before each sequence's rows: [slots, 3, 8]}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos slots %slots : tensor<4x2x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2xi32> slots tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @conv_slots_length(%cs: tensor<4x3x8xf32>, %x: tensor<2x1x8xf32>, %w: tensor<8x4xf32>, %pos: tensor<2xi32>, %slots: tensor<4xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op slots must be [2] (one per sequence), found 'tensor<4xi32>'}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos slots %slots : tensor<4x3x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2xi32> slots tensor<4xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @conv_slots_rank(%cs: tensor<4x3x8xf32>, %x: tensor<2x1x8xf32>, %w: tensor<8x4xf32>, %pos: tensor<2xi32>, %last: tensor<2xi32>, %slots: tensor<2x1xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op slots must be [2] (one per sequence), found 'tensor<2x1xi32>'}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos last %last slots %slots : tensor<4x3x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2xi32>, tensor<2xi32> slots tensor<2x1xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @conv_slots_i64(%cs: tensor<4x3x8xf32>, %x: tensor<2x1x8xf32>, %w: tensor<8x4xf32>, %pos: tensor<2xi32>, %slots: tensor<2xi64>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.conv_step' op operand #4 must be statically shaped tensor of 32-bit signless integer values, but got 'tensor<2xi64>'}}
  %y, %cs1 = braid.conv_step %cs, %x, %w, %pos slots %slots : tensor<4x3x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2xi32> slots tensor<2xi64>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @scan_state_not_batch(%h: tensor<3x8x4xf32>, %x: tensor<2x1x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x1x4xf32>, %D: tensor<8xf32>, %pos: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.scan_step' op state 'tensor<3x8x4xf32>' must be [2, 8, 4]}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %B, %D, %pos : tensor<3x8x4xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<8xf32>, tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @scan_slots_state_shape(%h: tensor<6x8x5xf32>, %x: tensor<2x1x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x1x4xf32>, %D: tensor<8xf32>, %pos: tensor<2xi32>, %slots: tensor<2xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.scan_step' op state 'tensor<6x8x5xf32>' must be [slots, 8, 4]}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %B, %D, %pos slots %slots : tensor<6x8x5xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<8xf32>, tensor<2xi32> slots tensor<2xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @scan_slots_length(%h: tensor<6x8x4xf32>, %x: tensor<2x1x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x1x4xf32>, %D: tensor<8xf32>, %pos: tensor<2xi32>, %last: tensor<2xi32>, %slots: tensor<1xi32>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.scan_step' op slots must be [2] (one per sequence), found 'tensor<1xi32>'}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %B, %D, %pos last %last slots %slots : tensor<6x8x4xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<8xf32>, tensor<2xi32>, tensor<2xi32> slots tensor<1xi32>
  return %y : tensor<2x1x8xf32>
}

// -----

func.func @scan_slots_i64(%h: tensor<6x8x4xf32>, %x: tensor<2x1x8xf32>, %A: tensor<8x4xf32>, %B: tensor<2x1x4xf32>, %D: tensor<8xf32>, %pos: tensor<2xi32>, %slots: tensor<2xi64>) -> tensor<2x1x8xf32> {
  // expected-error @+1 {{'braid.scan_step' op operand #8 must be statically shaped tensor of 32-bit signless integer values, but got 'tensor<2xi64>'}}
  %y, %h1 = braid.scan_step %h, %x, %x, %A, %B, %B, %D, %pos slots %slots : tensor<6x8x4xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<8xf32>, tensor<2xi32> slots tensor<2xi64>
  return %y : tensor<2x1x8xf32>
}
