//===- Passes.td - passes of the braid dialect --------------*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_PASSES_TD
#define BRAID_DIALECT_BRAID_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def BraidAutodiffPass : Pass<"braid-autodiff", "::mlir::ModuleOp"> {
  let summary = "Append the backward pass of the step: gradients of every parameter";
  let description = [{
    Reverse-mode differentiation of the training step (the module's
    `braid.entry = "train_step"` function), whose result is the scalar
    loss: the cotangent 1 of the loss is propagated back through every op with its vector-Jacobian product, through layer calls with generated
    backward functions, and summed where a value has several uses. The step
    then returns the loss followed by the gradient of every parameter in
    declaration order; the `braid.gradients` attribute of the step names
    them.

    Each layer function `f` gets a backward function. `recompute` chooses
    what the forward pass keeps for it:
    - `none`: `f.fwd` returns every value the backward needs besides `f`'s
      arguments; `f.bwd` takes them.
    - `selective`: the same, but attention outputs are recomputed in
      `f.bwd` from the saved q, k and v (the attention core, as Megatron's
      selective recompute); they are not kept between passes.
    - `full`: only `f`'s arguments are kept; `f.bwd` recomputes the whole
      layer forward before its backward.
    The three give the same numbers; they trade activation memory for
    compute.

    ```mlir
    func.func @step(%tok, %labels) -> tensor<f32>
    ```
    becomes
    ```mlir
    func.func @step(%tok, %labels) -> (tensor<f32>, tensor<VxH>, ...)
        attributes {braid.gradients = [@wte, ...]}
    ```
  }];
  let options = [
    Option<"recompute", "recompute", "::mlir::braid::Recompute",
           /*default=*/"::mlir::braid::Recompute::None",
           "What the backward recomputes instead of keeping it">,
  ];
}

def BraidOptimizerPass : Pass<"braid-optimizer", "::mlir::ModuleOp"> {
  let summary = "Update the parameters from the gradients the step returns";
  let description = [{
    Consumes the gradients `--braid-autodiff` made the step return: clips
    them to a global norm, declares the optimizer's state (`braid.state`:
    the step counter and, for AdamW, both moments of every parameter in
    f32) and updates every parameter in place at the end of the step, which
    then returns only the loss.

    ```mlir
    %sumsq = braid.sum_squares %g0, %g1 : tensor<97x64xf32>, ... -> tensor<f32>
    %coef = braid.clip_coefficient %sumsq max_norm 1.0 : tensor<f32>
    braid.increment @opt.step
    braid.adamw_update @wte, %g0, %coef moments @opt.m.wte, @opt.v.wte step @opt.step {...}
    ```
  }];
  let options = [
    Option<"kind", "kind", "::mlir::braid::OptimizerKind",
           /*default=*/"::mlir::braid::OptimizerKind::AdamW",
           "The update rule (none is the pipeline's: no optimizer pass)">,
    Option<"lr", "lr", "double", /*default=*/"1e-3", "Learning rate">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.95", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.1",
           "Decoupled weight decay">,
    Option<"maxNorm", "max-norm", "double", /*default=*/"1.0",
           "Clip gradients to this global norm (<= 0: no clipping)">,
  ];
}

//===----------------------------------------------------------------------===//
// Lowering
//===----------------------------------------------------------------------===//

