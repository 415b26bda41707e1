// RUN: braid-opt --braid-partition="grid=dp=2,tp=2" -split-input-file -verify-diagnostics %s
// (Context parallelism of the programs that read a KV cache:
// braid-partition-inference-cp.mlir and its -invalid.mlir.)

// A parameter has one layout, shared by every program of the module:
// annotations of it in two programs must agree.
module {
  shard.grid @grid(shape = 2x2)
  braid.param @w normal(2.000000e-02) : tensor<8x8xf32>
  func.func @prefill(%x: tensor<4x6x8xf32>) -> tensor<4x6x8xf32> attributes {braid.entry = "prefill"} {
    %read = braid.get_param @w : tensor<8x8xf32>
    %column = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
    // expected-note @+1 {{the annotation in @prefill splits it over tp}}
    %w = shard.shard %read to %column : tensor<8x8xf32>
    %y = braid.linear %x, %w : tensor<4x6x8xf32>, tensor<8x8xf32> -> tensor<4x6x8xf32>
    return %y : tensor<4x6x8xf32>
  }
  func.func @decode(%x: tensor<4x1x8xf32>) -> tensor<4x1x8xf32> attributes {braid.entry = "decode"} {
    %read = braid.get_param @w : tensor<8x8xf32>
    %whole = shard.sharding @grid split_axes = [[], []] : !shard.sharding
    // expected-error @+1 {{@w is annotated differently in @decode and @prefill: this annotation keeps it whole on dimension 1, but a parameter or state has one layout, shared by every program of the module}}
    %w = shard.shard %read to %whole : tensor<8x8xf32>
    %y = braid.linear %x, %w : tensor<4x1x8xf32>, tensor<8x8xf32> -> tensor<4x1x8xf32>
    return %y : tensor<4x1x8xf32>
  }
}

// -----

// One set of dimension classes spans the programs: the batch of a cache
// that two programs write ties their batches, so a program whose batch dp
// does not divide is refused where it reads the cache.
module {
  braid.state @cache zeros : tensor<3x8x2x4xf32>
  func.func @prefill(%k: tensor<3x8x2x4xf32>, %pos: tensor<3xi32>) -> tensor<3x8x2x4xf32> attributes {braid.entry = "prefill"} {
    // expected-error @+1 {{cannot split dimension 0 of 'tensor<3x8x2x4xf32>' over dp (2 ranks): 3 is not a multiple of 2}}
    %c = braid.get_param @cache : tensor<3x8x2x4xf32>
    %w = braid.cache_write %c, %k, %pos : tensor<3x8x2x4xf32>, tensor<3x8x2x4xf32>, tensor<3xi32>
    %o = braid.cache_attention %k, %w, %w, %pos : tensor<3x8x2x4xf32>, tensor<3x8x2x4xf32>, tensor<3x8x2x4xf32>, tensor<3xi32> -> tensor<3x8x2x4xf32>
    return %o : tensor<3x8x2x4xf32>
  }
}
