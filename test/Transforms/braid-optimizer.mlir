// RUN: braid-opt %s --braid-autodiff --braid-optimizer | FileCheck %s --check-prefix=ADAMW
// RUN: braid-opt %s --braid-autodiff --braid-optimizer="kind=sgd lr=0.5 weight-decay=0 max-norm=0" | FileCheck %s --check-prefix=SGD
// RUN: not braid-opt %s --braid-optimizer 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not braid-opt %s --braid-autodiff --braid-optimizer=kind=lamb 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not braid-opt %s --braid-autodiff --braid-optimizer=kind=none 2>&1 | FileCheck %s --check-prefix=NONE

// NOGRAD: error: --braid-optimizer needs the gradients of a step function '@step' (run --braid-autodiff first)
// KIND: for the --kind option: expected adamw, sgd or none, found 'lamb'
// NONE: error: --braid-optimizer: kind must be adamw or sgd, found 'none' (the pipeline's optimizer=none runs no optimizer)

module {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  braid.param @norm ones : tensor<8xf32>
  func.func @step(%tok: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32>
    %g = braid.get_param @norm : tensor<8xf32>
    %n = braid.rms_norm %h, %g : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
    %logits = braid.linear %n, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x4x10xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// AdamW: a step counter and both moments of every parameter, in f32.
// ADAMW:      braid.state @opt.step zeros : tensor<f32>
// ADAMW-NEXT: braid.state @opt.m.wte zeros : tensor<10x8xf32>
// ADAMW-NEXT: braid.state @opt.v.wte zeros : tensor<10x8xf32>
// ADAMW-NEXT: braid.state @opt.m.norm zeros : tensor<8xf32>
// ADAMW-NEXT: braid.state @opt.v.norm zeros : tensor<8xf32>
// ADAMW-LABEL: func.func @step
// ADAMW-SAME:    -> tensor<f32> {
// ADAMW-NOT:     braid.gradients
// ADAMW:         %[[SUMSQ:.*]] = braid.sum_squares %[[GWTE:.*]], %[[GNORM:.*]] : tensor<10x8xf32>, tensor<8xf32> -> tensor<f32>
// ADAMW-NEXT:    %[[COEF:.*]] = braid.clip_coefficient %[[SUMSQ]] max_norm 1.000000e+00 : tensor<f32>
// ADAMW-NEXT:    braid.increment @opt.step
// ADAMW-NEXT:    braid.adamw_update @wte, %[[GWTE]], %[[COEF]] moments @opt.m.wte, @opt.v.wte step @opt.step {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-01 : f64} : tensor<10x8xf32>, tensor<f32>
// ADAMW-NEXT:    braid.adamw_update @norm, %[[GNORM]], %[[COEF]] moments @opt.m.norm, @opt.v.norm step @opt.step
// ADAMW-NEXT:    return %{{.*}} : tensor<f32>

// With SGD, only the counter; the options reach the update.
// SGD:         braid.state @opt.step zeros : tensor<f32>
// SGD-NOT:     braid.state
// SGD:         braid.clip_coefficient %{{.*}} max_norm 0.000000e+00 : tensor<f32>
// SGD:         braid.sgd_update @wte, %{{.*}}, %{{.*}} {lr = 5.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : tensor<10x8xf32>, tensor<f32>
// SGD-NEXT:    braid.sgd_update @norm
