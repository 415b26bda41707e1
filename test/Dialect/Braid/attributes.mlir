// RUN: braid-opt %s | braid-opt | FileCheck %s
//
// Each discardable braid.* attribute where it belongs (BraidBase.td's
// discardableAttrs) verifies and round-trips.

// CHECK: module attributes {braid.model = {family = "gpt", name = "m"}, braid.pipeline_entries = [@rank0], braid.zero = 1 : i64, braid.zigzag_axis = "cp"}
module attributes {braid.model = {name = "m", family = "gpt"}, braid.zero = 1 : i64, braid.zigzag_axis = "cp", braid.pipeline_entries = [@rank0]} {
  // CHECK: shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "cp"]}
  shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "cp"]}
  // CHECK: braid.param @w normal(2.000000e-02) {braid.global_shape = array<i64: 8, 4>, braid.split = {{\[\[}}"dp"], []], braid.zero_axes = ["dp"]} : tensor<4x4xf32>
  braid.param @w normal(0.02) {braid.split = [["dp"], []], braid.global_shape = array<i64: 8, 4>, braid.zero_axes = ["dp"]} : tensor<4x4xf32>
  // CHECK: braid.state @m zeros {braid.global_shape = array<i64: 8, 4>, braid.split = {{\[\[}}"dp"], []]} : tensor<4x4xf32>
  braid.state @m zeros {braid.split = [["dp"], []], braid.global_shape = array<i64: 8, 4>} : tensor<4x4xf32>

  // CHECK: func.func private @fin() attributes {braid.pipeline_chunk}
  func.func private @fin() attributes {braid.pipeline_chunk} {
    return
  }

  // CHECK-LABEL: func.func @rank0
  // CHECK-SAME: braid.global_shape = array<i64: 8, 4>
  // CHECK-SAME: braid.entry = "train_step"
  // CHECK-SAME: braid.finish = @fin
  // CHECK-SAME: braid.gradient_copies = array<i64: 1>
  // CHECK-SAME: braid.gradients = [@w]
  // CHECK-SAME: braid.microbatches = 2 : i64
  // CHECK-SAME: braid.peak_live_microbatches = 1 : i64
  // CHECK-SAME: braid.pipeline = {pp = 1 : i64}
  // CHECK-SAME: braid.pipeline_rank = 0 : i64
  func.func @rank0(%x: tensor<4x4xf32> {braid.split = [["dp"], []], braid.global_shape = array<i64: 8, 4>}) -> tensor<4x4xf32> attributes {braid.entry = "train_step", braid.finish = @fin, braid.gradients = [@w], braid.gradient_copies = array<i64: 1>, braid.microbatches = 2 : i64, braid.pipeline = {pp = 1 : i64}, braid.pipeline_rank = 0 : i64, braid.peak_live_microbatches = 1 : i64} {
    // CHECK: braid.gelu %{{.*}} {braid.backward, braid.result_layouts = [{braid.global_shape = array<i64: 8, 4>, braid.partial = ["cp"], braid.split = {{\[\[}}"dp"], []]}], braid.stage = 0 : i64}
    %y = braid.gelu %x {braid.stage = 0 : i64, braid.backward, braid.result_layouts = [{braid.global_shape = array<i64: 8, 4>, braid.split = [["dp"], []], braid.partial = ["cp"]}]} : tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
}
