// RUN: braid-opt --braid-partition="grid=cp=2" %s | FileCheck %s --check-prefix=GATHER
// RUN: braid-opt --braid-partition="grid=cp=2 cp-attention=ring" %s | FileCheck %s --check-prefix=RING
// RUN: braid-opt --braid-partition="grid=cp=2 cp-attention=ring cp-layout=contiguous" %s | FileCheck %s --check-prefix=RING-CONTIGUOUS
// RUN: braid-opt --braid-partition="grid=cp=2 cp-attention=ring" --braid-autodiff --braid-print-plan %s -o /dev/null | FileCheck %s --check-prefix=RING-PLAN
// RUN: braid-opt --braid-training-pipeline="grid=cp=2 cp-attention=ring schedule-overlap=false" %s | braid-translate --braid-to-cpp | FileCheck %s --check-prefix=RING-EMIT
// RUN: braid-opt --braid-training-pipeline="grid=cp=4 cp-attention=ulysses" %s | braid-translate --braid-to-cpp | FileCheck %s --check-prefix=ULYSSES-EMIT
// RUN: braid-opt --braid-partition="grid=cp=2 cp-attention=ulysses" %s | FileCheck %s --check-prefix=ULYSSES
// RUN: braid-opt --braid-partition="grid=cp=4 cp-attention=ulysses" %s | FileCheck %s --check-prefix=REPLICA
// RUN: braid-opt --braid-partition="grid=cp=2 cp-layout=contiguous" --braid-print-plan %s -o /dev/null | FileCheck %s --check-prefix=FLOPS
// RUN: braid-opt --braid-partition="grid=cp=2" --braid-print-plan %s -o /dev/null | FileCheck %s --check-prefix=ZIGZAG-FLOPS
// RUN: braid-opt --braid-partition="grid=cp=4 cp-layout=zigzag" --braid-print-plan %s -o /dev/null | FileCheck %s --check-prefix=ZIGZAG-FLOPS4
// RUN: %python -m braid.models mamba-tiny | braid-opt --braid-partition="grid=cp=2" | FileCheck %s --check-prefix=MAMBA
// RUN: %python -m braid.models mamba-tiny | braid-opt --braid-training-pipeline="grid=cp=2 optimizer=none" | braid-translate --braid-to-cpp | FileCheck %s --check-prefix=EMIT
// RUN: not braid-opt --braid-partition="grid=cp=2 cp-attention=spiral" %s 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not braid-opt --braid-partition="grid=cp=3" %s 2>&1 | FileCheck %s --check-prefix=ODD
// RUN: braid-opt --braid-partition="grid=cp=8" %s | FileCheck %s --check-prefix=AUTO-CONTIGUOUS
// RUN: not braid-opt --braid-partition="grid=cp=8 cp-layout=zigzag" %s 2>&1 | FileCheck %s --check-prefix=ODD-ZIGZAG
// RUN: not braid-opt --braid-partition="grid=cp=2 cp-layout=spiral" %s 2>&1 | FileCheck %s --check-prefix=BAD-LAYOUT
// RUN: %python -m braid.models gpt-tiny | not braid-opt --braid-partition="grid=cp=2 cp-layout=zigzag" 2>&1 | FileCheck %s --check-prefix=POSITIONS
// RUN: %python -m braid.models gpt-tiny | braid-opt --braid-partition="grid=cp=2" | FileCheck %s --check-prefix=POSITIONS-AUTO
// RUN: %python -m braid.models mamba-tiny | not braid-opt --braid-partition="grid=cp=2 cp-layout=zigzag" 2>&1 | FileCheck %s --check-prefix=MAMBA-ZIGZAG

// Context parallelism: the sequence of every activation split over cp, the
// inputs read by chunk.

// GATHER-LABEL: func.func private @layer(
// GATHER-SAME: tensor<2x4x16xf32> {braid.global_shape = array<i64: 2, 8, 16>, braid.split = {{\[}}[], ["cp"], []]}
// GATHER: %[[K:.*]] = shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 1 : tensor<2x4x2x4xf32> -> tensor<2x8x2x4xf32>
// GATHER-NEXT: %[[V:.*]] = shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 1 : tensor<2x4x2x4xf32> -> tensor<2x8x2x4xf32>
// GATHER-NEXT: braid.attention %{{.*}}, %[[K]], %[[V]] causal {query_offset_axes = ["cp"], rope_theta = 1.000000e+04 : f64, sequence_zigzag = 2 : i64} : tensor<2x4x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x4x4x4xf32>
// GATHER-LABEL: func.func @step(
// GATHER-SAME: tensor<2x4xi32> {braid.global_shape = array<i64: 2, 8>, braid.split = {{\[}}[], ["cp"]]}
// GATHER: %[[CE:.*]] = braid.cross_entropy {{.*}} {denominator = 16 : i64}
// GATHER-NEXT: shard.all_reduce %[[CE]] on @grid grid_axes = [0]

