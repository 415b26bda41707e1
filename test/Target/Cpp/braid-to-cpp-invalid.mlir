// RUN: braid-translate --braid-to-cpp %s -split-input-file -verify-diagnostics -o /dev/null

// expected-error @+1 {{no program to emit: no entry point (a public func.func with a body marked braid.entry)}}
module {
  func.func private @forward() {
    return
  }
}

// -----

module {
  // expected-error @+1 {{the step function must return one tensor<f32> (the loss), found '(tensor<4xf32>) -> tensor<4xf32>'}}
  func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{step argument #0 must be a static tensor, found 'i32'}}
  func.func @step(%x: i32, %l: tensor<2x4x10xf32>, %t: tensor<2x4xi32>) -> tensor<f32> {
    %loss = braid.cross_entropy %l, %t : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module {
  func.func private @layer(tensor<f32>) -> tensor<f32>
  func.func @step(%x: tensor<f32>) -> tensor<f32> {
    // expected-error @+1 {{cannot plan a call to '@layer', which has no body in this module}}
    %0 = func.call @layer(%x) : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{recursive call to 'layer' cannot be planned}}
  func.func private @layer(%x: tensor<f32>) -> tensor<f32> {
    %0 = func.call @layer(%x) : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @step(%x: tensor<f32>) -> tensor<f32> {
    %0 = func.call @layer(%x) : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{the memory plan needs a function of one block}}
  func.func @step(%x: tensor<f32>) -> tensor<f32> {
    cf.br ^next
  ^next:
    return %x : tensor<f32>
  }
}

// -----

module {
  func.func @step(%x: tensor<f32>) -> tensor<f32> {
    // expected-error @+1 {{ops with regions are not supported by the memory plan}}
    %0 = scf.execute_region -> tensor<f32> {
      scf.yield %x : tensor<f32>
    }
    return %0 : tensor<f32>
  }
}

// -----

module {
  func.func @step(%x: tensor<f32>) -> tensor<f32> {
    // expected-error @+1 {{returns a function argument or a parameter; the memory plan needs results computed in the function}}
    return %x : tensor<f32>
  }
}

// -----

module {
  func.func private @pair(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = braid.neg %x : tensor<4xf32>
    // expected-error @+1 {{returns the same value twice; the memory plan needs one buffer per result}}
    return %0, %0 : tensor<4xf32>, tensor<4xf32>
  }
  func.func @step(%x: tensor<4xf32>, %l: tensor<1x4xf32>, %t: tensor<1xi32>) -> tensor<f32> {
    %a, %b = func.call @pair(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %loss = braid.cross_entropy %l, %t : tensor<1x4xf32>, tensor<1xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module {
  func.func @step(%x: tensor<4x6x8xf32>, %u: tensor<4x8x16xf32>, %d: tensor<4x16x8xf32>, %l: tensor<1x4xf32>, %t: tensor<1xi32>) -> tensor<f32> {
    // expected-error @+1 {{braid-translate needs expert FFNs expanded first (--braid-expand-expert-ffn)}}
    %y = braid.expert_ffn silu %x, %u, %d : tensor<4x6x8xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32> -> tensor<4x6x8xf32>
    %loss = braid.cross_entropy %l, %t : tensor<1x4xf32>, tensor<1xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module {
  func.func @step(%l: tensor<1x4xf32>, %t: tensor<1xi32>) -> tensor<f32> {
    // expected-error @+1 {{braid-translate cannot emit 'arith.constant'}}
    %c = arith.constant dense<1.0> : tensor<1x4xf32>
    %s = braid.add %c, %l : tensor<1x4xf32>
    %loss = braid.cross_entropy %s, %t : tensor<1x4xf32>, tensor<1xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{step argument #0 feeds neither an embedding's tokens nor the loss's labels, so the runtime cannot generate it}}
  func.func @step(%l: tensor<1x4xf32>, %t: tensor<1xi32>) -> tensor<f32> {
    %loss = braid.cross_entropy %l, %t : tensor<1x4xf32>, tensor<1xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