def BraidConvertElementTypePass
    : Pass<"braid-convert-element-type", "::mlir::ModuleOp"> {
  let summary = "Store every float tensor of a model in another element type";
  let description = [{
    Rewrites parameters, function signatures and every float tensor value
    from f32 to the element type `to` (bf16 or f16), for mixed-precision
    execution: kernels keep accumulating in f32, and the loss stays a
    `tensor<f32>`.

    ```mlir
    braid.param @w normal(2.0e-02) : tensor<64x64xf32>
    %y = braid.linear %x, %w : tensor<2x64xf32>, tensor<64x64xf32> -> tensor<2x64xf32>
    ```
    becomes, with `to=bf16`,
    ```mlir
    braid.param @w normal(2.0e-02) : tensor<64x64xbf16>
    %y = braid.linear %x, %w : tensor<2x64xbf16>, tensor<64x64xbf16> -> tensor<2x64xbf16>
    ```
    With `master-weights`, parameters stay f32 and each read is converted:
    `%w16 = braid.convert %w : tensor<64x64xf32> -> tensor<64x64xbf16>`;
    differentiated, the gradients come back to f32 through the converts.

    States declared before the pass, such as the KV cache of
    `--braid-derive-inference`'s programs, take the target type too, master
    weights or not (nothing trains them), except the state `braid.scan_step`
    carries in f32 (a Mamba layer's SSM state), kept f32 from the scan back
    to its `braid.state`.
  }];
  let options = [
    Option<"to", "to", "::mlir::braid::Precision",
           /*default=*/"::mlir::braid::Precision::BF16",
           "Element type to store floats in (bf16 or f16; f32 is the "
           "model's own)">,
    Option<"masterWeights", "master-weights", "bool", /*default=*/"false",
           "Keep parameters in f32 and compute with converted copies (mixed "
           "precision: the optimizer then updates f32 master weights)">,
  ];
}

def BraidExpandExpertFFNPass
    : Pass<"braid-expand-expert-ffn", "::mlir::func::FuncOp"> {
  let summary = "Expand braid.expert_ffn into batched matmuls and activations";
  let description = [{
    Rewrites each expert FFN into the ops it is made of, so that the memory
    plan sees its intermediates and the emitter needs no kernel of its own:

    ```mlir
    %y = braid.expert_ffn silu %x, %up, %down gate %gate : ...
    ```
    becomes
    ```mlir
    %g = braid.batch_matmul %x, %gate : tensor<ExCxH>, tensor<ExHxF> -> tensor<ExCxF>
    %u = braid.batch_matmul %x, %up : tensor<ExCxH>, tensor<ExHxF> -> tensor<ExCxF>
    %a = braid.glu silu %g, %u : tensor<ExCxF>
    %y = braid.batch_matmul %a, %down : tensor<ExCxF>, tensor<ExFxH> -> tensor<ExCxH>
    ```
    Without a gate, `%a` is the activation of `%u` (gelu, gelu tanh, silu,
    sigmoid or relu).
  }];
}

//===----------------------------------------------------------------------===//
// Analyses
//===----------------------------------------------------------------------===//

def BraidModelStatsPass : Pass<"braid-model-stats", "::mlir::ModuleOp"> {
  let summary = "Print parameter count, FLOPs per token and activation memory";
  let description = [{
    Walks the step function, following each call into its layer function,
    and prints `name: value` lines to stdout (the IR itself is left
    unchanged; use `-o /dev/null` to see only the statistics):

    - `config.<key>`: the hyper-parameters in the `braid.model` attribute;
    - `parameters`, `parameters_active` (expert weights counted k/E),
      `parameters_embedding`, `parameter_bytes`;
    - `tokens_per_step`, `layers`;
    - `forward_flops_per_token`: matmul-class FLOPs (2 x MACs) of the forward
      pass per token, attention over the full S x S scores (Megatron/PaLM
      convention); `forward_nonmatmul_flops_per_token`: the rest;
    - `training_flops_per_token`: forward + backward (2x forward) matmul
      FLOPs; `training_flops_per_token_selective_recompute`: plus a second
      forward of the attention products in layers (what `--braid-autodiff`
      with `recompute=selective` generates);
      `training_flops_per_token_full_recompute`: plus a second forward
      of every layer, which is the Megatron-LM formula
      `96 B s l h^2 (1 + s/6h + V/16lh)` divided by B s for GPT models;
    - per layer function `f`: `layer.f.calls`, `layer.f.forward_flops_per_token`
      and `layer.f.activation_bytes_per_token` (every value computed inside
      the layer plus what its ops save for backward, without recompute).

    Example: `braid-opt --braid-model-stats gpt3-175b.mlir -o /dev/null`
    prints `parameters: 174604259328`.
  }];
}

def BraidPrintMemoryPlanPass
    : Pass<"braid-print-memory-plan", "::mlir::ModuleOp"> {
  let summary = "Print the static arena layout of a program";
  let description = [{
    Plans the arena of the module's program (its one entry point, the plan
    braid-translate emits) and prints it to stdout:

    ```
    arena_bytes: 12416
    persistent_bytes: 4224
    param @wte offset 0 bytes 320
    input #0 offset 320 bytes 32
    loss offset 384 bytes 4
    func @mlp frame_bytes 1536
      buffer %name offset 0 bytes 512 live 0..1
      call @f frame_offset 512
    ```
    Parameters, inputs and the loss are persistent; each function is a frame
    whose buffers are placed by liveness, with the frames of the functions it
    calls nested inside it. Values are named by their `loc("name")` or by
    position.
  }];
  let options = [
    Option<"pipelineRank", "pipeline-rank", "int64_t", /*default=*/"0",
           "A pipelined module's rank whose program is planned">,
    Option<"program", "program", "std::string", /*default=*/"",
           "The program to plan by name (a module with several entry points: "
           "prefill, decode)">,
  ];
}


