// RUN: braid-opt %s --braid-training-pipeline | FileCheck %s --check-prefix=ADAMW
// RUN: braid-opt %s --braid-training-pipeline="optimizer=none dtype=bf16" | FileCheck %s --check-prefix=FWD
// RUN: braid-opt %s --braid-training-pipeline="dtype=bf16 optimizer=sgd recompute=full" | FileCheck %s --check-prefix=MIXED
// RUN: not braid-opt %s --braid-training-pipeline="dtype=f8" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// The registered pipeline braid-run runs: expert FFNs expanded, floats
// converted, then autodiff and the optimizer when training.

module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  braid.param @w_up normal(0.02) : tensor<2x8x16xf32>
  braid.param @w_down normal(0.02) : tensor<2x16x8xf32>
  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32>
    %e = braid.reshape %h : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %u = braid.get_param @w_up : tensor<2x8x16xf32>
    %d = braid.get_param @w_down : tensor<2x16x8xf32>
    %y = braid.expert_ffn silu %e, %u, %d : tensor<2x4x8xf32>, tensor<2x8x16xf32>, tensor<2x16x8xf32> -> tensor<2x4x8xf32>
    %logits = braid.linear %y, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// ADAMW-NOT: braid.expert_ffn
// ADAMW: braid.state @opt.m.w_down zeros : tensor<2x16x8xf32>
// ADAMW: braid.adamw_update @wte

// Forward only, bf16 storage: parameters change type, no optimizer.
// FWD: braid.param @wte normal(2.000000e-02) : tensor<10x8xbf16>
// FWD-NOT: braid.state
// FWD-NOT: update
// FWD: braid.cross_entropy {{.*}} : tensor<2x4x10xbf16>, tensor<2x4xi32> -> tensor<f32>

// Training in bf16: f32 master weights read through converts, SGD on them.
// The backward casts the weights again where it reads them, so the
// forward's copies do not live until the backward.
// MIXED: braid.param @wte normal(2.000000e-02) : tensor<10x8xf32>
// MIXED: braid.convert %{{.*}} : tensor<10x8xf32> -> tensor<10x8xbf16>
// MIXED: %[[DLOGITS:.*]] = braid.cross_entropy_grad
// MIXED-NEXT: %[[W:.*]] = braid.get_param @wte : tensor<10x8xf32>
// MIXED-NEXT: %[[W16:.*]] = braid.convert %[[W]] : tensor<10x8xf32> -> tensor<10x8xbf16>
// MIXED-NEXT: braid.linear %[[DLOGITS]], %[[W16]]
// MIXED: braid.sgd_update @wte, %{{.*}}, %{{.*}} {{.*}} : tensor<10x8xf32>, tensor<f32>

// BAD: for the --dtype option: expected f32, bf16 or f16, found 'f8'
