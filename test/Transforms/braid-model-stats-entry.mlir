// RUN: braid-opt %s -split-input-file -verify-diagnostics --braid-model-stats -o /dev/null | FileCheck %s

// The program is the function marked braid.entry, whatever its name and
// whatever other public functions the module holds.
// CHECK: parameters: 80
// CHECK: tokens_per_step: 3
module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  func.func @helper() {
    return
  }
  func.func @train(%tok: tensor<3xi32>) -> tensor<3x8xf32> attributes {braid.entry = "train_step"} {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h = braid.embedding %tok, %wte : tensor<3xi32>, tensor<10x8xf32> -> tensor<3x8xf32>
    return %h : tensor<3x8xf32>
  }
}

// -----

// A module that marks nothing (written by hand) has one implicit training
// step: its only public function with a body.
// CHECK: parameters: 80
// CHECK: tokens_per_step: 5
module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  func.func private @helper() {
    return
  }
  func.func @train(%tok: tensor<5xi32>) -> tensor<5x8xf32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h = braid.embedding %tok, %wte : tensor<5xi32>, tensor<10x8xf32> -> tensor<5x8xf32>
    return %h : tensor<5x8xf32>
  }
}

// -----

// Two public functions and no mark: the program is not guessed.
// expected-error @+1 {{--braid-model-stats: no entry point (a public func.func with a body marked braid.entry = "train_step")}}
module {
  func.func @a() {
    return
  }
  func.func @b() {
    return
  }
}

// -----

// expected-error @+1 {{--braid-model-stats: 2 entry points, expected one}}
module {
  // expected-note @+1 {{@a}}
  func.func @a() attributes {braid.entry = "train_step"} {
    return
  }
  // expected-note @+1 {{@b}}
  func.func @b() attributes {braid.entry = "forward"} {
    return
  }
}
