// RUN: braid-opt %s --braid-schedule-overlap | FileCheck %s
// RUN: braid-opt %s --braid-schedule-overlap=move-compute=false | FileCheck %s --check-prefix=KEPT
// RUN: %python -m braid.models moe-tiny | braid-opt --braid-training-pipeline="grid=ep=2" | FileCheck %s --check-prefix=MOE

// A layer's backward: the weight gradient does not feed the input
// gradient's all-reduce, so it moves after the start and runs while the sum
// is in flight (Megatron overlaps them so); an op after the wait that does
// not read the sum moves before the wait; the call stays where it is (a
// layer moved would keep its activations live longer).
// CHECK-LABEL: func.func @backward
// CHECK:         %[[DX:.*]] = braid.linear %arg0, %arg2 transpose_weight
// CHECK-NEXT:    %[[S:.*]], %[[T:.*]] = dist.all_reduce %[[DX]]
// CHECK-NEXT:    %[[DW:.*]] = braid.batch_matmul %arg1, %arg0 transpose_a
// CHECK-NEXT:    %[[G:.*]] = braid.mul %arg3, %arg3
// CHECK-NEXT:    dist.wait %[[T]]
// CHECK-NEXT:    %[[H:.*]] = braid.mul %[[S]], %[[S]]
// CHECK-NEXT:    %[[C:.*]] = call @layer(%arg3)
// CHECK-NEXT:    return %[[DW]], %[[H]], %[[G]], %[[C]]

// KEPT-LABEL: func.func @backward
// KEPT:         braid.batch_matmul
// KEPT-NEXT:    %[[DX:.*]] = braid.linear %arg0, %arg2 transpose_weight
// KEPT-NEXT:    %{{.*}}, %[[T:.*]] = dist.all_reduce %[[DX]]
// KEPT-NEXT:    dist.wait %[[T]]
// KEPT-NEXT:    braid.mul
// KEPT-NEXT:    braid.mul %arg3, %arg3

// What already hides a wait the transfer needs stays before it: the
// product runs while the first all-reduce is in flight, not after the
// all-gather of its result starts.
// CHECK-LABEL: func.func @hidden
// CHECK:         %[[A:.*]], %[[TA:.*]] = dist.all_reduce %arg0
// CHECK-NEXT:    %[[Q:.*]] = braid.linear %arg0, %arg0
// CHECK-NEXT:    dist.wait %[[TA]]
// CHECK-NEXT:    %{{.*}}, %[[TB:.*]] = dist.all_gather %[[A]]

// An expert layer's backward (moe-tiny on ep=2): the router's gradient
// runs while the all-to-all of the combine's gradient moves, the experts'
// weight gradients while the all-to-all of the input gradient does, which
// only the dispatch's gradient waits for.
// MOE-LABEL: func.func private @moe_layer.bwd
// MOE:         %{{.*}}, %[[T0:.*]] = dist.all_to_all
// MOE:         braid.router_grad
// MOE:         dist.wait %[[T0]]
// MOE:         %{{.*}}, %[[T:.*]] = dist.all_to_all
// MOE-NEXT:    braid.batch_matmul {{.*}} transpose_a
// MOE-NEXT:    braid.batch_matmul {{.*}} transpose_a
// MOE-NEXT:    braid.batch_matmul {{.*}} transpose_a
// MOE-NEXT:    dist.wait %[[T]]
// MOE-NEXT:    braid.reshape
// MOE-NEXT:    braid.dispatch_grad

module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func private @layer(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %y = braid.linear %x, %x : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    return %y : tensor<8x8xf32>
  }
  func.func @backward(%dy: tensor<8x8xf32>, %x: tensor<8x8xf32>, %w: tensor<8x8xf32>, %r: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
    %dw = braid.batch_matmul %x, %dy transpose_a : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    %dx = braid.linear %dy, %w transpose_weight : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    %s, %t = dist.all_reduce %dx on @grid grid_axes = [0] reduction = sum : tensor<8x8xf32> -> tensor<8x8xf32>
    dist.wait %t
    %h = braid.mul %s, %s : tensor<8x8xf32>
    %g = braid.mul %r, %r : tensor<8x8xf32>
    %c = func.call @layer(%r) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %dw, %h, %g, %c : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
  func.func @hidden(%x: tensor<8x8xf32>) -> (tensor<16x8xf32>, tensor<8x8xf32>) {
    %q = braid.linear %x, %x : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    %a, %ta = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<8x8xf32> -> tensor<8x8xf32>
    dist.wait %ta
    %b, %tb = dist.all_gather %a on @grid grid_axes = [0] gather_axis = 0 : tensor<8x8xf32> -> tensor<16x8xf32>
    dist.wait %tb
    return %b, %q : tensor<16x8xf32>, tensor<8x8xf32>
  }
}