// Ring: queries, keys and values keep their chunk; nothing is gathered.
// Causal attention with rotary positions takes zigzag order by default.
// RING: module attributes {{.*}}braid.zigzag_axis = "cp"
// RING-LABEL: func.func private @layer(
// RING-NOT: shard.all_gather
// RING: braid.attention %{{.*}}, %{{.*}}, %{{.*}} causal {ring_axes = ["cp"], rope_theta = 1.000000e+04 : f64, sequence_zigzag = 2 : i64} : tensor<2x4x4x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32> -> tensor<2x4x4x4xf32>
// RING-NOT: shard.all_gather
// RING: return
// RING-CONTIGUOUS-NOT: braid.zigzag_axis
// RING-CONTIGUOUS: braid.attention %{{.*}} causal {ring_axes = ["cp"], rope_theta = 1.000000e+04 : f64} :

// The ring's point-to-point volume per rank, one shift of one tensor per
// block and step: the forward shifts its K and V chunks (2 x 256 bytes) once
// (cp - 1 = 1); the backward shifts them again for the recomputed output and
// for its own pass, and shifts their f32 cotangents at both steps (the
// second takes them home): 2 + 4 + 4 shifts, 2560 bytes.
// RING-PLAN: attention_flops busiest/mean: 1.000
// RING-PLAN: collective shift over cp: 10 per step, 2560 bytes sent per rank

// The ring as emitted, one call per op of --convert-braid-to-dist (in the
// lowering's order: the overlap scheduler would start the shifts as soon as
// the blocks are projected, test/Transforms/braid-schedule-overlap.mlir): the
// rank's own block shifts on (one send-receive pair, one NCCL group) while
// it is computed, then the block of chunk (c + 1) mod 2 is, and merged.
// RING-EMIT-LABEL: void fn_layer_fwd(
// RING-EMIT: braid_k_sequence_positions(rt, {{.*}}, 4, (coord(rt, "cp") * int64_t(4)), 8, 2);
// RING-EMIT: [[EK:ev\[[0-9]+\]]] = braid_sendrecv(rt, braid_rt_comm(rt, "cp"), {{.*}}, 64, (coord(rt, "cp") + 1) % 2, {{.*}}, 64, (coord(rt, "cp") + 1) % 2, BRAID_F32);
// RING-EMIT: [[EV:ev\[[0-9]+\]]] = braid_sendrecv(rt, braid_rt_comm(rt, "cp"),
// RING-EMIT: braid_k_attention_block(rt, BRAID_F32,
// RING-EMIT: braid_event_wait(rt, [[EK]]);
// RING-EMIT-NEXT: braid_event_wait(rt, [[EV]]);
// RING-EMIT: braid_k_sequence_positions(rt, {{.*}}, 4, (((coord(rt, "cp") + int64_t(1)) % int64_t(2)) * int64_t(4)), 8, 2);
// RING-EMIT: braid_k_attention_block(rt, BRAID_F32,
// RING-EMIT: braid_k_attention_merge(rt,
// RING-EMIT-LABEL: void fn_layer_bwd(
// RING-EMIT: braid_k_attention_delta(rt, BRAID_F32,
// The cotangents shift on once this rank's block added to them.
// RING-EMIT: braid_k_attention_block_grad(rt, BRAID_F32,
// RING-EMIT: [[EDK:ev\[[0-9]+\]]] = braid_sendrecv(rt, braid_rt_comm(rt, "cp"), [[DK:at\(arena, frame \+ [0-9]+\)]], 64,
// RING-EMIT: braid_event_wait(rt, [[EDK]]);
// RING-EMIT: braid_k_attention_block_grad(rt, BRAID_F32,
// RING-EMIT: braid_sendrecv(rt, braid_rt_comm(rt, "cp"),
// RING-EMIT: const braid_program kProgram = {{.*}}, "cp", nullptr, BRAID_ENTRY_TRAIN_STEP, 1, kOutputs};

// Ulysses in zigzag order: every rank holds the whole (stored) sequence for
// its heads, one block at zigzag positions.
// ULYSSES-EMIT: braid_k_sequence_positions(rt, {{.*}}, 8, int64_t(0), 8, 4);
// ULYSSES-EMIT: braid_k_sequence_positions(rt, {{.*}}, 8, int64_t(0), 8, 4);
// ULYSSES-EMIT-NOT: braid_sendrecv
// ULYSSES-EMIT: braid_k_attention_block(rt, BRAID_F32,

