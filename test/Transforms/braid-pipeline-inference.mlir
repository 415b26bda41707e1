// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | braid-opt --braid-partition="grid=pp=2" --braid-pipeline-inference | FileCheck %s --check-prefix=PP2
// RUN: braid-opt --braid-derive-inference="batch=4" %S/../../examples/llama-tiny.mlir | braid-opt --braid-microbatch-inference="count=2" --braid-partition="grid=pp=2" --braid-pipeline-inference | FileCheck %s --check-prefix=MB2
// RUN: braid-opt --braid-derive-inference %S/../../examples/gpt-tiny.mlir | braid-opt --braid-partition="grid=pp=2" --braid-pipeline-inference | FileCheck %s --check-prefix=GPT
// RUN: braid-opt --braid-derive-inference="batch=4" %S/../../examples/llama-tiny.mlir | braid-opt --braid-training-pipeline="optimizer=none grid=pp=2,tp=2 microbatches=2" | FileCheck %s --check-prefix=PPTP
// RUN: braid-opt --braid-derive-inference="batch=4" %S/../../examples/llama-tiny.mlir | braid-opt --braid-training-pipeline="optimizer=none microbatches=2" | FileCheck %s --check-prefix=ONE
// RUN: braid-opt --braid-derive-inference %S/../../examples/llama-tiny.mlir | braid-opt --braid-training-pipeline="optimizer=none" | FileCheck %s --check-prefix=NONE

// Pipeline parallelism of the inference programs: each of prefill, decode
// and forward becomes one program per stage of the grid's pp axis, the
// layers split alike in all of them, so that a stage's programs hold the
// same parameters and KV cache states (one binary per stage, one arena).

// pp=2 on the 2 layers of llama-tiny: stage 0 holds the embedding and layer
// 0 with its cache, and sends the residual stream to stage 1, which holds
// layer 1 with its cache, the final norm and the LM head, and alone returns
// the logits. Each stage reads the inputs it uses itself: the positions in
// both (each writes a cache), the rows prefill keeps only in the last.
// PP2: module attributes {{{.*}}braid.pipeline_entries = [@prefill.pp0, @decode.pp0, @forward.pp0, @prefill.pp1, @decode.pp1, @forward.pp1]
// PP2-LABEL: func.func @prefill.pp0(
// PP2-SAME: %[[TOK:.*]]: tensor<2x16xi32>, %[[POS:.*]]: tensor<2xi32>)
// PP2-SAME: attributes {braid.entry = "prefill", braid.pipeline_rank = 0 : i64}
// PP2: braid.get_param @tok_embeddings
// PP2: braid.embedding %[[TOK]]
// PP2-NOT: @layers.1.
// PP2: %[[K0:.*]] = braid.get_param @cache.layers.0.k : tensor<2x16x2x16xf32>
// PP2-NEXT: %[[V0:.*]] = braid.get_param @cache.layers.0.v : tensor<2x16x2x16xf32>
// PP2-NEXT: %[[H:.*]] = call @llama_layer.prefill({{.*}}, %[[POS]], %[[K0]], %[[V0]])
// PP2-NEXT: %[[S:.*]] = dist.send %[[H]] to 1 on @grid grid_axes = [0] tag = 3 : tensor<2x16x64xf32>
// PP2-NEXT: dist.wait %[[S]]
// PP2-NEXT: return{{$}}
// PP2-LABEL: func.func @prefill.pp1(
// PP2-SAME: %[[POS1:.*]]: tensor<2xi32>, %[[LAST:.*]]: tensor<2xi32>) -> tensor<2x256xf32>
// PP2-SAME: attributes {braid.entry = "prefill", braid.pipeline_rank = 1 : i64}
// PP2-NEXT: %[[R:.*]], %[[T:.*]] = dist.recv from 0 on @grid grid_axes = [0] tag = 3 : tensor<2x16x64xf32>
// PP2-NEXT: dist.wait %[[T]]
// PP2-NOT: @layers.0.
// PP2-NOT: @tok_embeddings
// PP2: %[[K1:.*]] = braid.get_param @cache.layers.1.k
// PP2-NEXT: %[[V1:.*]] = braid.get_param @cache.layers.1.v
// PP2-NEXT: %[[H1:.*]] = call @llama_layer.prefill(%[[R]], {{.*}}, %[[POS1]], %[[K1]], %[[V1]])
// PP2-NEXT: braid.take_rows %[[H1]], %[[LAST]]
// PP2: braid.get_param @output
// PP2: %[[LOGITS:.*]] = braid.linear
// PP2-NEXT: return %[[LOGITS]] : tensor<2x256xf32>
// Decode: the same split; the last stage needs only the positions.
// PP2-LABEL: func.func @decode.pp0(
// PP2-SAME: %{{.*}}: tensor<2x1xi32>, %{{.*}}: tensor<2xi32>)
// PP2: braid.get_param @cache.layers.0.k
// PP2: call @llama_layer.decode(
// PP2-NEXT: dist.send %{{.*}} to 1 on @grid grid_axes = [0] tag = 3 : tensor<2x1x64xf32>
// PP2-LABEL: func.func @decode.pp1(
// PP2-SAME: %{{.*}}: tensor<2xi32>) -> tensor<2x256xf32> attributes {braid.entry = "decode", braid.pipeline_rank = 1 : i64}
// PP2-NEXT: dist.recv from 0 on @grid grid_axes = [0] tag = 3 : tensor<2x1x64xf32>
// PP2: braid.get_param @cache.layers.1.k
// PP2: call @llama_layer.decode(
// The forward program reads no cache: its last stage takes no input.
// PP2-LABEL: func.func @forward.pp0(
// PP2-SAME: %{{.*}}: tensor<2x16xi32>) attributes {braid.entry = "forward", braid.pipeline_rank = 0 : i64}
// PP2-NOT: braid.get_param @cache
// PP2: dist.send %{{.*}} to 1
// PP2-LABEL: func.func @forward.pp1() -> tensor<2x16x256xf32> attributes {braid.entry = "forward", braid.pipeline_rank = 1 : i64}
// PP2-NOT: braid.get_param @cache
// PP2: return %{{.*}} : tensor<2x16x256xf32>
// PP2-NOT: func.func @prefill(
// PP2-NOT: func.func @decode(

