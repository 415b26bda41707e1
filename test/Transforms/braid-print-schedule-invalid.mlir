// RUN: braid-opt %s --split-input-file --braid-print-schedule="pp=2" -verify-diagnostics -o /dev/null

// A step function without layer calls has nothing to split into stages.
module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  // expected-error @+1 {{the step function '@step' calls no layer function, so it has no layers to split into pipeline stages}}
  func.func @step(%tokens: tensor<2x4xi32>) -> tensor<2x4x8xf32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h = braid.embedding %tokens, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32>
    return %h : tensor<2x4x8xf32>
  }
}

// -----

// expected-error @+1 {{--braid-print-schedule: no train_step entry point}}
module {
  func.func @forward() attributes {braid.entry = "forward"} {
    return
  }
}
