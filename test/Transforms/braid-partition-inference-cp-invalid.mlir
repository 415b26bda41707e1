// RUN: braid-opt --braid-partition="grid=cp=2" -split-input-file -verify-diagnostics %s
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | not braid-opt --braid-partition="grid=cp=2 cp-layout=zigzag" 2>&1 | FileCheck %s --check-prefix=ZIGZAG

// A KV cache split by sequence over cp is cut in contiguous chunks: the
// zigzag order of training is refused where a module writes one.
// ZIGZAG: error: cp-layout=zigzag: 'braid.cache_write' depends on the order of the sequence's chunks (only attention is told zigzag positions); use cp-layout=contiguous

// A cache whose rows per sequence cp does not divide.
module {
  braid.state @cache zeros : tensor<2x5x2x4xf32>
  func.func @prefill(%k: tensor<2x4x2x4xf32>, %pos: tensor<2xi32>) -> tensor<2x5x2x4xf32> attributes {braid.entry = "prefill"} {
    %c = braid.get_param @cache : tensor<2x5x2x4xf32>
    // expected-error @+1 {{--braid-partition: a KV cache of 5 rows per sequence cannot be split by sequence over cp=2 (contiguous chunks need a multiple; choose --context accordingly)}}
    %w = braid.cache_write %c, %k, %pos : tensor<2x5x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2xi32>
    return %w : tensor<2x5x2x4xf32>
  }
}
