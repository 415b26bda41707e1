// RUN: braid-opt %S/braid-autodiff.mlir --braid-autodiff -debug-only=braid-autodiff -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: braid-opt %S/braid-autodiff.mlir --braid-autodiff=recompute=selective -debug-only=braid-autodiff -o /dev/null 2>&1 | FileCheck %s --check-prefix=SEL
// RUN: braid-opt %S/braid-autodiff.mlir --braid-autodiff=recompute=full -debug-only=braid-autodiff -o /dev/null 2>&1 | FileCheck %s --check-prefix=FULL
// RUN: braid-opt %S/braid-partition.mlir --braid-partition=grid=dp=2,tp=2 --braid-autodiff -debug-only=braid-autodiff -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARE

// -debug-only=braid-autodiff says what recompute keeps, on the layer of
// braid-autodiff.mlir (a projection, attention, a product, a residual add).

// none: the backward redoes nothing but free views; the forward saves q's
// heads and the attention output (read by the product's backward).
// NONE: layer @layer, recompute=none: 6 forward ops
// NONE-NEXT: redone in the backward: 0 parameter reads, 0 gathers of sharded arguments {{.*}}, 0 views of arguments or redone values (free), 0 attention cores
// NONE-NEXT: saved for the backward: 2 values, 512 bytes: 2 x braid.reshape

// selective: attention is redone, and the view of its output with it; only
// q's heads are saved.
// SEL: layer @layer, recompute=selective: 6 forward ops
// SEL-NEXT: redone in the backward: 0 parameter reads, 0 gathers of sharded arguments {{.*}}, 1 views of arguments or redone values (free), 1 attention cores
// SEL-NEXT: saved for the backward: 1 values, 256 bytes: 1 x braid.reshape

// full: nothing is saved.
// FULL: layer @layer, recompute=full: 6 forward ops; the forward saves nothing, @layer.bwd redoes them all
// FULL-NOT: saved for the backward

// On dp=2 x tp=2 each of the 4 ranks differentiates a quarter of the loss.
// SHARE: the loss's cotangent is 0.25: every rank holding a copy of the loss differentiates its share
