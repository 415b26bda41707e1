// RUN: braid-opt %s --braid-print-plan=calibration=roofline -split-input-file -o /dev/null | FileCheck %s
// RUN: braid-opt %s --braid-schedule-overlap --braid-print-plan=calibration=roofline -split-input-file -o /dev/null | FileCheck %s --check-prefix=SCHEDULED
// RUN: braid-opt %s --braid-print-plan -split-input-file -o /dev/null | FileCheck %s --check-prefix=CALIBRATED
// RUN: not braid-opt %s --braid-print-plan=calibration=tpu-v9 -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADCAL
// RUN: braid-opt %s --braid-print-plan=hardware=a100-sxm -split-input-file -o /dev/null | FileCheck %s --check-prefix=A100
// RUN: braid-opt %s --braid-print-plan=hardware=%S/Inputs/cluster-slow-net.json -split-input-file -o /dev/null | FileCheck %s --check-prefix=FILE
// RUN: not braid-opt %s --braid-print-plan=hardware=%S/Inputs/cluster-no-sources.json -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNSOURCED
// RUN: not braid-opt %s --braid-print-plan=hardware=%S/Inputs/missing.json -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not braid-opt %s --braid-print-plan=hardware=tpu-v5 -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// The cost model's time of each dist transfer (lib/CostModel/CommCost.h) on
// two nodes of eight GPUs: dp=2 over the nodes, tp=8 inside one. On
// h100-sxm a collective costs 8.4 us, a step over NVLink 3.4 us at 450 GB/s,
// one over InfiniBand 9.6 us at 50 GB/s per port; a ring of a group with r
// ranks on each node crosses nodes r ports wide (NCCL's channel per port).
module {
  shard.grid @grid(shape = 2x8) {braid.axes = ["dp", "tp"]}
  func.func @step(%big: tensor<16777216xf32>, %one: tensor<1xf32>, %rows: tensor<1x1048576xf32>, %a: tensor<16x65536xf32>) -> (tensor<16777216xf32>, tensor<1xf32>, tensor<8x1048576xf32>, tensor<16x65536xf32>, tensor<1xf32>) {
    // 64 MiB over all 16 ranks, 8 on each node (8 ports, 400 GB/s): a ring
    // of 30 steps, 2 across the nodes, 8.4 + 28 x 3.4 + 2 x 9.6 = 122.8 us
    // and 2 x 15/16 x 64 MiB at 400 GB/s (314.6 us), 437.4 us; the tree
    // takes 75.2 + 2 x 64 MiB / 400 GB/s = 410.7 us, which NCCL would choose.
    %r, %t0 = dist.all_reduce %big on @grid grid_axes = [0, 1] reduction = sum : tensor<16777216xf32> -> tensor<16777216xf32>
    dist.wait %t0
    // 4 bytes between the two nodes: 8.4 + 2 x 9.6 = 27.6 us (a tree of
    // two nodes is no faster).
    %s, %t1 = dist.all_reduce %one on @grid grid_axes = [0] reduction = sum : tensor<1xf32> -> tensor<1xf32>
    dist.wait %t1
    // 4 MiB gathered to 32 MiB over tp (one node): 8.4 + 7 x 3.4 = 32.2 us,
    // 7/8 x 32 MiB at 450 GB/s = 65.2 us.
    %g, %t2 = dist.all_gather %rows on @grid grid_axes = [1] gather_axis = 0 : tensor<1x1048576xf32> -> tensor<8x1048576xf32>
    dist.wait %t2
    // 4 MiB exchanged over all 16: blocks of 256 KiB, 8 to the other node
    // through the rank's own port at 50 GB/s (41.9 us) while 7 stay on
    // NVLink; 8.4 + 15 x 9.6 = 152.4.
    %e, %t3 = dist.all_to_all %a on @grid grid_axes = [0, 1] split_axis = 0 concat_axis = 0 : tensor<16x65536xf32> -> tensor<16x65536xf32>
    dist.wait %t3
    // Twice over tp, 4 bytes: 2 x (8.4 + 14 x 3.4) = 112.0 us.
    %m, %t4 = dist.all_reduce %one on @grid grid_axes = [1] reduction = max : tensor<1xf32> -> tensor<1xf32>
    %m2, %t5 = dist.all_reduce %one on @grid grid_axes = [1] reduction = sum : tensor<1xf32> -> tensor<1xf32>
    dist.wait %t4, %t5
    return %r, %s, %g, %e, %m : tensor<16777216xf32>, tensor<1xf32>, tensor<8x1048576xf32>, tensor<16x65536xf32>, tensor<1xf32>
  }
}

// CHECK: collective all_reduce over dp: 1 per step, 4 bytes sent per rank
// CHECK: collective all_reduce over dp,tp: 1 per step, 125829120 bytes sent per rank
// CHECK: transfer_time all_gather over tp: 97.4 us per step on h100-sxm (ring)
// CHECK: transfer_time all_reduce over dp: 27.6 us per step on h100-sxm (ring)
// CHECK: transfer_time all_reduce over dp,tp: 410.7 us per step on h100-sxm (tree)
// CHECK: transfer_time all_reduce over tp: 112.0 us per step on h100-sxm (ring)
// CHECK: transfer_time all_to_all over dp,tp: 194.3 us per step on h100-sxm (pairwise)
// CHECK: transfer_time_per_step: 842.1 us on h100-sxm

