// The test pass that breaks a partitioned program on purpose (the negative
// tests of braid-run --verify, test/Integration/verify-negative.py): each
// fault edits the first op it applies to, and a module without one is an
// error rather than a test that injects nothing.
// RUN: %python -m braid.models llama-tiny | braid-opt --braid-training-pipeline="grid=dp=2,tp=2 lower-to-dist=false" --braid-test-inject-fault=kind=drop-all-reduce | FileCheck %s --check-prefix=DROP
// RUN: %python -m braid.models llama-tiny | braid-opt --braid-training-pipeline="grid=dp=2,tp=2 lower-to-dist=false" --braid-test-inject-fault=kind=wrong-axis | FileCheck %s --check-prefix=AXIS
// RUN: %python -m braid.models mamba-tiny | braid-opt --braid-training-pipeline="grid=cp=2 lower-to-dist=false" --braid-test-inject-fault=kind=drop-state-carry | FileCheck %s --check-prefix=CARRY
// RUN: %python -m braid.models llama-tiny | braid-opt --braid-training-pipeline="grid=dp=2 zero=1 lower-to-dist=false" --braid-test-inject-fault=kind=zero-offset | FileCheck %s --check-prefix=ZERO
// RUN: %python -m braid.models llama-tiny --batch 4 | braid-opt --braid-training-pipeline="grid=pp=2 microbatches=2 lower-to-dist=false" --braid-test-inject-fault=kind=swap-microbatches | FileCheck %s --check-prefix=SWAP
// RUN: %python -m braid.models llama-tiny | braid-opt --braid-training-pipeline="grid=dp=2 lower-to-dist=false" --braid-test-inject-fault=kind=corrupt-replica | FileCheck %s --check-prefix=REPLICA
// RUN: %python -m braid.models llama-tiny | braid-opt --braid-training-pipeline="grid=cp=2 cp-attention=ring lower-to-dist=false" --braid-test-inject-fault=kind=skip-ring-step | FileCheck %s --check-prefix=RING
// RUN: %python -m braid.models llama-tiny | braid-opt --braid-training-pipeline="grid=cp=2 cp-attention=ring lower-to-dist=false" --braid-test-inject-fault=kind=skip-ring-step --convert-braid-to-dist | braid-translate --braid-to-cpp | FileCheck %s --check-prefix=RING-EMIT
// RUN: %python -m braid.models llama-tiny | not braid-opt --braid-training-pipeline="grid=tp=2 lower-to-dist=false" --braid-test-inject-fault=kind=wrong-axis 2>&1 | FileCheck %s --check-prefix=ONE-AXIS
// RUN: %python -m braid.models llama-tiny | braid-opt --braid-training-pipeline="grid=dp=2 zero=2 lower-to-dist=false" --braid-test-inject-fault=kind=zero-offset | FileCheck %s --check-prefix=ZERO
// RUN: %python -m braid.models llama-tiny | not braid-opt --braid-training-pipeline="grid=dp=2 lower-to-dist=false" --braid-test-inject-fault=kind=zero-offset 2>&1 | FileCheck %s --check-prefix=NO-ZERO
// RUN: %python -m braid.models llama-tiny | not braid-opt --braid-training-pipeline="grid=tp=2 lower-to-dist=false" --braid-test-inject-fault=kind=drop-state-carry 2>&1 | FileCheck %s --check-prefix=NO-SCAN
// RUN: %python -m braid.models llama-tiny | not braid-opt --braid-training-pipeline="grid=dp=2 lower-to-dist=false" --braid-test-inject-fault=kind=swap-microbatches 2>&1 | FileCheck %s --check-prefix=NO-MB
// RUN: %python -m braid.models llama-tiny | not braid-opt --braid-training-pipeline="grid=cp=2 lower-to-dist=false" --braid-test-inject-fault=kind=skip-ring-step 2>&1 | FileCheck %s --check-prefix=NO-RING
// RUN: %python -m braid.models llama-tiny | not braid-opt --braid-training-pipeline="grid=dp=2 lower-to-dist=false" --braid-test-inject-fault=kind=bit-flip 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// The attention output's tp all-reduce is gone: the residual adds the
// rank's partial sum.
// DROP-LABEL: func.func private @llama_layer.fwd
// DROP:       %[[O:.*]] = braid.linear %{{.*}}, %arg5 : tensor<1x16x32xf32>, tensor<32x64xf32> -> tensor<1x16x64xf32>
// DROP-NEXT:  braid.add %arg0, %[[O]] : tensor<1x16x64xf32>
// DROP:       shard.all_reduce

// The same all-reduce sums over dp (axis 0) instead of tp (axis 1).
// AXIS-LABEL: func.func private @llama_layer.fwd
// AXIS:       %[[O:.*]] = braid.linear %{{.*}}, %arg5
// AXIS-NEXT:  shard.all_reduce %[[O]] on @grid grid_axes = [0] : tensor<1x16x64xf32>
// AXIS:       shard.all_reduce %{{.*}} on @grid grid_axes = [1] : tensor<1x16x64xf32>

