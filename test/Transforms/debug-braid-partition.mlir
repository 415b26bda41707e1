// RUN: braid-opt %S/braid-partition.mlir --braid-partition="grid=dp=2,tp=2" -debug-only=braid-partition -o /dev/null 2>&1 | FileCheck %s
// RUN: braid-opt %S/braid-partition.mlir --braid-partition="grid=dp=2 zero=3" -debug-only=braid-partition -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO3
// RUN: braid-opt %S/braid-partition.mlir --braid-partition="grid=dp=2,tp=2" -debug-only=braid-autodiff -o /dev/null 2>&1 | count 0
// RUN: braid-opt %S/braid-partition.mlir --braid-partition="grid=dp=2,tp=2" -o /dev/null 2>&1 | count 0

// -debug-only=braid-partition explains the partitioner's decisions on the
// model of braid-partition.mlir (dp=2 x tp=2, the megatron plan). Other
// debug types, and no option, print nothing.

// Why a dimension has its axes: the plan seeds the column-parallel weight
// (the up projection reads the norm's output), which ties the down
// projection's rows to it; the down projection itself is left to that.
// CHECK: seed: dimension 0 of @wte (a class of {{[0-9]+}} tied dimensions) split over tp: the megatron plan (vocabulary-parallel embedding)
// CHECK: seed: dimension 1 of argument #2 of @layer (a class of 8 tied dimensions) split over tp: the megatron plan (column-parallel weight of the linear at loc("{{.*}}braid-partition.mlir":89:10))
// CHECK-NEXT: the megatron plan leaves the linear at loc("{{.*}}braid-partition.mlir":91:10) to propagation: its input is no norm's output; its weight is split as the dimensions tied to it are
// CHECK: seed: dimension 0 of argument #0 of @step (a class of {{[0-9]+}} tied dimensions) split over dp: the batch split over dp
// CHECK: parameter @l0.down: stored [tp, -]
// CHECK-NEXT: dimension 0 over tp: its class seeded by the megatron plan (column-parallel weight of the linear at loc("{{.*}}braid-partition.mlir":89:10))
// CHECK: input #0 of @step: [dp, -]

// How each op is split, and why a collective is inserted: the row-parallel
// linear's reduction over tp leaves partial sums, which the residual add
// needs whole.
// CHECK: 'braid.linear' at loc("{{.*}}braid-partition.mlir":91:10):
// CHECK-NEXT: factor #0 (parallel, dimension 0 of 'braid.gelu' {{.*}}) over dp (its class seeded by the batch split over dp)
// CHECK-NEXT: factor #2 (reduction, dimension 2 of 'braid.gelu' {{.*}}) over tp (its class seeded by the megatron plan
// CHECK-NEXT: results partial over tp
// CHECK: reshard 'braid.linear' at loc("{{.*}}braid-partition.mlir":91:10) for 'braid.add' at loc("{{.*}}braid-partition.mlir":92:10): it is [dp, -, -] partial(tp), the op needs [dp, -, -]: shard.all_reduce over tp
// The loss: partial over dp (each rank's share of the batch), summed for the return.
// CHECK: reshard 'braid.cross_entropy' {{.*}} for 'func.return' {{.*}}: it is [] partial(dp), the op needs []: shard.all_reduce over dp

// ZeRO-3 stores each parameter split over dp on the first dimension dp
// divides.
// ZERO3: ZeRO-3: parameter @wte stored split over dp on dimension 0, the first whose local size (10) dp=2 divides
// ZERO3: ZeRO-3: parameter @l0.norm stored split over dp on dimension 0, the first whose local size (8) dp=2 divides