//===----------------------------------------------------------------------===//
// SPMD
//===----------------------------------------------------------------------===//

def BraidPartitionPass : Pass<"braid-partition", "::mlir::ModuleOp"> {
  let summary = "Partition the step over a device grid: one SPMD per-rank program";
  let description = [{
    Splits the step over `grid` (AXIS=SIZE,... over dp, ep, cp, tp): weights
    sharded by the user's `shard.shard` annotations of parameter reads and,
    for the rest, by `plan`; every other value's sharding completed by
    propagation over the ops' factor rules (conflicting annotations are
    reported at both); ops rewritten to local shapes with the collectives
    their operands need (upstream `shard` collectives, a shard.grid whose
    `braid.axes` attribute names the axes). `zero=3` stores parameters split
    over dp and gathers them where they are read; `zero=1/2` are carried out
    by the optimizer. `sequence-parallel` splits the sequence over tp
    between the tensor-parallel regions. A `cp` axis splits the sequence of
    every activation (context parallelism); attention then gathers keys and
    values (`cp-attention=allgather`, queries keep their global positions)
    or moves the split to the heads (`ulysses`), or passes key/value chunks
    around the cp group (`ring`). `cp-layout=zigzag` balances causal
    attention: each of n cp ranks holds chunks i and 2n-1-i of the sequence
    (the module's `braid.zigzag_axis`); `auto` takes it for causal attention
    when no op of the model depends on token order otherwise (a learned
    position table, Mamba's convolution and scan, which keep contiguous
    chunks). Every entry point of the module is partitioned (the inference
    programs of --braid-derive-inference too), with one propagation over all
    of them, so that a parameter or a state (the KV cache: split by kv head
    over tp, by sequence over dp) has one layout in every program; two
    programs' annotations of one parameter that disagree are an error.
    Programs return whole results (logits gathered at the return), except
    with `gather-logits=false`: the inference programs (`prefill`, `decode`
    and `forward`) then return each rank's block of the vocabulary-parallel
    logits (every row, the vocabulary split as the LM head splits it,
    padded where its split does not divide it), the result marked with
    `braid.split` and `braid.global_shape` as a sharded input is, for a
    sampler that never gathers them (runtime/src/sampling_parallel.h).
    Without a grid the pass does
    nothing. Run it before --braid-autodiff: the backward pass follows from
    the collectives' vector-Jacobian products.
  }];
  let options = [
    Option<"gridOption", "grid", "std::string", /*default=*/"\"\"",
           "Device grid, e.g. dp=2,tp=2">,
    Option<"plan", "plan", "::mlir::braid::ShardPlan",
           /*default=*/"::mlir::braid::ShardPlan::Megatron",
           "How unannotated weights are sharded">,
    Option<"zero", "zero", "int", /*default=*/"0", "ZeRO stage over dp (0-3)">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false", "Split the sequence over tp around norms">,
    Option<"cpAttention", "cp-attention", "::mlir::braid::CpAttention",
           /*default=*/"::mlir::braid::CpAttention::AllGather",
           "Attention under a cp axis: keys and values gathered (queries "
           "stay split), all-to-all from sequence to heads, or key/value "
           "chunks passed around the cp group">,
    Option<"cpLayout", "cp-layout", "::mlir::braid::CpLayout",
           /*default=*/"::mlir::braid::CpLayout::Auto",
           "How the sequence is cut over cp (zigzag: rank i holds chunks i "
           "and 2cp-1-i, balancing causal attention; auto: zigzag where the "
           "model allows it)">,
    Option<"recordLayouts", "record-layouts", "bool", /*default=*/"false",
           "Record each split or partial value's place in its global tensor "
           "(braid.result_layouts), so that dumps of activations are global">,
    Option<"gatherLogits", "gather-logits", "bool", /*default=*/"true",
           "Gather the inference programs' vocabulary-split logits at the "
           "return (false: each rank returns its block)">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def BraidPrintPlanPass : Pass<"braid-print-plan", "::mlir::ModuleOp"> {
  let summary = "Print the parallel plan of a partitioned program";
  let description = [{
    For a program partitioned by --braid-partition (best after the whole
    training pipeline, so that backward and optimizer collectives count):
    the grid; every parameter's and optimizer state's global shape,
    sharding, per-rank shape and bytes; the activations layer functions take
    (layer boundaries) with their shardings and per-rank shapes; and for
    each collective kind and group, the number per step and the bytes each
    rank sends under the ring model (all-reduce 2(n-1)/n of the buffer,
    all-gather, reduce-scatter and all-to-all n-1 blocks), which is what the
    runtime counts (`collective ...` lines of a run), and the time the
    cost model (lib/CostModel) predicts for them on `hardware`, the
    grid's ranks laid out row-major over consecutive GPUs of its nodes
    (`transfer_time ...` lines: per kind and group, the algorithm NCCL's
    model would choose for the largest; their sum). After
    --convert-braid-to-dist, a simulation of the step (compute at the
    rates of the hardware's calibration, the planner's, or at its roofline
    with `calibration=roofline`; each group's transfers on its own link in
    issue order) prints the communication its waits leave exposed
    (`exposed_time ...` lines, per kind and group, and per step). With
    `link`, transfers take the times of those links per grid axis
    (braid/link_model.h), the ones the CPU ranks' link emulator
    (BRAID_LINK) charges. Lines are `kind name: ...`; the IR is unchanged.
  }];
  let options = [
    Option<"hardware", "hardware", "std::string",
           /*default=*/"::mlir::braid::kDefaultHardware",
           "Hardware description for predicted times: h100-sxm, h200-sxm, "
           "a100-sxm (lib/CostModel/hardware) or a file.json of that form">,
    Option<"link", "link", "std::string", /*default=*/"\"\"",
           "Links per grid axis for transfer times, as BRAID_LINK: "
           "\"tp:2us,20GB/s;dp:10us,2GB/s\" (empty: the hardware's)">,
    Option<"calibration", "calibration", "std::string", /*default=*/"\"auto\"",
           "Compute rates: auto (the hardware's calibration, "
           "lib/CostModel/calibration; a description file's compute at the "
           "roofline), roofline, or a calibration's name or .json file">,
  ];
}

//===----------------------------------------------------------------------===//
// Pipeline
//===----------------------------------------------------------------------===//

def BraidPrintSchedulePass : Pass<"braid-print-schedule", "::mlir::ModuleOp"> {
  let summary = "Assign pipeline stages and print a simulated pipeline schedule";
  let description = [{
    Splits the layer calls of the training step (`braid.entry`) into `pp` x
    `virtual-stages` contiguous model chunks (chunk c on rank c mod pp), by
    `layout` (layers per chunk) or, when it is empty, so that the largest
    chunk's forward FLOPs are the smallest possible; the embedding counts
    with the first layer, the LM head and loss with the last. It then builds
    the per-rank action lists of `schedule` over `microbatches` and simulates
    them, and prints to stdout (gpt-tiny with 5 layers, `pp=2
    microbatches=4 schedule=1f1b`):

    ```
    schedule: 1f1b
    layers: 5
    stage 0: layers 0-2 (cost 10237952)
    stage 1: layers 3-4 (cost 7248000)
    rank 0: F0 F1 B0 F2 B1 F3 B2 B3
    rank 1: F0 B0 F1 B1 F2 B2 F3 B3
    makespan: 13.247725
    busy_time: 20.495449
    bubble_fraction: 0.226454
    textbook_bubble_fraction: 0.200000
    peak_live_microbatches rank 0: 2
    peak_live_microbatches rank 1: 1
    ```
    Schedules: `gpipe` (all forwards, then all backwards), `1f1b`
    (PipeDream-flush), `interleaved` (Megatron-LM, needs microbatches
    divisible by pp; labels `F3c1` name the rank's chunk), `zb-h1`
    (zero-bubble: backward split into B, the input gradient, and W, the
    weight gradient, W held back to fill the cool-down). Time unit: the
    forward of the costliest chunk; B and W each take as long as F (backward
    is twice the forward), an unsplit backward B + W. `uniform=true` gives
    every chunk F = B = W = 1 instead, where the bubble fraction equals the
    textbook value. `comm-time` adds that much to every dependency between
    ranks. `trace=FILE` writes the timelines as Chrome/Perfetto JSON (one
    "X" event per action, tid = rank, 1 time unit = 1 us). Peak live
    microbatches counts forwards whose B has not finished. The IR is
    unchanged.
  }];
  let options = [
    Option<"pp", "pp", "int64_t", /*default=*/"1", "Pipeline stages (ranks)">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Microbatches per step">,
    Option<"schedule", "schedule", "::mlir::braid::ScheduleKind",
           /*default=*/"::mlir::braid::ScheduleKind::OneFOneB",
           "Pipeline schedule">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "Model chunks per rank (interleaved only)">,
    ListOption<"layout", "layout", "int64_t",
               "Layers per chunk, e.g. 7,8,8,7; empty: balanced by FLOPs">,
    Option<"trace", "trace", "std::string", /*default=*/"\"\"",
           "Write a Chrome/Perfetto JSON trace of the simulation here">,
    Option<"uniform", "uniform", "bool", /*default=*/"false",
           "Time every chunk as F = B = W = 1 (ignore the FLOPs)">,
    Option<"commTime", "comm-time", "double", /*default=*/"0.0",
           "Time of one send between ranks, in schedule time units">,
  ];
}


//===----------------------------------------------------------------------===//
// Pipeline parallelism and micro-batching
//===----------------------------------------------------------------------===//

def BraidDeriveInferencePass
    : Pass<"braid-derive-inference", "::mlir::ModuleOp"> {
  let summary = "Derive the prefill, decode and forward programs from the training step";
  let description = [{
    From the model's training step (the `train_step` entry: tokens and
    labels to the loss) and the layer functions it calls, builds three entry
    points that share the model's parameters (the first two also a KV
    cache):

    - `@prefill(tokens [B, L], positions [B], last [B]) -> logits [B, V]`
      (`braid.entry = "prefill"`): the prompts, padded to L rows, written
      into the cache from each sequence's `positions` (0 for a new prompt);
      the logits of each prompt's row `last` (its length - 1), the final
      norm and LM head run on that row only;
    - `@decode(tokens [B, 1], positions [B]) -> logits [B, V]`
      (`braid.entry = "decode"`): one new token per sequence at its position;
    - `@forward(tokens [B, C]) -> logits [B, C, V]` (`braid.entry =
      "forward"`): the step's forward pass over the whole context, without
      a cache: what generation is verified against (teacher forcing).

    Every attention layer's keys and values go to `braid.state`s
    `cache.layers.<n>.k` / `.v` of [B, C, Hkv, D] (n the layer's call in the
    step; C = `context`), written by braid.cache_write (keys rotated) and
    read by braid.cache_attention; learned positions are added at each
    sequence's offset (braid.add_positions). A Mamba layer's convolution and
    selective scan carry their states in `cache.layers.<n>.conv` [B, K-1, Di]
    and `.ssm` (f32 [B, Di, N]), advanced in place by braid.conv_step and
    braid.scan_step, which prefill takes at each prompt's last row `last`.
    Layer functions are cloned per program (`@<layer>.prefill`,
    `@<layer>.decode`) with the cache, the positions and (prefill with a
    Mamba layer) the last rows as extra arguments. The training step and
    what only it used are removed. `batch` = 0 keeps the step's batch, `context`
    = 0 the model's sequence length, `prompt-len` = 0 the context.

    With `sample`, prefill and decode also take each sequence's `seeds`,
    `steps` (i64 [B]), `temperature`, `top_k` and `top_p` ([B]) and end with
    braid.sample of their logits (`sample-mode`, `top-k-cap`): they return
    the logits and the ids [B] (i32).

    With `page-size` P > 0 the KV cache is paged, for serving (continuous
    batching): each attention layer's `cache.layers.<n>.k` / `.v` is a pool
    of `kv-pages` N pages [N, P, Hkv, D], written by
    braid.paged_cache_write and read by braid.paged_cache_attention through
    a page table. Prefill has `prefill-batch` rows (chunks of prompts) and
    decode `batch` rows (the running sequences); both take, after the
    positions, `last_rows` [B] (a row's last real new row, -1: idle this
    call) and `pages` [B, T] (i32, T = ceil(C / P)), and prefill, in a
    model with Mamba layers, `slots` [B]: the decode row whose Mamba states
    (`[batch, ...]`) the prefill row advances.

    With `mixed-rows` (paged, attention-only models) up to four more
    programs, `@mixed_0`, `@mixed_1`, ... in increasing size, run a serving
    iteration's decode tokens and prompt chunks in one call, as vLLM's and
    SARATHI-Serve's mixed batches (the runtime takes the smallest that holds
    the iteration). Each is decode with M' rows of one token each (its M
    rounded up to K G, K = `batch` + `prefill-batch`, G = ceil(M / K)),
    every row with its own position, last row and page table, so that a
    chunk's tokens are rows of one sequence (each attends to the rows before
    it, which the same call writes first). Its rows form K groups of G
    consecutive rows, and `logit_rows` [K] (i32, `braid.input =
    "logit_rows"`) says which row of each group the final norm, the LM head
    and the sampler run on (-1: none): the logits and ids are [K], one per
    decode row or completed prompt, not one per token. Their kind is
    prefill's (`braid.entry = "prefill"`): most of their rows are prompt
    tokens, and their products are a prefill's, not a decode step's few
    rows.
  }];
  let options = [
    Option<"batch", "batch", "int64_t", /*default=*/"0",
           "Sequences per program (0: the training step's batch)">,
    Option<"context", "context", "int64_t", /*default=*/"0",
           "KV cache rows per sequence (0: the model's sequence length)">,
    Option<"promptLen", "prompt-len", "int64_t", /*default=*/"0",
           "Rows of the prefill program's padded prompts (0: the context)">,
    Option<"sample", "sample", "bool", /*default=*/"false",
           "Prefill and decode end with braid.sample and also return its ids">,
    Option<"sampleMode", "sample-mode", "::mlir::braid::SampleMode",
           /*default=*/"::mlir::braid::SampleMode::Greedy",
           "The exchanges braid.sample's split form runs (greedy, sample, "
           "nucleus)">,
    Option<"topKCap", "top-k-cap", "int64_t", /*default=*/"0",
           "The largest top-k braid.sample draws (the candidates each rank "
           "sends)">,
    Option<"prefillBatch", "prefill-batch", "int64_t", /*default=*/"0",
           "Rows of the prefill program (0: batch)">,
    Option<"pageSize", "page-size", "int64_t", /*default=*/"0",
           "Positions per page of a paged KV cache (0: a cache of context "
           "rows per sequence)">,
    Option<"kvPages", "kv-pages", "int64_t", /*default=*/"0",
           "Pages of the paged KV cache's pool (0: batch x ceil(context / "
           "page-size))">,
    ListOption<"mixedRows", "mixed-rows", "int64_t",
               "Token rows of the mixed programs, at most 4 (paged, no Mamba "
               "layer; none: no mixed program), each rounded up to a multiple "
               "of batch + prefill-batch">,
  ];
}

