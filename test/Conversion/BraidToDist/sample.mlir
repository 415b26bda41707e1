// RUN: braid-opt %s --convert-braid-to-dist -split-input-file | FileCheck %s
// RUN: braid-opt %s --convert-braid-to-dist -split-input-file | FileCheck %s --check-prefix=COUNT

// Greedy over this rank's 49 columns of a 97-word vocabulary (tp = 2, the
// last column of the last rank padding): one all-gather of (max, index).
// CHECK-LABEL: func.func @greedy
// CHECK-SAME: (%[[L:.*]]: tensor<2x49xf32>, %[[S:.*]]: tensor<2xi64>, %[[ST:.*]]: tensor<2xi64>, %[[T:.*]]: tensor<2xf32>, %[[K:.*]]: tensor<2xi32>, %[[P:.*]]: tensor<2xf32>)
// CHECK: %[[C:.*]] = dist.coordinate on @grid grid_axes = [1] : index
// CHECK: %[[OFF:.*]] = arith.muli %[[C]], %{{.*}} : index
// CHECK: %[[W:.*]] = braid.sample_local max %[[L]], %[[T]], %[[K]], %[[P]] at %[[OFF]] {top_k_cap = 0 : i64, vocab = 97 : i64} : (tensor<2x49xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, index) -> tensor<2x2xi64>
// CHECK: %[[G:.*]], %[[TOK:.*]] = dist.all_gather %[[W]] on @grid grid_axes = [1] gather_axis = 0 : tensor<2x2xi64> -> tensor<4x2xi64>
// CHECK-NEXT: dist.wait %[[TOK]]
// CHECK: %[[M:.*]] = braid.sample_merge max %[[G]], %[[T]], %[[K]], %[[P]], %[[S]], %[[ST]] {top_k_cap = 0 : i64, vocab = 97 : i64} : {{.*}} -> tensor<2x16xi64>
// CHECK: %[[IDS:.*]] = braid.sample_ids %[[M]] : tensor<2x16xi64> -> tensor<2xi32>
// CHECK: return %[[IDS]]
// COUNT-LABEL: func.func @greedy
// COUNT-COUNT-1: dist.all_gather
// COUNT-NOT: dist.all_gather
// COUNT: return
shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @greedy(%l: tensor<2x49xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) -> tensor<2xi32> {
  %ids = braid.sample greedy %l, %s, %st, %t, %k, %p {vocab = 97, vocab_axes = ["tp"]} : (tensor<2x49xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
  return %ids : tensor<2xi32>
}

// -----

// Temperature and top-k (up to 8 candidates per rank) over 4 ranks: max,
// mass with the candidates, draw; each merge folds into the state of
// 10 + 3 x 4 words per row.
// CHECK-LABEL: func.func @sample
// CHECK: braid.sample_local max
// CHECK: dist.all_gather %{{.*}} on @grid grid_axes = [0, 1] gather_axis = 0 : tensor<2x2xi64> -> tensor<8x2xi64>
// CHECK: %[[S0:.*]] = braid.sample_merge max {{.*}} -> tensor<2x22xi64>
// CHECK: %[[W1:.*]] = braid.sample_local mass %{{.*}} state %[[S0]], {{.*}} -> tensor<2x18xi64>
// CHECK: dist.all_gather %[[W1]] {{.*}} : tensor<2x18xi64> -> tensor<8x18xi64>
// CHECK: %[[S1:.*]] = braid.sample_merge mass %{{.*}} state %[[S0]], {{.*}} -> tensor<2x22xi64>
// CHECK: %[[W2:.*]] = braid.sample_local draw %{{.*}} state %[[S1]], {{.*}} -> tensor<2x1xi64>
// CHECK: dist.all_gather %[[W2]] {{.*}} : tensor<2x1xi64> -> tensor<8x1xi64>
// CHECK: %[[S2:.*]] = braid.sample_merge draw %{{.*}} state %[[S1]], {{.*}} -> tensor<2x22xi64>
// CHECK: braid.sample_ids %[[S2]]
// COUNT-LABEL: func.func @sample
// COUNT-COUNT-3: dist.all_gather
// COUNT-NOT: dist.all_gather
// COUNT: return
shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @sample(%l: tensor<2x25xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) -> tensor<2xi32> {
  %ids = braid.sample sample %l, %s, %st, %t, %k, %p {top_k_cap = 8, vocab = 97, vocab_axes = ["dp", "tp"]} : (tensor<2x25xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
  return %ids : tensor<2xi32>
}

// -----

// Top-p: 8 rounds of the search (63 thresholds each) and the shares
// between the mass and the draw: 12 exchanges.
// CHECK-LABEL: func.func @nucleus
// CHECK: braid.sample_local mass {{.*}} -> tensor<2x2xi64>
// CHECK-COUNT-8: braid.sample_local search {{.*}} -> tensor<2x63xi64>
// CHECK: braid.sample_local shares {{.*}} -> tensor<2x2xi64>
// CHECK: braid.sample_local draw
// COUNT-LABEL: func.func @nucleus
// COUNT-COUNT-12: dist.all_gather
// COUNT-NOT: dist.all_gather
// COUNT: return
shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @nucleus(%l: tensor<2x49xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) -> tensor<2xi32> {
  %ids = braid.sample nucleus %l, %s, %st, %t, %k, %p {vocab = 97, vocab_axes = ["tp"]} : (tensor<2x49xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
  return %ids : tensor<2xi32>
}

// -----

// Not split: the op stays (its kernel samples whole rows).
// CHECK-LABEL: func.func @whole
// CHECK: braid.sample greedy
// CHECK-NOT: dist.
shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "tp"]}
func.func @whole(%l: tensor<2x97xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) -> tensor<2xi32> {
  %ids = braid.sample greedy %l, %s, %st, %t, %k, %p {vocab = 97} : (tensor<2x97xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
  return %ids : tensor<2xi32>
}
