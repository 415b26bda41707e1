// RUN: braid-opt %s --braid-autodiff | FileCheck %s --check-prefixes=CHECK,NONE
// RUN: braid-opt %s --braid-autodiff=recompute=selective | FileCheck %s --check-prefixes=CHECK,SEL
// RUN: braid-opt %s --braid-autodiff=recompute=full | FileCheck %s --check-prefixes=CHECK,FULL

// One layer (a projection, attention, a product and a residual add) called
// from a step with a tied embedding. The step returns the loss and the
// gradient of every parameter; the layer gets a backward function whose
// inputs depend on the recompute policy.

module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  braid.param @l0.wq normal(0.02) : tensor<8x8xf32>

  func.func private @layer(%x: tensor<2x4x8xf32>, %wq: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
    %q = braid.linear %x, %wq : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    %qh = braid.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %o = braid.attention %qh, %qh, %qh causal : tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32> -> tensor<2x4x2x4xf32>
    %of = braid.reshape %o : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
    %y = braid.mul %of, %of : tensor<2x4x8xf32>
    %r = braid.add %x, %y : tensor<2x4x8xf32>
    return %r : tensor<2x4x8xf32>
  }

  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32>
    %wq = braid.get_param @l0.wq : tensor<8x8xf32>
    %h1 = func.call @layer(%h0, %wq) : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %logits = braid.linear %h1, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// none: the forward variant also returns q's heads and the attention output
// (read by the product's backward); the original layer function is gone.
// NONE-NOT:   func.func private @layer(
// NONE-LABEL: func.func private @layer.fwd
// NONE-SAME:    -> (tensor<2x4x8xf32>, tensor<2x4x2x4xf32>, tensor<2x4x8xf32>)
// NONE:         braid.attention
// NONE-LABEL: func.func private @layer.bwd
// NONE-SAME:    (%{{.*}}: tensor<2x4x8xf32>, %{{.*}}: tensor<8x8xf32>, %[[QH:.*]]: tensor<2x4x2x4xf32>, %[[O:.*]]: tensor<2x4x8xf32>, %[[DY:.*]]: tensor<2x4x8xf32>)
// NONE-NOT:     braid.attention %
// NONE:         braid.mul %[[DY]], %[[O]]
// NONE:         braid.attention_grad %[[QH]], %[[QH]], %[[QH]], %{{.*}} causal

// selective: the attention output is not kept; the backward recomputes it.
// SEL-LABEL:  func.func private @layer.fwd
// SEL-SAME:     -> (tensor<2x4x8xf32>, tensor<2x4x2x4xf32>)
// SEL-LABEL:  func.func private @layer.bwd
// SEL-SAME:     (%{{.*}}: tensor<2x4x8xf32>, %{{.*}}: tensor<8x8xf32>, %[[QH:.*]]: tensor<2x4x2x4xf32>, %{{.*}}: tensor<2x4x8xf32>)
// SEL:          braid.attention %[[QH]], %[[QH]], %[[QH]] causal
// SEL:          braid.attention_grad %[[QH]], %[[QH]], %[[QH]]

// full: the step calls the layer itself; its backward recomputes the layer.
// FULL-LABEL: func.func private @layer(
// FULL-LABEL: func.func private @layer.bwd
// FULL-SAME:    (%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<8x8xf32>, %{{.*}}: tensor<2x4x8xf32>)
// FULL-NEXT:    braid.linear %[[X]], %[[W]]
// FULL:         braid.attention
// FULL:         braid.attention_grad

// The step: forward, the seed 1 of the loss, the loss's and head's backward,
// the layer's backward, the embedding's scatter-add summed with the tied
// head's gradient, and the results named by braid.gradients.
// CHECK-LABEL: func.func @step
// CHECK-SAME:    -> (tensor<f32>, tensor<10x8xf32>, tensor<8x8xf32>) attributes {braid.gradients = [@wte, @l0.wq]}
// NONE:          %[[F:.*]]:3 = call @layer.fwd(
// FULL:          %[[F:.*]] = call @layer(
// CHECK:         %[[LOSS:.*]] = braid.cross_entropy
// CHECK:         %[[ONE:.*]] = braid.fill 1.000000e+00 : tensor<f32>
// CHECK:         %[[DLOGITS:.*]] = braid.cross_entropy_grad %{{.*}}, %{{.*}}, %[[ONE]]
// CHECK:         %[[DH1:.*]] = braid.linear %[[DLOGITS]], %{{.*}} : tensor<2x4x10xf32>, tensor<10x8xf32> -> tensor<2x4x8xf32>
// CHECK:         %[[DHEAD:.*]] = braid.batch_matmul %{{.*}}, %{{.*}} transpose_a : tensor<8x10xf32>, tensor<8x8xf32> -> tensor<10x8xf32>
// CHECK:         %[[B:.*]]:2 = call @layer.bwd(
// CHECK-SAME:      %[[DH1]])
// CHECK:         %[[DEMB:.*]] = braid.embedding_grad %{{.*}}, %[[B]]#0
// CHECK:         %[[DWTE:.*]] = braid.add %[[DHEAD]], %[[DEMB]]
// CHECK:         %[[DWQ:.*]] = braid.mul %[[B]]#1, %{{.*}}
// CHECK:         return %[[LOSS]], %[[DWTE]], %[[DWQ]]