// Two micro-batches of 2 sequences of the 4: the programs take the whole
// batch and run its micro-batches in turn, each stage sending micro-batch j
// on (tag 1 + 2 (boundary m + j)) before it starts the next; each
// micro-batch has a cache of its own (sequences 2j, 2j+1).
// MB2: braid.state @cache.layers.0.k.mb0 zeros : tensor<2x16x2x16xf32>
// MB2-NEXT: braid.state @cache.layers.0.k.mb1 zeros : tensor<2x16x2x16xf32>
// MB2-NEXT: braid.state @cache.layers.0.v.mb0
// MB2-NEXT: braid.state @cache.layers.0.v.mb1
// MB2-NEXT: braid.state @cache.layers.1.k.mb0
// MB2-NEXT: braid.state @cache.layers.1.k.mb1
// MB2-NEXT: braid.state @cache.layers.1.v.mb0
// MB2-NEXT: braid.state @cache.layers.1.v.mb1
// MB2-NOT: braid.state
// MB2-LABEL: func.func private @llama_layer.prefill(
// MB2-SAME: %arg0: tensor<2x16x64xf32>
// MB2-LABEL: func.func @prefill.pp0(
// MB2-SAME: %[[TOK:.*]]: tensor<4x16xi32>, %[[POS:.*]]: tensor<4xi32>)
// MB2-NEXT: %[[TOK0:.*]] = dist.microbatch %[[TOK]][0 of 2] : tensor<4x16xi32> -> tensor<2x16xi32>
// MB2-NEXT: %[[POS0:.*]] = dist.microbatch %[[POS]][0 of 2] : tensor<4xi32> -> tensor<2xi32>
// MB2: %[[K00:.*]] = braid.get_param @cache.layers.0.k.mb0 : tensor<2x16x2x16xf32>
// MB2-NEXT: %[[V00:.*]] = braid.get_param @cache.layers.0.v.mb0
// MB2-NEXT: %[[H0:.*]] = call @llama_layer.prefill({{.*}}, %[[POS0]], %[[K00]], %[[V00]])
// MB2-NEXT: dist.send %[[H0]] to 1 on @grid grid_axes = [0] tag = 5 : tensor<2x16x64xf32>
// MB2: %[[TOK1:.*]] = dist.microbatch %[[TOK]][1 of 2]
// MB2-NEXT: %[[POS1:.*]] = dist.microbatch %[[POS]][1 of 2]
// MB2-NEXT: braid.embedding %[[TOK1]]
// MB2-NEXT: %[[K01:.*]] = braid.get_param @cache.layers.0.k.mb1
// MB2-NEXT: %[[V01:.*]] = braid.get_param @cache.layers.0.v.mb1
// MB2-NEXT: %[[H1:.*]] = call @llama_layer.prefill({{.*}}, %[[POS1]], %[[K01]], %[[V01]])
// MB2-NEXT: dist.send %[[H1]] to 1 on @grid grid_axes = [0] tag = 7 : tensor<2x16x64xf32>
// The last stage concatenates the micro-batches' logits: one after the
// other along the batch, which is outermost.
// MB2-LABEL: func.func @prefill.pp1(
// MB2-SAME: -> tensor<4x256xf32>
// MB2: dist.recv from 0 on @grid grid_axes = [0] tag = 5 : tensor<2x16x64xf32>
// MB2: braid.get_param @cache.layers.1.k.mb0
// MB2: %[[L0:.*]] = braid.linear %{{.*}} : tensor<2x64xf32>, tensor<64x256xf32> -> tensor<2x256xf32>
// MB2: dist.recv from 0 on @grid grid_axes = [0] tag = 7 : tensor<2x16x64xf32>
// MB2: braid.get_param @cache.layers.1.k.mb1
// MB2: %[[L1:.*]] = braid.linear %{{.*}} : tensor<2x64xf32>, tensor<64x256xf32> -> tensor<2x256xf32>
// MB2-NEXT: %[[P:.*]] = dist.pack %[[L0]], %[[L1]] parts 1 : tensor<2x256xf32>, tensor<2x256xf32> -> tensor<1024xf32>
// MB2-NEXT: %[[W:.*]] = braid.reshape %[[P]] : tensor<1024xf32> -> tensor<4x256xf32>
// MB2-NEXT: return %[[W]] : tensor<4x256xf32>
// MB2-LABEL: func.func @decode.pp0(
// MB2-SAME: tensor<4x1xi32>
// MB2: braid.get_param @cache.layers.0.k.mb0
// MB2: braid.get_param @cache.layers.0.k.mb1
// MB2-LABEL: func.func @decode.pp1(
// MB2-SAME: %{{.*}}: tensor<4xi32>) -> tensor<4x256xf32>
// MB2-LABEL: func.func @forward.pp1() -> tensor<4x16x256xf32>
// MB2: dist.pack {{.*}} -> tensor<16384xf32>