// Ulysses: all-to-all from the sequence to the heads and back.
// ULYSSES-LABEL: func.func private @layer(
// ULYSSES: %[[Q:.*]] = shard.all_to_all %{{.*}} on @grid grid_axes = [0] split_axis = 2 concat_axis = 1 : tensor<2x4x4x4xf32> -> tensor<2x8x2x4xf32>
// ULYSSES-NEXT: %[[K:.*]] = shard.all_to_all %{{.*}} split_axis = 2 concat_axis = 1 : tensor<2x4x2x4xf32> -> tensor<2x8x1x4xf32>
// ULYSSES-NEXT: %[[V:.*]] = shard.all_to_all %{{.*}} split_axis = 2 concat_axis = 1 : tensor<2x4x2x4xf32> -> tensor<2x8x1x4xf32>
// ULYSSES-NEXT: %[[O:.*]] = braid.attention %[[Q]], %[[K]], %[[V]] causal {rope_theta = 1.000000e+04 : f64, sequence_zigzag = 2 : i64} : tensor<2x8x2x4xf32>, tensor<2x8x1x4xf32>, tensor<2x8x1x4xf32> -> tensor<2x8x2x4xf32>
// ULYSSES-NEXT: shard.all_to_all %[[O]] on @grid grid_axes = [0] split_axis = 1 concat_axis = 2 : tensor<2x8x2x4xf32> -> tensor<2x4x4x4xf32>

// Ulysses over more ranks than key/value heads: the keys and values are
// gathered whole and each rank takes its query head's group.
// REPLICA: %[[K:.*]] = shard.all_gather %{{.*}} gather_axis = 1 : tensor<2x2x2x4xf32> -> tensor<2x8x2x4xf32>
// REPLICA: braid.slice %[[K]] along 2 over ["cp"] {replicas = 2 : i64} : tensor<2x8x2x4xf32> -> tensor<2x8x1x4xf32>
// REPLICA: braid.attention {{.*}} : tensor<2x8x1x4xf32>, tensor<2x8x1x4xf32>, tensor<2x8x1x4xf32> -> tensor<2x8x1x4xf32>

// Causal attention over contiguous chunks: the second rank's queries see
// more keys (4 x 2 x 4 x 4 FLOPs per visible pair: 10 pairs, then 26).
// FLOPS: attention_flops cp=0: 1280 per step
// FLOPS-NEXT: attention_flops cp=1: 3328 per step
// FLOPS-NEXT: attention_flops busiest/mean: 1.444

// Mamba keeps its chunk: the convolution takes a halo from the previous
// rank, the scan the state the previous ranks leave; nothing is gathered.
// MAMBA-LABEL: func.func private @mamba_layer(
// MAMBA-NOT: shard.all_gather
// MAMBA: braid.conv1d {{.*}} {context_axes = ["cp"]} : tensor<2x8x128xf32>, tensor<128x4xf32>, tensor<128xf32> -> tensor<2x8x128xf32>
// MAMBA-NOT: shard.all_gather
// MAMBA: braid.selective_scan {{.*}} {context_axes = ["cp"]} : tensor<2x8x128xf32>, tensor<2x8x128xf32>, tensor<128x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<128xf32>
// MAMBA-NOT: shard.all_gather
// MAMBA: return
// The halo, as --convert-braid-to-dist expands it: the chunk's last rows
// (braid.tail) shift to the next rank as one send-receive pair, zeros
// arriving on the first rank.
// EMIT: braid_k_slice(rt, BRAID_F32, {{.*}}, 2, 8, 3, 128, 5);
// EMIT: braid_rt_op_begin(rt, "shift",
// EMIT-NEXT: if (((coord(rt, "cp") - 1) >= 0 ? (coord(rt, "cp") - 1) : -1) < 0) braid_k_zero(rt, BRAID_F32, {{.*}}, 768);
// EMIT-NEXT: braid_sendrecv(rt, braid_rt_comm(rt, "cp"), {{.*}}, 768, ((coord(rt, "cp") + 1) < 2 ? (coord(rt, "cp") + 1) : -1), {{.*}}, 768, ((coord(rt, "cp") - 1) >= 0 ? (coord(rt, "cp") - 1) : -1), BRAID_F32)
// EMIT: braid_k_conv1d_halo(rt, BRAID_F32,
// The scan: each chunk's zero-start final state and decay, gathered, then
// carried into this chunk's entering state.
// EMIT: braid_k_selective_scan_chunk(rt, BRAID_F32, {{.*}}, nullptr, nullptr,
// EMIT: braid_all_gather(rt, braid_rt_comm(rt, "cp"),
// EMIT: braid_all_gather(rt, braid_rt_comm(rt, "cp"),
// EMIT: braid_k_scan_carry(rt, {{.*}}, 2, coord(rt, "cp"), 4096);
// EMIT: braid_k_selective_scan_chunk(rt, BRAID_F32,

