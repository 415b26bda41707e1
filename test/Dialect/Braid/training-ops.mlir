// RUN: braid-opt %s | braid-opt | FileCheck %s
// RUN: braid-opt %s --mlir-print-op-generic | braid-opt | FileCheck %s

module {

// CHECK: braid.param @w normal(2.000000e-02) : tensor<32x32xf32>
// CHECK: braid.param @norm ones : tensor<32xf32>
braid.param @w normal(0.02) : tensor<32x32xf32>
braid.param @norm ones : tensor<32xf32>

// CHECK: braid.state @adamw.m.w zeros : tensor<32x32xf32>
// CHECK: braid.state @adamw.v.w zeros : tensor<32x32xf32>
// CHECK: braid.state @adamw.step zeros : tensor<f32>
// CHECK: braid.state @scale ones : tensor<32xbf16>
braid.state @adamw.m.w zeros : tensor<32x32xf32>
braid.state @adamw.v.w zeros : tensor<32x32xf32>
braid.state @adamw.step zeros : tensor<f32>
braid.state @scale ones : tensor<32xbf16>

// CHECK-LABEL: func.func @helpers
func.func @helpers(%x: tensor<2x16x48xf32>, %dy: tensor<2x16x48xf32>, %h: tensor<2x16x48xbf16>)
    -> (tensor<f32>, tensor<48xf32>, tensor<2x16x48xf32>, tensor<2x16x48xbf16>, tensor<2x16x48xbf16>) {
  // CHECK: braid.fill 1.000000e+00 : tensor<f32>
  %one = braid.fill 1.0 : tensor<f32>
  // CHECK: braid.fill -2.500000e-01 : tensor<4x8xbf16>
  %q = braid.fill -0.25 : tensor<4x8xbf16>
  // CHECK: braid.sum_rows %{{.*}} : tensor<2x16x48xf32> -> tensor<48xf32>
  %db = braid.sum_rows %dy : tensor<2x16x48xf32> -> tensor<48xf32>
  // CHECK: braid.activation_grad silu %{{.*}}, %{{.*}} : tensor<2x16x48xf32>
  %a0 = braid.activation_grad silu %x, %dy : tensor<2x16x48xf32>
  // CHECK: braid.activation_grad gelu %{{.*}}, %{{.*}} : tensor<2x16x48xf32>
  %a1 = braid.activation_grad gelu %x, %a0 : tensor<2x16x48xf32>
  // CHECK: braid.activation_grad gelu_tanh %{{.*}}, %{{.*}} : tensor<2x16x48xf32>
  %a2 = braid.activation_grad gelu_tanh %x, %a1 : tensor<2x16x48xf32>
  // CHECK: braid.activation_grad sigmoid %{{.*}}, %{{.*}} : tensor<2x16x48xf32>
  %a3 = braid.activation_grad sigmoid %x, %a2 : tensor<2x16x48xf32>
  // CHECK: braid.activation_grad relu %{{.*}}, %{{.*}} : tensor<2x16x48xbf16>
  %a4 = braid.activation_grad relu %h, %h : tensor<2x16x48xbf16>
  // CHECK: braid.convert %{{.*}} : tensor<2x16x48xf32> -> tensor<2x16x48xbf16>
  %c = braid.convert %a3 : tensor<2x16x48xf32> -> tensor<2x16x48xbf16>
  return %one, %db, %a3, %a4, %c : tensor<f32>, tensor<48xf32>, tensor<2x16x48xf32>, tensor<2x16x48xbf16>, tensor<2x16x48xbf16>
}

// CHECK-LABEL: func.func @transformer_grads
func.func @transformer_grads(%q: tensor<2x16x4x8xf32>, %kv: tensor<2x16x2x8xf32>, %do: tensor<2x16x4x8xf32>,
                             %x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %dx: tensor<2x16x32xf32>,
                             %tok: tensor<2x16xi32>, %logits: tensor<2x16x97xf32>, %loss_grad: tensor<f32>) {
  // CHECK: braid.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} causal {rope_theta = 1.000000e+04 : f64, scale = 2.500000e-01 : f64} : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x4x8xf32> -> tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>
  %dq, %dk, %dv = braid.attention_grad %q, %kv, %kv, %do causal {scale = 0.25 : f64, rope_theta = 10000.0 : f64} : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x4x8xf32> -> tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>
  // CHECK: braid.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32> -> tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
  %dq2, %dk2, %dv2 = braid.attention_grad %q, %q, %q, %dq : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32> -> tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
  // CHECK: braid.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>, tensor<32xf32>
  %dn, %dg = braid.rms_norm_grad %x, %g, %dx : tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>, tensor<32xf32>
  // CHECK: braid.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>, tensor<32xf32>
  %dn2, %dg2 = braid.rms_norm_grad %x, %g, %dn {epsilon = 1.0e-6 : f64} : tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>, tensor<32xf32>
  // CHECK: braid.softmax_grad %{{.*}}, %{{.*}} : tensor<2x16x32xf32>
  %dsm = braid.softmax_grad %x, %dn : tensor<2x16x32xf32>
  // CHECK: braid.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>
  %dl, %dlg, %dlb = braid.layer_norm_grad %x, %g, %dn2 : tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>
  // CHECK: braid.embedding_grad %{{.*}}, %{{.*}} : tensor<2x16xi32>, tensor<2x16x32xf32> -> tensor<97x32xf32>
  %dwte = braid.embedding_grad %tok, %dl : tensor<2x16xi32>, tensor<2x16x32xf32> -> tensor<97x32xf32>
  // CHECK: braid.position_grad %{{.*}} : tensor<2x16x32xf32> -> tensor<64x32xf32>
  %dwpe = braid.position_grad %dl : tensor<2x16x32xf32> -> tensor<64x32xf32>
  // CHECK: braid.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x97xf32>, tensor<2x16xi32>, tensor<f32> -> tensor<2x16x97xf32>
  %dlogits = braid.cross_entropy_grad %logits, %tok, %loss_grad : tensor<2x16x97xf32>, tensor<2x16xi32>, tensor<f32> -> tensor<2x16x97xf32>
  return
}

// CHECK-LABEL: func.func @mamba_grads
func.func @mamba_grads(%x: tensor<2x16x64xf32>, %w: tensor<64x4xf32>, %A: tensor<64x8xf32>,
                       %B: tensor<2x16x8xf32>, %D: tensor<64xf32>, %dy: tensor<2x16x64xf32>) {
  // CHECK: braid.conv1d_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x64xf32>, tensor<64x4xf32>, tensor<2x16x64xf32> -> tensor<2x16x64xf32>, tensor<64x4xf32>, tensor<64xf32>
  %dx, %dw, %db = braid.conv1d_grad %x, %w, %dy : tensor<2x16x64xf32>, tensor<64x4xf32>, tensor<2x16x64xf32> -> tensor<2x16x64xf32>, tensor<64x4xf32>, tensor<64xf32>
  // CHECK: braid.selective_scan_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} delta_softplus : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<64xf32>, tensor<2x16x64xf32> -> tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<64xf32>
  %0:6 = braid.selective_scan_grad %x, %x, %A, %B, %B, %D, %dy delta_softplus : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<64xf32>, tensor<2x16x64xf32> -> tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<64xf32>
  // CHECK: braid.selective_scan_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x64xf32>
  %1:6 = braid.selective_scan_grad %x, %x, %A, %B, %B, %D, %0#0 : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<64xf32>, tensor<2x16x64xf32> -> tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<64xf32>
  return
}

// CHECK-LABEL: func.func @moe_grads
func.func @moe_grads(%logits: tensor<32x8xf32>, %i: tensor<32x2xi32>, %dw: tensor<32x2xf32>,
                     %de: tensor<8x10x64xf32>, %e: tensor<8x10x64xf32>, %w: tensor<32x2xf32>,
                     %dy: tensor<32x64xf32>) {
  // CHECK: braid.router_grad %{{.*}}, %{{.*}}, %{{.*}} normalize : tensor<32x8xf32>, tensor<32x2xi32>, tensor<32x2xf32> -> tensor<32x8xf32>
  %dl = braid.router_grad %logits, %i, %dw normalize : tensor<32x8xf32>, tensor<32x2xi32>, tensor<32x2xf32> -> tensor<32x8xf32>
  // CHECK: braid.router_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x8xf32>, tensor<32x2xi32>, tensor<32x2xf32> -> tensor<32x8xf32>
  %dl2 = braid.router_grad %logits, %i, %dw : tensor<32x8xf32>, tensor<32x2xi32>, tensor<32x2xf32> -> tensor<32x8xf32>
  // CHECK: braid.dispatch_grad %{{.*}}, %{{.*}} : tensor<8x10x64xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
  %dx = braid.dispatch_grad %de, %i : tensor<8x10x64xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
  // CHECK: braid.combine_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x10x64xf32>, tensor<32x2xf32>, tensor<32x2xi32>, tensor<32x64xf32> -> tensor<8x10x64xf32>, tensor<32x2xf32>
  %dex, %dwt = braid.combine_grad %e, %w, %i, %dy : tensor<8x10x64xf32>, tensor<32x2xf32>, tensor<32x2xi32>, tensor<32x64xf32> -> tensor<8x10x64xf32>, tensor<32x2xf32>
  // CHECK: braid.dispatch_grad %{{.*}}, %{{.*}} group_size 16 : tensor<8x10x64xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
  %dxg = braid.dispatch_grad %de, %i group_size 16 : tensor<8x10x64xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
  // CHECK: braid.combine_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} group_size 16 : tensor<8x10x64xf32>, tensor<32x2xf32>, tensor<32x2xi32>, tensor<32x64xf32> -> tensor<8x10x64xf32>, tensor<32x2xf32>
  %dexg, %dwtg = braid.combine_grad %e, %w, %i, %dy group_size 16 : tensor<8x10x64xf32>, tensor<32x2xf32>, tensor<32x2xi32>, tensor<32x64xf32> -> tensor<8x10x64xf32>, tensor<32x2xf32>
  return
}

// CHECK-LABEL: func.func @optimizer
func.func @optimizer(%gw: tensor<32x32xf32>, %gn: tensor<32xf32>, %gh: tensor<32xbf16>) {
  // CHECK: braid.sum_squares %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x32xf32>, tensor<32xf32>, tensor<32xbf16> -> tensor<f32>
  %ss = braid.sum_squares %gw, %gn, %gh : tensor<32x32xf32>, tensor<32xf32>, tensor<32xbf16> -> tensor<f32>
  // CHECK: braid.clip_coefficient %{{.*}} max_norm 1.000000e+00 : tensor<f32>
  %coef = braid.clip_coefficient %ss max_norm 1.0 : tensor<f32>
  // CHECK: braid.increment @adamw.step
  braid.increment @adamw.step
  // CHECK: braid.sgd_update @norm, %{{.*}}, %{{.*}} {lr = 1.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : tensor<32xf32>, tensor<f32>
  braid.sgd_update @norm, %gn, %coef {lr = 0.1 : f64, weight_decay = 0.0 : f64} : tensor<32xf32>, tensor<f32>
  // CHECK: braid.adamw_update @w, %{{.*}}, %{{.*}} moments @adamw.m.w, @adamw.v.w step @adamw.step {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-01 : f64} : tensor<32x32xf32>, tensor<f32>
  braid.adamw_update @w, %gw, %coef moments @adamw.m.w, @adamw.v.w step @adamw.step {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64} : tensor<32x32xf32>, tensor<f32>
  return
}

// CHECK-LABEL: func.func @step
// CHECK-SAME: attributes {braid.gradients = [@w, @norm]}
func.func @step(%x: tensor<f32>) -> (tensor<f32>, tensor<32x32xf32>, tensor<32xf32>) attributes {braid.gradients = [@w, @norm]} {
  // CHECK: braid.get_param @w : tensor<32x32xf32>
  %w = braid.get_param @w : tensor<32x32xf32>
  // CHECK: braid.get_param @norm : tensor<32xf32>
  %n = braid.get_param @norm : tensor<32xf32>
  return %x, %w, %n : tensor<f32>, tensor<32x32xf32>, tensor<32xf32>
}

}
