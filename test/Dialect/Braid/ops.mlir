// RUN: braid-opt %s | braid-opt | FileCheck %s
// RUN: braid-opt %s --mlir-print-op-generic | braid-opt | FileCheck %s

// CHECK: module attributes {braid.model = {family = "llama", hidden = 32 : i64, name = "ops"}}
module attributes {braid.model = {name = "ops", family = "llama", hidden = 32 : i64}} {

// CHECK: braid.param @layers.0.wq normal(2.000000e-02) : tensor<32x32xf32>
// CHECK: braid.param @norm ones : tensor<32xf32>
// CHECK: braid.param @bias zeros : tensor<32xbf16>
braid.param @layers.0.wq normal(0.02) : tensor<32x32xf32>
braid.param @norm ones : tensor<32xf32>
// CHECK: braid.param @A_log s4d_real : tensor<64x16xf32>
// CHECK: braid.param @dt_bias mamba_dt : tensor<64xf32>
braid.param @bias zeros : tensor<32xbf16>
braid.param @A_log s4d_real : tensor<64x16xf32>
braid.param @dt_bias mamba_dt : tensor<64xf32>

// CHECK-LABEL: func.func @params
func.func @params() -> tensor<32x32xf32> {
  // CHECK: braid.get_param @layers.0.wq : tensor<32x32xf32>
  %w = braid.get_param @layers.0.wq : tensor<32x32xf32>
  return %w : tensor<32x32xf32>
}

// CHECK-LABEL: func.func @transformer
func.func @transformer(%tok: tensor<2x16xi32>, %wte: tensor<97x32xf32>, %wpe: tensor<16x32xf32>,
                       %w: tensor<32x48xf32>, %b: tensor<48xf32>, %g: tensor<32xf32>,
                       %q: tensor<2x16x4x8xf32>, %kv: tensor<2x16x2x8xf32>, %labels: tensor<2x16xi32>)
    -> (tensor<2x16x32xf32>, tensor<2x16x48xf32>, tensor<2x16x97xf32>, tensor<2x16x4x8xf32>, tensor<f32>) {
  // CHECK: braid.embedding %{{.*}}, %{{.*}} : tensor<2x16xi32>, tensor<97x32xf32> -> tensor<2x16x32xf32>
  %e0 = braid.embedding %tok, %wte : tensor<2x16xi32>, tensor<97x32xf32> -> tensor<2x16x32xf32>
  // CHECK: braid.embedding %{{.*}}, %{{.*}} positions %{{.*}} : tensor<2x16xi32>, tensor<97x32xf32>, tensor<16x32xf32> -> tensor<2x16x32xf32>
  %e = braid.embedding %tok, %wte positions %wpe : tensor<2x16xi32>, tensor<97x32xf32>, tensor<16x32xf32> -> tensor<2x16x32xf32>
  // CHECK: braid.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x16x32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
  %n = braid.rms_norm %e, %g {epsilon = 1.0e-6 : f64} : tensor<2x16x32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
  // CHECK: braid.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
  %ln = braid.layer_norm %n, %g, %g : tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
  // CHECK: braid.softmax %{{.*}} : tensor<2x16x32xf32>
  %sm = braid.softmax %ln : tensor<2x16x32xf32>
  // CHECK: braid.linear %{{.*}}, %{{.*}} bias %{{.*}} : tensor<2x16x32xf32>, tensor<32x48xf32>, tensor<48xf32> -> tensor<2x16x48xf32>
  %y = braid.linear %ln, %w bias %b : tensor<2x16x32xf32>, tensor<32x48xf32>, tensor<48xf32> -> tensor<2x16x48xf32>
  // CHECK: braid.linear %{{.*}}, %{{.*}} transpose_weight : tensor<2x16x32xf32>, tensor<97x32xf32> -> tensor<2x16x97xf32>
  %logits = braid.linear %ln, %wte transpose_weight : tensor<2x16x32xf32>, tensor<97x32xf32> -> tensor<2x16x97xf32>
  // CHECK: braid.attention %{{.*}}, %{{.*}}, %{{.*}} causal {rope_theta = 1.000000e+04 : f64, scale = 2.500000e-01 : f64} : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32> -> tensor<2x16x4x8xf32>
  %o = braid.attention %q, %kv, %kv causal {scale = 0.25 : f64, rope_theta = 10000.0 : f64} : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32> -> tensor<2x16x4x8xf32>
  // CHECK: braid.attention %{{.*}}, %{{.*}}, %{{.*}} causal {ring_axes = ["cp"], sequence_zigzag = 2 : i64} : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32> -> tensor<2x16x4x8xf32>
  %ring = braid.attention %q, %kv, %kv causal {ring_axes = ["cp"], sequence_zigzag = 2 : i64} : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32> -> tensor<2x16x4x8xf32>
  // CHECK: braid.attention %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32> -> tensor<2x16x4x8xf32>
  %o2 = braid.attention %o, %o, %o : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32> -> tensor<2x16x4x8xf32>
  // CHECK: braid.cross_entropy %{{.*}}, %{{.*}} : tensor<2x16x97xf32>, tensor<2x16xi32> -> tensor<f32>
  %loss = braid.cross_entropy %logits, %labels : tensor<2x16x97xf32>, tensor<2x16xi32> -> tensor<f32>
  return %e0, %y, %logits, %o2, %loss : tensor<2x16x32xf32>, tensor<2x16x48xf32>, tensor<2x16x97xf32>, tensor<2x16x4x8xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<4x8x16xf32>, %b: tensor<4x32x16xf32>, %c: tensor<4x16x8xf32>)
    -> (tensor<4x8x32xf32>, tensor<4x16x16xf32>) {
  // CHECK: braid.batch_matmul %{{.*}}, %{{.*}} transpose_b : tensor<4x8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
  %0 = braid.batch_matmul %a, %b transpose_b : tensor<4x8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
  // CHECK: braid.batch_matmul %{{.*}}, %{{.*}} transpose_a transpose_b : tensor<4x8x16xf32>, tensor<4x16x8xf32> -> tensor<4x16x16xf32>
  %1 = braid.batch_matmul %a, %c transpose_a transpose_b : tensor<4x8x16xf32>, tensor<4x16x8xf32> -> tensor<4x16x16xf32>
  return %0, %1 : tensor<4x8x32xf32>, tensor<4x16x16xf32>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<2x16x64xbf16>, %y: tensor<2x16x64xbf16>) -> tensor<2x16x64xbf16> {
  // CHECK: braid.gelu %{{.*}} tanh : tensor<2x16x64xbf16>
  %0 = braid.gelu %x tanh : tensor<2x16x64xbf16>
  // CHECK: braid.gelu %{{.*}} : tensor<2x16x64xbf16>
  %1 = braid.gelu %0 : tensor<2x16x64xbf16>
  // CHECK: braid.silu
  %2 = braid.silu %1 : tensor<2x16x64xbf16>
  // CHECK: braid.sigmoid
  %3 = braid.sigmoid %2 : tensor<2x16x64xbf16>
  // CHECK: braid.relu
  %r = braid.relu %3 : tensor<2x16x64xbf16>
  // CHECK: braid.exp
  %4 = braid.exp %r : tensor<2x16x64xbf16>
  // CHECK: braid.neg
  %5 = braid.neg %4 : tensor<2x16x64xbf16>
  // CHECK: braid.add %{{.*}}, %{{.*}} : tensor<2x16x64xbf16>
  %6 = braid.add %5, %y : tensor<2x16x64xbf16>
  // CHECK: braid.mul
  %7 = braid.mul %6, %y : tensor<2x16x64xbf16>
  // CHECK: braid.glu silu %{{.*}}, %{{.*}} : tensor<2x16x64xbf16>
  %8 = braid.glu silu %7, %y : tensor<2x16x64xbf16>
  // CHECK: braid.glu gelu_tanh
  %9 = braid.glu gelu_tanh %8, %y : tensor<2x16x64xbf16>
  return %9 : tensor<2x16x64xbf16>
}

// CHECK-LABEL: func.func @layout
func.func @layout(%x: tensor<2x16x32xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: braid.reshape %{{.*}} : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  %0 = braid.reshape %x : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  // CHECK: braid.transpose %{{.*}} [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %1 = braid.transpose %0 [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  return %1 : tensor<2x4x16x8xf32>
}

// CHECK-LABEL: func.func @mamba
func.func @mamba(%x: tensor<2x16x64xf32>, %w: tensor<64x4xf32>, %b: tensor<64xf32>,
                 %A: tensor<64x8xf32>, %B: tensor<2x16x8xf32>, %D: tensor<64xf32>) -> tensor<2x16x64xf32> {
  // CHECK: braid.conv1d %{{.*}}, %{{.*}} bias %{{.*}} : tensor<2x16x64xf32>, tensor<64x4xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
  %c = braid.conv1d %x, %w bias %b : tensor<2x16x64xf32>, tensor<64x4xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
  // CHECK: braid.conv1d %{{.*}}, %{{.*}} : tensor<2x16x64xf32>, tensor<64x4xf32> -> tensor<2x16x64xf32>
  %c2 = braid.conv1d %c, %w : tensor<2x16x64xf32>, tensor<64x4xf32> -> tensor<2x16x64xf32>
  // CHECK: braid.selective_scan %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} delta_softplus : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
  %y = braid.selective_scan %c2, %x, %A, %B, %B, %D delta_softplus : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<32x64xf32>, %logits: tensor<32x8xf32>, %wu: tensor<8x64x128xf32>,
               %wd: tensor<8x128x64xf32>) -> tensor<32x64xf32> {
  // CHECK: braid.router %{{.*}} top_k 2 normalize : tensor<32x8xf32> -> tensor<32x2xf32>, tensor<32x2xi32>
  %w, %i = braid.router %logits top_k 2 normalize : tensor<32x8xf32> -> tensor<32x2xf32>, tensor<32x2xi32>
  // CHECK: braid.router %{{.*}} top_k 1 : tensor<32x8xf32> -> tensor<32x1xf32>, tensor<32x1xi32>
  %w1, %i1 = braid.router %logits top_k 1 : tensor<32x8xf32> -> tensor<32x1xf32>, tensor<32x1xi32>
  // CHECK: braid.dispatch %{{.*}}, %{{.*}} : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<8x10x64xf32>
  %d = braid.dispatch %x, %i : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<8x10x64xf32>
  // CHECK: braid.expert_ffn silu %{{.*}}, %{{.*}}, %{{.*}} gate %{{.*}} : tensor<8x10x64xf32>, tensor<8x64x128xf32>, tensor<8x128x64xf32>, tensor<8x64x128xf32> -> tensor<8x10x64xf32>
  %e = braid.expert_ffn silu %d, %wu, %wd gate %wu : tensor<8x10x64xf32>, tensor<8x64x128xf32>, tensor<8x128x64xf32>, tensor<8x64x128xf32> -> tensor<8x10x64xf32>
  // CHECK: braid.expert_ffn gelu %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x10x64xf32>, tensor<8x64x128xf32>, tensor<8x128x64xf32> -> tensor<8x10x64xf32>
  %e2 = braid.expert_ffn gelu %e, %wu, %wd : tensor<8x10x64xf32>, tensor<8x64x128xf32>, tensor<8x128x64xf32> -> tensor<8x10x64xf32>
  // CHECK: braid.combine %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x10x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
  %y = braid.combine %e2, %w, %i : tensor<8x10x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
  // Capacity per group of 16 tokens: 2 groups of 5 slots per expert.
  // CHECK: braid.dispatch %{{.*}}, %{{.*}} group_size 16 : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<8x10x64xf32>
  %dg = braid.dispatch %x, %i group_size 16 : tensor<32x64xf32>, tensor<32x2xi32> -> tensor<8x10x64xf32>
  // CHECK: braid.combine %{{.*}}, %{{.*}}, %{{.*}} group_size 16 : tensor<8x10x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
  %yg = braid.combine %dg, %w, %i group_size 16 : tensor<8x10x64xf32>, tensor<32x2xf32>, tensor<32x2xi32> -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}


// Entry points: each kind round-trips on a public function with a body.
// CHECK-LABEL: func.func @entry_train() attributes {braid.entry = "train_step"}
func.func @entry_train() attributes {braid.entry = "train_step"} {
  return
}
// CHECK-LABEL: func.func @entry_forward() attributes {braid.entry = "forward"}
func.func @entry_forward() attributes {braid.entry = "forward"} {
  return
}
// CHECK-LABEL: func.func @entry_prefill() attributes {braid.entry = "prefill"}
func.func @entry_prefill() attributes {braid.entry = "prefill"} {
  return
}
// CHECK-LABEL: func.func @entry_decode() attributes {braid.entry = "decode"}
func.func @entry_decode() attributes {braid.entry = "decode"} {
  return
}

}