def BraidMicrobatchPass : Pass<"braid-microbatch", "::mlir::ModuleOp"> {
  let summary = "Make the step compute one micro-batch of its batch";
  let description = [{
    Divides the leading (batch) dimension of the step's inputs by `count`
    and carries the new shapes through the step and the layer functions it
    calls, so that the step computes one micro-batch. The loss becomes that
    micro-batch's share of the global batch's mean (`cross_entropy` gets the
    global token count as its `denominator`): the sum of the micro-batches'
    losses, and of their gradients, is the step's. MoE dispatch capacity is
    per micro-batch, as it is per data-parallel shard. Runs before
    `--braid-partition`; `--braid-pipeline` then builds the loop over the
    micro-batches. `count` = 1 changes nothing.

    ```mlir
    func.func @step(%tok: tensor<8x16xi32>, %labels: tensor<8x16xi32>) -> tensor<f32>
    ```
    becomes with `count=4`
    ```mlir
    func.func @step(%tok: tensor<2x16xi32>, %labels: tensor<2x16xi32>) -> tensor<f32>
        attributes {braid.microbatches = 4 : i64}
    ```
  }];
  let options = [
    Option<"count", "count", "int64_t", /*default=*/"1",
           "Micro-batches per step">,
  ];
}

def BraidPipelineStagesPass
    : Pass<"braid-pipeline-stages", "::mlir::ModuleOp"> {
  let summary = "Assign the step's ops to pipeline model chunks";
  let description = [{
    Splits the layers of the step into `pp * virtual-stages` contiguous model
    chunks and stamps every op of the step with its chunk (`braid.stage`):
    a layer call gets its chunk; the embedding and whatever precedes the
    first layer go with the first chunk, the head and the loss with the last;
    other ops follow their operands. Parameter reads (and ops computed from
    parameters alone) are cloned into every chunk that uses them, so that a
    tied embedding is read by the first and the last chunk.

    The layers of each chunk come from `layout` (layers per chunk, e.g.
    `7,8,8,7`), else from `braid.stage` attributes the model gives its layer
    calls, else from balancing the layers' cost (FLOPs; the embedding counted
    with the first layer, the head and loss with the last). A layout that
    does not cover every layer exactly once is an error.

    `--braid-autodiff` carries the stamps to the backward ops, and
    `--braid-pipeline` cuts the step along them.
  }];
  let options = [
    Option<"pp", "pp", "int64_t", /*default=*/"1", "Pipeline ranks">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "Model chunks per pipeline rank">,
    ListOption<"layout", "layout", "int64_t",
               "Layers per model chunk (empty: stage attributes or balance)">,
  ];
}