// The first layer's forward scan runs on its chunk alone; the backward and
// the other layer still carry the state.
// CARRY:      braid.selective_scan %{{.*}} delta_softplus : tensor<2x8x128xf32>
// CARRY:      braid.selective_scan_grad %{{.*}} delta_softplus {context_axes = ["cp"]}

// ZeRO-1 and 2 reduce-scatter the flat gradient into each rank's range;
// the fault sums it whole instead and every rank updates its range of the
// embedding with the first range (block floor(c / 2) = 0).
// ZERO:      %[[FLAT:.*]] = braid.reshape %{{.*}} : tensor<256x64xf32> -> tensor<16384xf32>
// ZERO:      %[[SUM:.*]] = shard.all_reduce %[[FLAT]] on @grid grid_axes = [0] : tensor<16384xf32> -> tensor<16384xf32>
// ZERO-NEXT: %[[FIRST:.*]] = braid.slice %[[SUM]] along 0 over ["dp"] {replicas = 2 : i64} : tensor<16384xf32> -> tensor<8192xf32>
// ZERO-NEXT: braid.adamw_update @tok_embeddings, %[[FIRST]], %{{.*}} moments @opt.m.tok_embeddings, @opt.v.tok_embeddings {{.*}}zero_axes = ["dp"]

// Stage 0 takes the tokens of micro-batch 1 first and of 0 second; the last
// stage's labels keep their order.
// SWAP:      dist.microbatch %arg0[1 of 2] : tensor<4x16xi32> -> tensor<2x16xi32>
// SWAP-NEXT: call @step.c0.fwd({{.*}}dist.microbatch = 0 : i64
// SWAP:      dist.microbatch %arg0[0 of 2] : tensor<4x16xi32> -> tensor<2x16xi32>
// SWAP-NEXT: call @step.c0.fwd({{.*}}dist.microbatch = 1 : i64
// SWAP:      dist.microbatch %arg0[0 of 2]
// SWAP-NEXT: call @step.c1.fwd({{.*}}dist.microbatch = 0 : i64

// The first dp all-reduce (the embedding's gradient): v - own block + block 0.
// REPLICA:      %[[V:.*]] = shard.all_reduce %{{.*}} on @grid grid_axes = [0] : tensor<256x64xf32> -> tensor<256x64xf32>
// REPLICA-NEXT: %[[OWN:.*]] = braid.slice %[[V]] along 0 over ["dp"] : tensor<256x64xf32> -> tensor<128x64xf32>
// REPLICA-NEXT: %[[OWNW:.*]] = braid.unslice %[[OWN]] along 0 over ["dp"] : tensor<128x64xf32> -> tensor<256x64xf32>
// REPLICA-NEXT: %[[FIRST:.*]] = braid.slice %[[V]] along 0 over ["dp"] {replicas = 2 : i64}
// REPLICA-NEXT: %[[FIRSTW:.*]] = braid.unslice %[[FIRST]] along 0 over ["dp"] {replicas = 2 : i64}
// REPLICA-NEXT: %[[NEG:.*]] = braid.neg %[[OWNW]]
// REPLICA-NEXT: %[[D:.*]] = braid.add %[[NEG]], %[[FIRSTW]]
// REPLICA-NEXT: %[[B:.*]] = braid.add %[[V]], %[[D]]
// REPLICA-NOT:  %[[V]]{{[,) ]}}
// REPLICA:      braid.adamw_update @tok_embeddings, %[[B]]

// RING:     braid.attention {{.*}}braid_test.skip_ring_step = 1 : i64, ring_axes = ["cp"]
// RING-NOT: braid_test.skip_ring_step

// The forward ring leaves out step 1's block: one block and no merge; the
// backward's ring (its recomputed forward and its own pass) is whole.
// RING-EMIT-LABEL: void fn_llama_layer_fwd(
// RING-EMIT:       braid_k_attention_block(
// RING-EMIT-NOT:   braid_k_attention_block(
// RING-EMIT-NOT:   braid_k_attention_merge(
// RING-EMIT-LABEL: void fn_llama_layer_bwd(
// RING-EMIT:       braid_k_attention_block(
// RING-EMIT:       braid_k_attention_block(
// RING-EMIT:       braid_k_attention_merge(
// RING-EMIT:       braid_k_attention_block_grad(
// RING-EMIT:       braid_k_attention_block_grad(

// ONE-AXIS: error: wrong-axis: needs a grid of two axes or more
// NO-ZERO:  error: zero-offset: no ZeRO-1/2 update of a reduce-scattered gradient range
// NO-SCAN:  error: drop-state-carry: no braid.selective_scan with context_axes
// NO-MB:    error: swap-microbatches: no dist.microbatch of two micro-batches or more
// NO-RING:  error: skip-ring-step: no braid.attention with ring_axes
// UNKNOWN:  error: unknown fault 'bit-flip' (drop-all-reduce, wrong-axis, drop-state-carry, zero-offset, swap-microbatches, corrupt-replica, skip-ring-step, wrong-cp-merge, drop-cp-prefill-carry)
