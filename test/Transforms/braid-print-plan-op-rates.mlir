// RUN: braid-opt %s --braid-print-plan=hardware=%S/Inputs/cpu-measured-rates.json -o /dev/null | FileCheck %s
// RUN: not braid-opt %s --braid-print-plan=hardware=%S/Inputs/cpu-bad-rate.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// A description of CPU ranks may give the measured rate of each kind of
// product (bench/overlap/overlap.py fits them from a run's trace): those
// ops take their FLOPs at that rate, the others the roofline of the peak
// and the bandwidth. Here a linear of 2 x 64^3 FLOPs takes 262.1 us at
// 2 GFLOP/s (52.4 us at the 10 GFLOP/s peak), a batch_matmul of as many
// 524.3 us at 1 GFLOP/s, and the add the 48 KiB it reads and writes at
// 10 GB/s (4.9 us).
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

// CHECK: exposed_time_per_step: {{.*}} (compute 791.3 us at the roofline) on cpu-measured
// BAD: error: --braid-print-plan: {{.*}}cpu-bad-rate.json: cpu-bad-rate: op_flops_per_s.linear must be a rate > 0