// Zigzag order: each rank holds chunks i and 2cp-1-i, and the causal work
// is the same on every rank (cp=2: 36 visible pairs each; cp=4: 9 each).
// ZIGZAG-FLOPS: attention_flops cp=0: 2304 per step
// ZIGZAG-FLOPS-NEXT: attention_flops cp=1: 2304 per step
// ZIGZAG-FLOPS-NEXT: attention_flops busiest/mean: 1.000
// ZIGZAG-FLOPS4: attention_flops cp=0: 1152 per step
// ZIGZAG-FLOPS4-NEXT: attention_flops cp=1: 1152 per step
// ZIGZAG-FLOPS4-NEXT: attention_flops cp=2: 1152 per step
// ZIGZAG-FLOPS4-NEXT: attention_flops cp=3: 1152 per step
// ZIGZAG-FLOPS4-NEXT: attention_flops busiest/mean: 1.000

// BAD: for the --cp-attention option: expected allgather, ulysses or ring, found 'spiral'
// ODD: error: the sequence (8) of input #0 is not a multiple of cp=3 (pad it to a multiple)
// A sequence of 8 does not cut into 2 x 8 chunks: auto keeps contiguous
// chunks, an explicit zigzag is an error.
// AUTO-CONTIGUOUS-NOT: sequence_zigzag
// AUTO-CONTIGUOUS: braid.attention {{.*}}query_offset_axes = ["cp"]
// ODD-ZIGZAG: error: the sequence (8) of input #0 is not a multiple of 2 x cp=8 (zigzag balancing cuts it into 2 x cp chunks; pad it to a multiple or use cp-layout=contiguous)
// BAD-LAYOUT: for the --cp-layout option: expected auto, contiguous or zigzag, found 'spiral'
// POSITIONS: error: cp-layout=zigzag: 'braid.embedding' depends on the order of the sequence's chunks (only attention is told zigzag positions); use cp-layout=contiguous
// POSITIONS-AUTO-NOT: sequence_zigzag
// POSITIONS-AUTO-NOT: braid.zigzag_axis
// MAMBA-ZIGZAG: error: cp-layout=zigzag: 'braid.conv1d' depends on the order of the sequence's chunks

module attributes {braid.model = {name = "attn", family = "llama", vocab = 16 : i64, hidden = 16 : i64}} {
  braid.param @wte normal(2.000000e-02) : tensor<16x16xf32>
  braid.param @wq normal(2.000000e-02) : tensor<16x16xf32>
  braid.param @wk normal(2.000000e-02) : tensor<16x8xf32>
  braid.param @wv normal(2.000000e-02) : tensor<16x8xf32>
  braid.param @wo normal(2.000000e-02) : tensor<16x16xf32>
  func.func private @layer(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x8xf32>, %wv: tensor<16x8xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
    %q = braid.linear %x, %wq : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %qh = braid.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
    %k = braid.linear %x, %wk : tensor<2x8x16xf32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    %kh = braid.reshape %k : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %v = braid.linear %x, %wv : tensor<2x8x16xf32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    %vh = braid.reshape %v : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %a = braid.attention %qh, %kh, %vh causal {rope_theta = 1.000000e+04 : f64} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x4x4xf32>
    %af = braid.reshape %a : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
    %o = braid.linear %af, %wo : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %r = braid.add %x, %o : tensor<2x8x16xf32>
    return %r : tensor<2x8x16xf32>
  }
  func.func @step(%tokens: tensor<2x8xi32>, %labels: tensor<2x8xi32>) -> tensor<f32> {
    %wte = braid.get_param @wte : tensor<16x16xf32>
    %h0 = braid.embedding %tokens, %wte : tensor<2x8xi32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %wq = braid.get_param @wq : tensor<16x16xf32>
    %wk = braid.get_param @wk : tensor<16x8xf32>
    %wv = braid.get_param @wv : tensor<16x8xf32>
    %wo = braid.get_param @wo : tensor<16x16xf32>
    %h1 = func.call @layer(%h0, %wq, %wk, %wv, %wo) : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %logits = braid.linear %h1, %wte transpose_weight : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %loss = braid.cross_entropy %logits, %labels : tensor<2x8x16xf32>, tensor<2x8xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