def BraidPipelinePass : Pass<"braid-pipeline", "::mlir::ModuleOp"> {
  let summary = "Cut the differentiated step into pipeline stage programs";
  let description = [{
    Runs after `--braid-autodiff` on a step whose ops carry `braid.stage`
    (`--braid-pipeline-stages`) and computes one micro-batch
    (`--braid-microbatch`). Each model chunk c becomes a forward function
    `@step.c<c>.fwd` (its inputs received from chunk c-1, its outputs and the
    values its backward needs returned) and a backward function
    `@step.c<c>.bwd` (the cotangents of its outputs in, those of its inputs
    and its parameters' gradients out); the zero-bubble schedule splits the
    backward further into `.bwd_input` and `.bwd_weight`.

    Each pipeline rank r gets its own step function `@step.pp<r>`, a
    `braid.entry = "train_step"` entry point in place of the step, which
    runs the schedule explicitly: for every action of the rank, in order,
    the micro-batch's inputs (`dist.microbatch`), the receive of what the
    neighbouring chunk sent (`dist.recv`), the call of the chunk function
    (tagged `dist.action`), the send to the next or previous chunk
    (`dist.send`), and the accumulation of the gradients. After the last
    action, parameters that several ranks hold (a tied embedding) have their
    gradients exchanged and summed, and the loss is summed over the pp axis
    so that every rank reports it. Each rank's function returns the loss and
    its parameters' gradients for `--braid-optimizer`. The module attribute
    `braid.pipeline_entries` lists the ranks' step functions.
  }];
  let options = [
    Option<"schedule", "schedule", "::mlir::braid::ScheduleKind",
           /*default=*/"::mlir::braid::ScheduleKind::OneFOneB",
           "Pipeline schedule">,
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def BraidMicrobatchInferencePass
    : Pass<"braid-microbatch-inference", "::mlir::ModuleOp"> {
  let summary = "Make the inference programs compute one micro-batch of their sequences";
  let description = [{
    The inference programs' `--braid-microbatch`: each `prefill`, `decode`
    and `forward` entry point is re-typed to one micro-batch of its
    sequences (the leading dimension of its inputs divided by `count`, the
    new shapes carried through its ops and layer functions), and each KV
    cache state it reads to one micro-batch's cache (its leading, sequence
    dimension divided by `count`). Runs before `--braid-partition`;
    `--braid-pipeline-inference` then runs the programs once per micro-batch,
    each on a cache of its own. Entry points of other kinds are left alone;
    `count` = 1 changes nothing.

    ```mlir
    braid.state @cache.layers.0.k zeros : tensor<4x16x2x16xf32>
    func.func @decode(%tok: tensor<4x1xi32>, %pos: tensor<4xi32>) -> tensor<4x256xf32>
    ```
    becomes with `count=2`
    ```mlir
    braid.state @cache.layers.0.k zeros : tensor<2x16x2x16xf32>
    func.func @decode(%tok: tensor<2x1xi32>, %pos: tensor<2xi32>) -> tensor<2x256xf32>
        attributes {braid.microbatches = 2 : i64}
    ```
  }];
  let options = [
    Option<"count", "count", "int64_t", /*default=*/"1",
           "Micro-batches per program">,
  ];
}

def BraidPipelineInferencePass
    : Pass<"braid-pipeline-inference", "::mlir::ModuleOp"> {
  let summary = "Cut the inference programs into pipeline stage programs";
  let description = [{
    Runs after `--braid-partition` on a module with `prefill`, `decode` and
    `forward` entry points (`--braid-derive-inference`), each re-typed to one
    micro-batch by `--braid-microbatch-inference` (`braid.microbatches`).
    The layers are split into as many contiguous stages as the grid's pp
    axis has ranks (`layout`: layers per stage; else balanced on the forward
    program's cost), the same split for every program, and the programs' ops
    are stamped with their stage as `--braid-pipeline-stages` stamps the
    step's. Each program `@P` becomes one program per stage, `@P.pp<s>`
    (`braid.entry` its kind, `braid.pipeline_rank` = s), which for every
    micro-batch in turn takes the micro-batch of the inputs its stage reads
    (`dist.microbatch`), receives what earlier stages computed for it
    (`dist.recv` from stage s-1), runs its stage's ops, and sends on what
    later stages read (`dist.send` to stage s+1). The last stage returns the
    program's results, the micro-batches' concatenated (`dist.pack`); the
    others return nothing. A stage holds its layers' parameters and KV cache:
    with several micro-batches, each cache state becomes one per micro-batch
    (`@cache.layers.<n>.k.mb<j>`: sequences [j B/m, (j+1) B/m)). With one
    stage the programs keep their names. `braid.pipeline_entries` lists the
    programs stage by stage.
  }];
  let options = [
    ListOption<"layout", "layout", "int64_t",
               "Layers per stage (empty: balanced)">,
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_PASSES_TD
