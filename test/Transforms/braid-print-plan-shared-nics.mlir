// RUN: braid-opt %s --braid-print-plan=hardware=%S/Inputs/cluster-shared-nics.json -o /dev/null | FileCheck %s
// RUN: not braid-opt %s --braid-print-plan=hardware=%S/Inputs/cluster-bad-nics.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// A node whose 8 GPUs share two 50 GB/s ports (100 GB/s): every dp group
// (one rank per node, 8 groups per node) reduces at once, each through one
// flow of the node's 100 GB/s: 12.5 GB/s. 64 MiB over dp=2: a ring of 2
// steps across the nodes, 8.4 + 2 x 9.6 = 27.6 us and 64 MiB at 12.5 GB/s
// (5368.7 us). The group over the whole grid, all 8 GPUs of each node, is
// the node's only flow: its rings leave the node through both ports
// (NCCL's channel per port), 100 GB/s: 8.4 + 28 x 3.4 + 2 x 9.6 us and
// 2 x 15/16 x 64 MiB at 100 GB/s (one port, 50 GB/s, would be 2639.4 us).
module {
  shard.grid @grid(shape = 2x8) {braid.axes = ["dp", "tp"]}
  func.func @step(%big: tensor<16777216xf32>) -> (tensor<16777216xf32>, tensor<16777216xf32>) {
    %r, %t0 = dist.all_reduce %big on @grid grid_axes = [0] reduction = sum : tensor<16777216xf32> -> tensor<16777216xf32>
    %a, %t1 = dist.all_reduce %big on @grid grid_axes = [0, 1] reduction = sum : tensor<16777216xf32> -> tensor<16777216xf32>
    dist.wait %t0, %t1
    return %r, %a : tensor<16777216xf32>, tensor<16777216xf32>
  }
}

// CHECK: transfer_time all_reduce over dp: 5396.3 us per step on shared-nics (ring)
// CHECK: transfer_time all_reduce over dp,tp: 1381.1 us per step on shared-nics (ring)
// BAD: error: --braid-print-plan: {{.*}}cluster-bad-nics.json: bad-nics: intra_node and inter_node need kind, bytes_per_s > 0 and step_latency_s >= 0 (and node_bytes_per_s > 0 if given)
