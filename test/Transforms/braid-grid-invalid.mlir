// RUN: braid-opt %s --braid-print-plan -split-input-file -verify-diagnostics -o /dev/null
// RUN: braid-opt %s --braid-schedule-overlap -split-input-file -verify-diagnostics -o /dev/null
// RUN: braid-opt %s --dist-check-collective-order -split-input-file -verify-diagnostics -o /dev/null
// RUN: braid-opt %s --braid-partition="grid=dp=2" -split-input-file -verify-diagnostics -o /dev/null

// The grid of a partitioned module (Grid::of) is read by every pass after
// partitioning: the upstream verifier admits an axis of size 0 or ?, which
// would divide shapes by 0 or by ShapedType::kDynamic. Each pass rejects it
// at the grid.
module attributes {braid.pipeline_entries = [@step]} {
  // expected-error @+1 {{grid axis 1 (tp) has size 0: a partitioned module's grid needs static sizes of at least 1}}
  shard.grid @grid(shape = 2x0) {braid.axes = ["dp", "tp"]}
  func.func @step(%x: tensor<8xf32>) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}

// -----

module attributes {braid.pipeline_entries = [@step]} {
  // expected-error @+1 {{grid axis 0 (dp) has size ?: a partitioned module's grid needs static sizes of at least 1}}
  shard.grid @grid(shape = ?x2) {braid.axes = ["dp", "tp"]}
  func.func @step(%x: tensor<8xf32>) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}
