// RUN: braid-opt %s --split-input-file --braid-model-stats -verify-diagnostics -o /dev/null

// expected-error @+1 {{--braid-model-stats: no entry point}}
module {
  func.func private @forward() {
    return
  }
}

// -----

module {
  func.func private @layer(tensor<4xf32>) -> tensor<4xf32>
  func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{cannot analyse a call to '@layer', which has no body in this module}}
    %0 = func.call @layer(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{recursive call to 'layer' cannot be analysed}}
  func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = func.call @layer(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = func.call @layer(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{the step function has no braid.embedding, so the number of tokens per step is unknown}}
  func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
