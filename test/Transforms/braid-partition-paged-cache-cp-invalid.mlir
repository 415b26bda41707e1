// RUN: braid-opt --braid-partition="grid=cp=2" -split-input-file -verify-diagnostics %s
// RUN: braid-opt --braid-partition="grid=cp=2,tp=2" -split-input-file -verify-diagnostics %s

// A page pool has no sequence dimension to split over cp: refused where the
// first paged op is, not partitioned into a wrong program.
module {
  braid.state @cache.layers.0.k zeros : tensor<8x4x2x8xf32>
  func.func @prefill(%k: tensor<2x4x2x8xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<8x4x2x8xf32> attributes {braid.entry = "prefill"} {
    %kp = braid.get_param @cache.layers.0.k : tensor<8x4x2x8xf32>
    // expected-error @+1 {{--braid-partition: a paged KV cache is not split over cp (cp=2 in the grid); serve on tp, or use cp=1}}
    %kp1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last : tensor<8x4x2x8xf32>, tensor<2x4x2x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32>
    return %kp1 : tensor<8x4x2x8xf32>
  }
}

// -----

// Attention alone (a program that reads the pools another program wrote).
module {
  braid.state @cache.layers.0.k zeros : tensor<8x4x2x8xf32>
  func.func @decode(%q: tensor<2x1x4x8xf32>, %pos: tensor<2xi32>, %pages: tensor<2x3xi32>, %last: tensor<2xi32>) -> tensor<2x1x4x8xf32> attributes {braid.entry = "decode"} {
    %kp = braid.get_param @cache.layers.0.k : tensor<8x4x2x8xf32>
    // expected-error @+1 {{--braid-partition: a paged KV cache is not split over cp (cp=2 in the grid); serve on tp, or use cp=1}}
    %o = braid.paged_cache_attention %q, %kp, %kp, %pos, %pages, %last : tensor<2x1x4x8xf32>, tensor<8x4x2x8xf32>, tensor<8x4x2x8xf32>, tensor<2xi32>, tensor<2x3xi32>, tensor<2xi32> -> tensor<2x1x4x8xf32>
    return %o : tensor<2x1x4x8xf32>
  }
}
