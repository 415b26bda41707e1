// RUN: braid-opt %s --braid-model-stats=entry=train -o /dev/null | FileCheck %s
// RUN: braid-opt %s --braid-model-stats -o /dev/null -verify-diagnostics

// The entry option selects the step function by name.
// CHECK: parameters: 80
// CHECK: tokens_per_step: 3
// expected-error @+1 {{no step function '@step' with a body in this module}}
module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  func.func @train(%tok: tensor<3xi32>) -> tensor<3x8xf32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h = braid.embedding %tok, %wte : tensor<3xi32>, tensor<10x8xf32> -> tensor<3x8xf32>
    return %h : tensor<3x8xf32>
  }
}