// GPT-2 style, the tied embedding is read by the first stage (tokens) and the last
// (the LM head); the learned positions are added on the first.
// GPT-LABEL: func.func @prefill.pp0(
// GPT: braid.get_param @tok_embeddings
// GPT: braid.get_param @pos_embeddings
// GPT-NEXT: braid.add_positions
// GPT: braid.get_param @cache.layers.0.k
// GPT: dist.send
// GPT-LABEL: func.func @prefill.pp1(
// GPT-NOT: @pos_embeddings
// GPT: braid.get_param @cache.layers.1.k
// GPT: %[[E:.*]] = braid.get_param @tok_embeddings : tensor<97x64xf32>
// GPT-NEXT: braid.linear %{{.*}}, %[[E]] transpose_weight

// In the pipeline: pp x tp with two micro-batches. The cache states are
// split by kv head over tp and by micro-batch; inside a stage the tp
// all-reduces stay, between stages the transfers run over pp (grid axis 0).
// PPTP: shard.grid @grid(shape = 2x2) {braid.axes = ["pp", "tp"]}
// PPTP: braid.state @cache.layers.0.k.mb0 zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}[], [], ["tp"], []]} : tensor<2x16x1x16xf32>
// PPTP-NEXT: braid.state @cache.layers.0.k.mb1 zeros {braid.global_shape = array<i64: 2, 16, 2, 16>, braid.split = {{\[}}[], [], ["tp"], []]} : tensor<2x16x1x16xf32>
// PPTP-LABEL: func.func @prefill.pp0(
// PPTP: dist.all_reduce %{{.*}} on @grid grid_axes = [1]
// PPTP: dist.send %{{.*}} to 1 on @grid grid_axes = [0] tag = 5
// PPTP: dist.send %{{.*}} to 1 on @grid grid_axes = [0] tag = 7
// PPTP-LABEL: func.func @prefill.pp1(
// PPTP-SAME: -> tensor<4x256xf32>
// PPTP: dist.recv from 0 on @grid grid_axes = [0] tag = 5
// PPTP: dist.recv from 0 on @grid grid_axes = [0] tag = 7
// PPTP: dist.all_gather %{{.*}} on @grid grid_axes = [1]
// PPTP: dist.pack

// One stage, two micro-batches: the programs keep their names and their
// interface (the whole batch in, its logits out) and run the micro-batches
// in turn, each on its own cache.
// ONE-NOT: braid.pipeline_entries
// ONE: braid.state @cache.layers.0.k.mb0
// ONE: braid.state @cache.layers.0.k.mb1
// ONE-LABEL: func.func @prefill(
// ONE-SAME: %{{.*}}: tensor<4x16xi32>, %{{.*}}: tensor<4xi32>, %{{.*}}: tensor<4xi32>) -> tensor<4x256xf32> attributes {braid.entry = "prefill"}
// ONE: dist.microbatch
// ONE: dist.pack
// ONE-LABEL: func.func @decode(
// ONE-LABEL: func.func @forward(

// Without pp or micro-batches nothing changes.
// NONE-NOT: braid.pipeline_entries
// NONE: braid.state @cache.layers.0.k zeros
// NONE-LABEL: func.func @prefill(
// NONE-NOT: dist.send
// NONE-NOT: dist.microbatch
