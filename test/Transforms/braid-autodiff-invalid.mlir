// RUN: braid-opt %s --split-input-file --braid-autodiff -verify-diagnostics
// RUN: not braid-opt %s --split-input-file --braid-autodiff=recompute=some 2>&1 | FileCheck %s --check-prefix=OPTION

// OPTION: for the --recompute option: expected none, selective or full, found 'some'

// A forward entry point is not differentiated.
// expected-error @+1 {{--braid-autodiff: no train_step entry point (a public func.func with a body marked braid.entry = "train_step")}}
module {
  func.func @forward() attributes {braid.entry = "forward"} {
    return
  }
}

// -----

module {
  // expected-error @+1 {{autodiff needs a step function returning the scalar loss (one tensor<f32>)}}
  func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{autodiff needs a step function of one block}}
  func.func @step(%x: tensor<f32>) -> tensor<f32> {
    cf.br ^next
  ^next:
    return %x : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{autodiff needs layer functions of one block}}
  func.func private @layer(tensor<4xf32>) -> tensor<4xf32>
  func.func @step(%x: tensor<4xf32>, %l: tensor<1x4xf32>, %t: tensor<1xi32>) -> tensor<f32> {
    %y = func.call @layer(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %loss = braid.cross_entropy %l, %t : tensor<1x4xf32>, tensor<1xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module {
  func.func private @inner(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = braid.neg %x : tensor<4xf32>
    return %y : tensor<4xf32>
  }
  func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{autodiff does not differentiate calls inside layer functions yet}}
    %y = func.call @inner(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
  func.func @step(%x: tensor<4xf32>, %l: tensor<1x4xf32>, %t: tensor<1xi32>) -> tensor<f32> {
    %y = func.call @layer(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %loss = braid.cross_entropy %l, %t : tensor<1x4xf32>, tensor<1xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module {
  func.func @step(%x: tensor<4x6x8xf32>, %u: tensor<4x8x16xf32>, %d: tensor<4x16x8xf32>, %t: tensor<4x6xi32>) -> tensor<f32> {
    // expected-error @+1 {{autodiff needs expert FFNs expanded first (--braid-expand-expert-ffn)}}
    %y = braid.expert_ffn silu %x, %u, %d : tensor<4x6x8xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32> -> tensor<4x6x8xf32>
    %loss = braid.cross_entropy %y, %t : tensor<4x6x8xf32>, tensor<4x6xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module {
  func.func @step(%x: tensor<4xf32>) -> tensor<f32> {
    // expected-error @+1 {{no vector-Jacobian product for 'braid.sum_squares'}}
    %s = braid.sum_squares %x : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
