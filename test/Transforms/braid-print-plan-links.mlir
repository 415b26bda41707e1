// RUN: braid-opt %s --braid-print-plan="link=tp:10us,1GB/s;dp:100us,100MB/s calibration=roofline" -split-input-file -o /dev/null | FileCheck %s
// RUN: braid-opt %s --braid-print-plan="link=pp:10us,10GB/s calibration=roofline" -split-input-file -o /dev/null | FileCheck %s --check-prefix=PIPE
// RUN: not braid-opt %s --braid-print-plan="link=dp:1ms" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not braid-opt %s --braid-print-plan="link=dp:1ms,fast" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNIT
// RUN: not braid-opt %s --braid-print-plan="link=ep:1ms,1GB/s" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not braid-opt %s --braid-print-plan="link=dp:inf,1GB/s" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=INF
// RUN: not braid-opt %s --braid-print-plan="link=dp:1us,1e-300GB/s" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=SLOW

// link=: transfers take the times of the links per grid axis
// (braid/link_model.h, what the CPU ranks' BRAID_LINK charges), each group's
// on its own link. A 1 MiB all-reduce over tp (2 ranks): 2 steps of 10 us
// and 2 (n-1)/n x 1048576 bytes at 1 GB/s, 1068.6 us; the same over dp at
// 100 us and 100 MB/s: 200 + 10485.8 = 10685.8 us. Both start at once, on
// their own links: waited for in turn, tp's exposes 1068.6 us and dp's the
// rest of its 10685.8 (one stream for both would end at 11754.3 us).
module {
  shard.grid @grid(shape = 1x2x2) {braid.axes = ["pp", "dp", "tp"]}
  func.func @step(%a: tensor<262144xf32>, %b: tensor<262144xf32>) -> (tensor<262144xf32>, tensor<262144xf32>) {
    %x, %tx = dist.all_reduce %a on @grid grid_axes = [2] reduction = sum : tensor<262144xf32> -> tensor<262144xf32>
    %y, %ty = dist.all_reduce %b on @grid grid_axes = [1] reduction = sum : tensor<262144xf32> -> tensor<262144xf32>
    dist.wait %tx
    dist.wait %ty
    return %x, %y : tensor<262144xf32>, tensor<262144xf32>
  }
}

// CHECK: transfer_time all_reduce over dp: 10685.8 us per step on h100-sxm with links tp:10us,1GB/s;dp:100us,100MB/s (link)
// CHECK: transfer_time all_reduce over tp: 1068.6 us per step on h100-sxm with links tp:10us,1GB/s;dp:100us,100MB/s (link)
// CHECK: exposed_time all_reduce over dp: 9617.2 us per step
// CHECK: exposed_time all_reduce over tp: 1068.6 us per step
// CHECK: exposed_time_per_step: 10685.8 us of 11754.3 us of transfers, step 10685.8 us

// SHAPE: error: --braid-print-plan: link='dp:1ms': 'dp:1ms' is not axis:latency,bandwidth
// UNIT: error: --braid-print-plan: link='dp:1ms,fast': bandwidth 'fast' of axis 'dp' is not a number with B/s, KB/s, MB/s or GB/s, at least 1 B/s
// AXIS: error: --braid-print-plan: link='ep:1ms,1GB/s': axis 'ep' is not an axis of the grid
// INF: error: --braid-print-plan: link='dp:inf,1GB/s': latency 'inf' of axis 'dp' is not a number with s, ms, us or ns, at most 1000 s
// SLOW: error: --braid-print-plan: link='dp:1us,1e-300GB/s': bandwidth '1e-300GB/s' of axis 'dp' is not a number with B/s, KB/s, MB/s or GB/s, at least 1 B/s

// -----

// A pipeline is simulated stage by stage together: stage 0 computes a
// 4096^3 product (138.9 us at the H100's bf16 peak) and sends its 64 MiB
// result to stage 1 (10 us + 67108864 bytes at 10 GB/s: 6720.9 us on stage
// 0's link; the send's own wait returns at once); stage 1's wait for it
// lasts 6859.8 us before its own product: 138.9 us for the neighbour's
// compute (the bubble), then 6720.9 us of exposed communication.
module attributes {braid.pipeline_entries = [@stage0, @stage1]} {
  shard.grid @grid(shape = 2x1x1) {braid.axes = ["pp", "dp", "tp"]}
  func.func @stage0(%x: tensor<4096x4096xf32>) {
    %y = braid.linear %x, %x : tensor<4096x4096xf32>, tensor<4096x4096xf32> -> tensor<4096x4096xf32>
    %t = dist.send %y to 1 on @grid grid_axes = [0] : tensor<4096x4096xf32>
    dist.wait %t
    return
  }
  func.func @stage1() -> tensor<4096x4096xf32> {
    %r, %t = dist.recv from 0 on @grid grid_axes = [0] : tensor<4096x4096xf32>
    dist.wait %t
    %z = braid.linear %r, %r : tensor<4096x4096xf32>, tensor<4096x4096xf32> -> tensor<4096x4096xf32>
    return %z : tensor<4096x4096xf32>
  }
}

// PIPE: stage 0: transfer_time send over pp: 6720.9 us per step on h100-sxm with links pp:10us,10GB/s (link)
// PIPE: stage 0: exposed_time send over pp: 0.0 us per step
// PIPE: stage 0: exposed_time_per_step: 0.0 us of 6720.9 us of transfers, step 138.9 us
// PIPE: stage 0: bubble_time_per_step: 0.0 us waiting for other stages' compute
// PIPE: stage 1: exposed_time send over pp: 6720.9 us per step
// PIPE: stage 1: exposed_time_per_step: 6720.9 us of 0.0 us of transfers, step 6998.7 us
// PIPE: stage 1: bubble_time_per_step: 138.9 us waiting for other stages' compute
