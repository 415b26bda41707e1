// RUN: braid-opt --braid-partition="grid=dp=2,tp=2 plan=data" %s | FileCheck %s
// RUN: braid-run %s --grid dp=2,tp=2 --steps 2 --verify | FileCheck %s --check-prefix=VERIFY

// braid.softmax normalizes its last dimension, which its sharding rule keeps
// whole: after a column-parallel product (the user's annotation splits @up
// by column over tp) the partitioner gathers the columns before the softmax;
// rows stay split over dp. Executed on dp=2 x tp=2, the plan equals one rank.
// CHECK: braid.param @up {{.*}}braid.split = {{\[}}[], ["tp"]]} : tensor<8x8xf32>
// CHECK-LABEL: func.func @step(
// CHECK: %[[H:.*]] = braid.linear %{{.*}} : tensor<2x6x8xf32>, tensor<8x8xf32> -> tensor<2x6x8xf32>
// CHECK-NEXT: %[[G:.*]] = shard.all_gather %[[H]] on @grid grid_axes = [1] gather_axis = 2 : tensor<2x6x8xf32> -> tensor<2x6x16xf32>
// CHECK-NEXT: braid.softmax %[[G]] : tensor<2x6x16xf32>
// VERIFY: verify: PASS
module attributes {braid.model = {name = "softmax-mlp", family = "llama", vocab = 10 : i64, hidden = 8 : i64}} {
  shard.grid @grid(shape = 2x2)
  braid.param @wte normal(2.000000e-02) : tensor<10x8xf32>
  braid.param @up normal(2.000000e-02) : tensor<8x16xf32>
  braid.param @down normal(2.000000e-02) : tensor<16x8xf32>
  func.func @step(%tokens: tensor<4x6xi32>, %labels: tensor<4x6xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tokens, %wte : tensor<4x6xi32>, tensor<10x8xf32> -> tensor<4x6x8xf32>
    %up = braid.get_param @up : tensor<8x16xf32>
    %col = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
    %upc = shard.shard %up to %col annotate_for_users : tensor<8x16xf32>
    %down = braid.get_param @down : tensor<16x8xf32>
    %h = braid.linear %h0, %upc : tensor<4x6x8xf32>, tensor<8x16xf32> -> tensor<4x6x16xf32>
    %p = braid.softmax %h : tensor<4x6x16xf32>
    %y = braid.linear %p, %down : tensor<4x6x16xf32>, tensor<16x8xf32> -> tensor<4x6x8xf32>
    %r = braid.add %h0, %y : tensor<4x6x8xf32>
    %logits = braid.linear %r, %wte transpose_weight : tensor<4x6x8xf32>, tensor<10x8xf32> -> tensor<4x6x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<4x6x10xf32>, tensor<4x6xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