// -----

// A few bytes over all 16 ranks: the ring's 30 steps take 122.8 us, a tree
// 8.4 + 2 x (7 x 3.4 + log2(2) x 9.6) = 75.2 us, which NCCL would choose.
module {
  shard.grid @grid(shape = 2x8) {braid.axes = ["dp", "tp"]}
  func.func @step(%one: tensor<1xf32>) -> tensor<1xf32> {
    %s, %t = dist.all_reduce %one on @grid grid_axes = [0, 1] reduction = sum : tensor<1xf32> -> tensor<1xf32>
    dist.wait %t
    return %s : tensor<1xf32>
  }
}

// CHECK: transfer_time all_reduce over dp,tp: 75.2 us per step on h100-sxm (tree)

// -----

// A broadcast of 64 MiB over tp (one node): a chain of 7 NVLink steps,
// 8.4 + 7 x 3.4 = 32.2 us, and the whole buffer at 450 GB/s (149.1 us); a
// rank sends 7/8 of it on average.
module {
  shard.grid @grid(shape = 2x8) {braid.axes = ["dp", "tp"]}
  func.func @step(%big: tensor<16777216xf32>) -> tensor<16777216xf32> {
    %b, %t = dist.broadcast %big on @grid grid_axes = [1] root = 0 : tensor<16777216xf32> -> tensor<16777216xf32>
    dist.wait %t
    return %b : tensor<16777216xf32>
  }
}

// CHECK: collective broadcast over tp: 1 per step, 58720256 bytes sent per rank
// CHECK: transfer_time broadcast over tp: 181.3 us per step on h100-sxm (ring)

// On a100-sxm, HDR InfiniBand at 25 GB/s a port: the big reduction's tree,
// 75.2 + 2 x 64 MiB / 200 GB/s.
// A100: transfer_time all_reduce over dp,tp: 746.3 us per step on a100-sxm (tree)

// A description of one's own, in a file: a tenth of the network bandwidth,
// where the ring is faster than the tree: 122.8 + 2 x 15/16 x 64 MiB / 40 GB/s.
// FILE: transfer_time all_reduce over dp,tp: 3268.5 us per step on slow-net (ring)
// UNSOURCED: error: --braid-print-plan: {{.*}}cluster-no-sources.json: unsourced: a description cites its sources
// MISSING: error: --braid-print-plan: cannot read {{.*}}missing.json: No such file or directory

// BAD: error: --braid-print-plan: no hardware description 'tpu-v5' (known: a100-sxm, h100-sxm, h200-sxm)

// -----

// The simulated step: a 4-byte all-reduce over dp (27.6 us, as above) waited
// for at once, then a 4096^3 product: 1.374e11 FLOPs at the bf16 peak of
// 989.4 TFLOP/s, 138.9 us (its 201 MB at 3.35 TB/s would take 60.1 us). The
// whole reduction is exposed; scheduled, its wait moves past the product,
// which hides it.
module {
  shard.grid @grid(shape = 2x8) {braid.axes = ["dp", "tp"]}
  func.func @step(%one: tensor<1xf32>, %x: tensor<4096x4096xf32>) -> (tensor<1xf32>, tensor<4096x4096xf32>) {
    %s, %t = dist.all_reduce %one on @grid grid_axes = [0] reduction = sum : tensor<1xf32> -> tensor<1xf32>
    dist.wait %t
    %y = braid.linear %x, %x : tensor<4096x4096xf32>, tensor<4096x4096xf32> -> tensor<4096x4096xf32>
    return %s, %y : tensor<1xf32>, tensor<4096x4096xf32>
  }
}

// CHECK: exposed_time all_reduce over dp: 27.6 us per step on h100-sxm
// CHECK: exposed_time_per_step: 27.6 us of 27.6 us of transfers, step 166.5 us (compute 138.9 us at the roofline) on h100-sxm
// SCHEDULED: exposed_time_per_step: 0.0 us of 27.6 us of transfers, step 138.9 us (compute 138.9 us at the roofline) on h100-sxm

// By default compute runs at the rates of the hardware's calibration
// (lib/CostModel/calibration/h100-sxm.json), the planner's: the product at
// 0.66 of the peak times q(4096)^3 = (4096 / (4096 + 64))^3 = 0.9545, 623.3
// TFLOP/s, 220.5 us (its memory floor 100.7 MB at 0.6 x 3.35 TB/s, 50.1 us),
// and a launch of 3 us.
// CALIBRATED: exposed_time_per_step: 27.6 us of 27.6 us of transfers, step 251.1 us (compute 223.5 us at h100-sxm's calibration) on h100-sxm
// BADCAL: error: --braid-print-plan: no compute calibration 'tpu-v9' (known: a100-sxm, h100-sxm, h200-sxm-braid, h200-sxm)
