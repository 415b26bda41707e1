// RUN: braid-opt --braid-partition="grid=dp=2,tp=2 plan=data" %s | FileCheck %s

// An op Braid has no rule for gets one from upstream MLIR's
// shard::ShardingInterface (here linalg's, for a tanh that
// --raise-linalg-to-braid would not raise): its parallel loops are factors
// like an elementwise braid op's, so the column split of @up's annotation
// carries through it to @down's rows, with one all-reduce over tp after
// the second product and none around the tanh.

// CHECK: braid.param @up {{.*}}braid.split = {{\[}}[], ["tp"]]} : tensor<8x8xf32>
// CHECK: braid.param @down {{.*}}braid.split = {{\[}}["tp"], []]} : tensor<8x8xf32>
// CHECK-LABEL: func.func @step(
// CHECK: %[[H:.*]] = braid.linear %{{.*}} : tensor<2x6x8xf32>, tensor<8x8xf32> -> tensor<2x6x8xf32>
// CHECK-NOT: shard.all
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[H]] : tensor<2x6x8xf32>) outs(%{{.*}} : tensor<2x6x8xf32>)
// CHECK: math.tanh
// CHECK: } -> tensor<2x6x8xf32>
// CHECK-NOT: shard.all
// CHECK: %[[Y:.*]] = braid.linear %[[T]], %{{.*}} : tensor<2x6x8xf32>, tensor<8x8xf32> -> tensor<2x6x8xf32>
// CHECK-NEXT: shard.all_reduce %[[Y]] on @grid grid_axes = [1]

module attributes {braid.model = {name = "mlp", family = "llama", vocab = 10 : i64, hidden = 8 : i64}} {
  shard.grid @grid(shape = 2x2)
  braid.param @wte normal(2.000000e-02) : tensor<10x8xf32>
  braid.param @up normal(2.000000e-02) : tensor<8x16xf32>
  braid.param @down normal(2.000000e-02) : tensor<16x8xf32>
  func.func @step(%tokens: tensor<4x6xi32>, %labels: tensor<4x6xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h0 = braid.embedding %tokens, %wte : tensor<4x6xi32>, tensor<10x8xf32> -> tensor<4x6x8xf32>
    %u_read = braid.get_param @up : tensor<8x16xf32>
    %column = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
    %u = shard.shard %u_read to %column : tensor<8x16xf32>
    %d = braid.get_param @down : tensor<16x8xf32>
    %h = braid.linear %h0, %u : tensor<4x6x8xf32>, tensor<8x16xf32> -> tensor<4x6x16xf32>
    %e = tensor.empty() : tensor<4x6x16xf32>
    %t = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%h : tensor<4x6x16xf32>) outs(%e : tensor<4x6x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = math.tanh %x : f32
      linalg.yield %y : f32
    } -> tensor<4x6x16xf32>
    %y = braid.linear %t, %d : tensor<4x6x16xf32>, tensor<16x8xf32> -> tensor<4x6x8xf32>
    %logits = braid.linear %y, %wte transpose_weight : tensor<4x6x8xf32>, tensor<10x8xf32> -> tensor<4x6x10xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<4x6x10xf32>, tensor<4x6xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
