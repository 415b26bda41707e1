// RUN: braid-opt %s --braid-print-plan="hardware=%S/Inputs/cpu-one-core.json link=*:10us,1GB/s" -split-input-file -o /dev/null | FileCheck %s
// RUN: braid-opt %s --braid-print-plan="hardware=%S/Inputs/cpu-measured-rates.json link=*:10us,1GB/s" -split-input-file -o /dev/null | FileCheck %s --check-prefix=ALONE
// RUN: not braid-opt %s --braid-print-plan=hardware=%S/Inputs/cpu-bad-cores.json -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// CPU ranks on a machine with fewer cores than ranks (a description's
// host_cores) share them: an op computes at min(1, cores / ranks computing)
// of its rate. Two data-parallel ranks on one core compute in lockstep at
// half their rate: the 791.3 us of braid-print-plan-op-rates.mlir take
// 1582.7 us.
module {
  shard.grid @grid(shape = 2) {braid.axes = ["dp"]}
  func.func @step(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %y = braid.linear %x, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %z = braid.batch_matmul %y, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %s = braid.add %z, %x : tensor<64x64xf32>
    %r, %t = dist.all_reduce %s on @grid grid_axes = [0] reduction = sum : tensor<64x64xf32> -> tensor<64x64xf32>
    dist.wait %t
    return %r : tensor<64x64xf32>
  }
}

// CHECK: compute_shared: 2 ranks on 1 cores
// CHECK: exposed_time_per_step: {{.*}} (compute 1582.7 us at the roofline) on cpu-one-core
// ALONE-NOT: compute_shared
// ALONE: exposed_time_per_step: {{.*}} (compute 791.3 us at the roofline) on cpu-measured

// -----

// A pipeline's stages share the core while both compute, and a stage
// computes at the whole rate while its neighbour waits. Stage 0's
// batch_matmul (524.3 us of work) and stage 1's linear (262.1 us) begin
// together at half the rate: the linear ends at 524.3 us, when the
// batch_matmul has 262.1 us of work left, which it does alone by 786.4 us;
// its 16 KiB go in 26.4 us (10 us + 16384 bytes at 1 GB/s) and reach stage
// 1 at 812.8 us, which waited from 524.3 us: 262.1 us for stage 0's compute
// (the bubble), 26.4 us for the link, then its add (4.9 us) alone: it
// computed for 529.2 us of the clock, 267.1 us of work. Each
// rank alone (ALONE): stage 0 sends at 524.3 us, stage 1 waits from 262.1 us.
module attributes {braid.pipeline_entries = [@stage0, @stage1]} {
  shard.grid @grid(shape = 2x1x1) {braid.axes = ["pp", "dp", "tp"]}
  func.func @stage0(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) {
    %y = braid.batch_matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %t = dist.send %y to 1 on @grid grid_axes = [0] : tensor<64x64xf32>
    dist.wait %t
    return
  }
  func.func @stage1(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %y = braid.linear %x, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %r, %t = dist.recv from 0 on @grid grid_axes = [0] : tensor<64x64xf32>
    dist.wait %t
    %z = braid.add %r, %y : tensor<64x64xf32>
    return %z : tensor<64x64xf32>
  }
}

// CHECK: compute_shared: 2 ranks on 1 cores
// CHECK: stage 0: exposed_time_per_step: 0.0 us of 26.4 us of transfers, step 786.4 us (compute 786.4 us
// CHECK: stage 0: bubble_time_per_step: 0.0 us
// CHECK: stage 1: exposed_time_per_step: 26.4 us of 0.0 us of transfers, step 817.7 us (compute 529.2 us
// CHECK: stage 1: bubble_time_per_step: 262.1 us
// ALONE: stage 0: exposed_time_per_step: 0.0 us of 26.4 us of transfers, step 524.3 us (compute 524.3 us
// ALONE: stage 1: exposed_time_per_step: 26.4 us of 0.0 us of transfers, step 555.6 us (compute 267.1 us
// ALONE: stage 1: bubble_time_per_step: 262.1 us

// BAD: error: --braid-print-plan: {{.*}}cpu-bad-cores.json: cpu-bad-cores: host_cores must be an integer >= 1
