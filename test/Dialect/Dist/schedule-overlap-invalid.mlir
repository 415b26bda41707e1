// RUN: braid-opt %s --braid-schedule-overlap=hardware=tpu-v9 -verify-diagnostics -o /dev/null
// RUN: not braid-opt %s "--braid-schedule-overlap=link=dp:fast" 2>&1 | FileCheck %s --check-prefix=LINK

// The list scheduler's timing model: an unknown hardware description, and
// links that do not parse, are located errors.
// LINK: schedule-overlap-invalid.mlir:[[@LINE+2]]:1: error: --braid-schedule-overlap: link=: 'dp:fast' is not axis:latency,bandwidth
// expected-error @+1 {{--braid-schedule-overlap: no hardware description 'tpu-v9' (known: a100-sxm, h100-sxm, h200-sxm)}}
module {
  shard.grid @grid(shape = 2) {braid.axes = ["dp"]}
  func.func @step(%x: tensor<8xf32>) -> tensor<8xf32> {
    %r, %t = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<8xf32> -> tensor<8xf32>
    dist.wait %t
    return %r : tensor<8xf32>
  }
}
