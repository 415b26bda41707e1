// RUN: braid-opt %S/schedule-overlap.mlir --braid-schedule-overlap="bucket-mb=0" -split-input-file -debug-only=braid-schedule-overlap -o /dev/null 2>&1 | FileCheck %s
// RUN: braid-opt %S/schedule-overlap-buckets.mlir --braid-schedule-overlap -split-input-file -debug-only=braid-schedule-overlap -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=dp=2 zero=3 schedule-overlap=false" | braid-opt --braid-schedule-overlap=memory-growth=1 -debug-only=braid-schedule-overlap -o /dev/null 2>&1 | FileCheck %s --check-prefix=PREFETCH

// -debug-only=braid-schedule-overlap says why each transfer moved where it
// did, and which of the scheduler's tries the memory budget kept.

// The first case of schedule-overlap.mlir: each gradient's all-reduce starts
// right after the layer's backward call that makes it (with the copy only it
// reads) and is waited for before the first update.
// CHECK: unscheduled peak: {{[0-9]+}} bytes live; a schedule may add memory-growth=0.05 of it
// CHECK: scheduling @step
// CHECK-NEXT: start of 'dist.all_reduce' at loc("{{.*}}schedule-overlap.mlir":44:16) goes right after 'func.call' at loc("{{.*}}schedule-overlap.mlir":40:11): it reads what that op makes
// CHECK-NEXT: start of 'dist.all_reduce' at loc("{{.*}}schedule-overlap.mlir":48:16) goes right after 'func.call' at loc("{{.*}}schedule-overlap.mlir":39:11): it reads what that op makes
// CHECK-NEXT: list schedule, {{.*}} s predicted:
// CHECK-NEXT: 'dist.all_reduce' at loc("{{.*}}schedule-overlap.mlir":48:16): starts after 'braid.mul' {{.*}}, waited for before 'braid.sgd_update' at loc("{{.*}}schedule-overlap.mlir":50:5)
// CHECK-NEXT: 'dist.all_reduce' at loc("{{.*}}schedule-overlap.mlir":44:16): starts after 'braid.mul' {{.*}}, waited for before 'braid.sgd_update' at loc("{{.*}}schedule-overlap.mlir":50:5)
// CHECK-NEXT: without buckets: peak {{[0-9]+}} bytes, budget {{[0-9]+}} bytes: fits

// The buckets' first case at the default memory-growth (5%): holding the
// gradients until their all-reduces complete costs more than the budget,
// with buckets or without, in every try.
// BUDGET: try: ZeRO-3 gathers in their layers, prefetch 1 call(s) ahead, compute moved after the starts it does not feed
// BUDGET: with buckets: peak {{[0-9]+}} bytes (largest bucket {{[0-9]+}} bytes), budget {{[0-9]+}} bytes: too much
// BUDGET: without buckets: peak {{[0-9]+}} bytes, budget {{[0-9]+}} bytes: too much
// BUDGET: try: ZeRO-3 gathers in their layers, prefetch 0 call(s) ahead, compute in program order
// BUDGET: no schedule fits the memory budget: every function keeps its order

// ZeRO-3: the layers' gathers, moved out of their functions, are
// prefetches: each starts one call ahead of the layer that reads it.
// PREFETCH: try: ZeRO-3 gathers out of their layers, prefetch 1 call(s) ahead
// PREFETCH: scheduling @step
// PREFETCH: start of 'dist.all_gather' {{.*}} goes right after 'func.call' {{.*}}: a prefetch of parameters starts a call ahead of its first use
// PREFETCH: kept with buckets
