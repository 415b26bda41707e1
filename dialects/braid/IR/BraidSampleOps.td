//===- BraidSampleOps.td - choosing the next token ---------*- tablegen -*-===//
//
// braid.sample ends the prefill and decode programs: each row's next token
// from its logits. On a vocabulary split over ranks, --convert-braid-to-dist
// expands it into the pieces below and the dist.all_gather between them, in
// a fixed schedule of phases (runtime/src/sampling_rows.h, whose arithmetic
// the kernels share): every rank folds every rank's few words per row into
// the same state, and never gathers the logits.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDSAMPLEOPS_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDSAMPLEOPS_TD

def Braid_SampleMode : I32EnumAttr<"SampleMode",
    "the exchanges a vocabulary-split sampler needs", [
    I32EnumAttrCase<"Greedy", 0, "greedy">,
    I32EnumAttrCase<"Sample", 1, "sample">,
    I32EnumAttrCase<"Nucleus", 2, "nucleus">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}
def Braid_SampleModeAttr : EnumAttr<Braid_Dialect, Braid_SampleMode, "sample_mode">;

// The numbering is sampling_rows.h's Phase.
def Braid_SamplePhase : I32EnumAttr<"SamplePhase", "a phase of the split sampler", [
    I32EnumAttrCase<"Max", 0, "max">,
    I32EnumAttrCase<"Mass", 1, "mass">,
    I32EnumAttrCase<"Search", 2, "search">,
    I32EnumAttrCase<"Shares", 3, "shares">,
    I32EnumAttrCase<"Draw", 4, "draw">
  ]> {
  let cppNamespace = "::mlir::braid";
  let genSpecializedAttr = 0;
}
def Braid_SamplePhaseAttr : EnumAttr<Braid_Dialect, Braid_SamplePhase, "sample_phase">;

def Braid_I64Tensor : StaticShapeTensorOf<[I64]>;
def Braid_I32Tensor : StaticShapeTensorOf<[I32]>;

def Braid_SampleOp : Braid_InferredOp<"sample",
    [Braid_ShardingRule, Braid_Cost, Braid_KernelCall]> {
  let summary = "each row's next token: greedy, temperature, top-k, top-p";
  let description = [{
    `logits` [B, V] (any float type, read as f32; columns at or past `vocab`
    are padding, never drawn) and per row b: `seeds[b]` (i64: the run's
    seed plus the request's index), `steps[b]` (i64: the token's index in
    the request), `temperature[b]`, `top_k[b]` (i32) and `top_p[b]` (f32,
    read as double). `ids[b]` (i32) is:

    - temperature <= 0 (or one token): the lowest index among the largest
      logits (greedy);
    - otherwise each token weighs w_i = exp((logit_i - max) / T), computed
      in double and truncated to an integer of 40 fraction bits. The
      candidates are ordered by weight, ties by the lower index; the kept
      set is the first top_k of that order (top_k > 0), then its shortest
      prefix whose mass reaches ceil(top_p x kept mass) (top_p < 1). With
      u the uniform of the counter-based generator keyed by (seeds[b],
      "sample") at counter steps[b] (53 bits of Philox4x32-10), the target
      is min(floor(u x kept mass), kept mass - 1) and the token is the first
      kept one, in index order, whose running mass exceeds it.

    Every sum is of integers, so a row's token depends on its logits, seed
    and step only: not on the batch, the thread count or how the vocabulary
    is split (runtime/src/sampling.h's sampleToken is the reference;
    test/lib/braid_ref's `sample` its numpy twin).

    `mode` says which exchanges a vocabulary split needs: `greedy` one (rows
    must be greedy), `sample` three (temperature and top-k up to
    `top_k_cap`, and top-p whose nucleus ends within the `top_k_cap` first
    candidates of some rank), `nucleus` twelve (any top-p). A row the
    program's mode cannot draw is a fatal runtime error naming it, as is a
    top_k above `top_k_cap`. `vocab_axes` (set by --braid-partition) names
    the grid axes that split V; --convert-braid-to-dist then expands the op.

    ```mlir
    %ids = braid.sample sample %logits, %seeds, %steps, %t, %k, %p
        {top_k_cap = 40, vocab = 97}
        : (tensor<2x97xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>,
           tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$logits, Braid_I64Tensor:$seeds,
                       Braid_I64Tensor:$steps, Braid_F32Tensor:$temperature,
                       Braid_I32Tensor:$top_k, Braid_F32Tensor:$top_p,
                       I64Attr:$vocab, Braid_SampleModeAttr:$mode,
                       DefaultValuedAttr<I64Attr, "0">:$top_k_cap,
                       OptionalAttr<StrArrayAttr>:$vocab_axes);
  let results = (outs Braid_I32Tensor:$ids);
  let assemblyFormat = [{
    $mode $logits `,` $seeds `,` $steps `,` $temperature `,` $top_k `,`
    $top_p attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Braid_SampleLocalOp : Braid_Op<"sample_local",
    [Pure, Braid_Cost, Braid_KernelCall]> {
  let summary = "this rank's words of one phase of the split sampler";
  let description = [{
    `logits` [B, Vl] holds the vocabulary's columns [offset, offset + Vl)
    (those at or past `vocab` are padding). For each row b, the
    `words` [B, W] this rank sends in `phase` (W: max 2, mass 2 + 2
    top_k_cap, search 63, shares 2, draw 1; sampling_rows.h's localWords),
    from its block and the row's `state` [B, S] (every phase but max), which
    every rank holds alike.

    ```mlir
    %w = braid.sample_local max %logits, %t, %k, %p at %off
        {top_k_cap = 0, vocab = 97} : (tensor<2x49xf32>, tensor<2xf32>,
        tensor<2xi32>, tensor<2xf32>, index) -> tensor<2x2xi64>
    ```
  }];
  let arguments = (ins Braid_SamplePhaseAttr:$phase, Braid_FloatTensor:$logits,
                       Optional<Braid_I64Tensor>:$state,
                       Braid_F32Tensor:$temperature, Braid_I32Tensor:$top_k,
                       Braid_F32Tensor:$top_p, Index:$offset, I64Attr:$vocab,
                       I64Attr:$top_k_cap);
  let results = (outs Braid_I64Tensor:$words);
  let assemblyFormat = [{
    $phase $logits (`state` $state^)? `,` $temperature `,` $top_k `,` $top_p
    `at` $offset attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Braid_SampleMergeOp : Braid_Op<"sample_merge", [Pure, Braid_KernelCall]> {
  let summary = "every rank's words of one phase folded into each row's state";
  let description = [{
    `gathered` [R B, W] holds every rank's `words` of `phase` (rank k's
    rows at k B, as dist.all_gather stacks them); the result is each row's
    new state [B, S], S = 10 + 3 R (sampling_rows.h's mergeWords), from the
    previous `state` (every phase but max). `seeds` and `steps` key the
    draw's uniform (max). The same on every rank.

    ```mlir
    %s = braid.sample_merge max %g, %t, %k, %p, %seeds, %steps
        {top_k_cap = 0, vocab = 97} : (tensor<4x2xi64>, tensor<2xf32>,
        tensor<2xi32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi64>)
        -> tensor<2x16xi64>
    ```
  }];
  let arguments = (ins Braid_SamplePhaseAttr:$phase, Braid_I64Tensor:$gathered,
                       Optional<Braid_I64Tensor>:$state,
                       Braid_F32Tensor:$temperature, Braid_I32Tensor:$top_k,
                       Braid_F32Tensor:$top_p, Braid_I64Tensor:$seeds,
                       Braid_I64Tensor:$steps, I64Attr:$vocab,
                       I64Attr:$top_k_cap);
  let results = (outs Braid_I64Tensor:$result);
  let assemblyFormat = [{
    $phase $gathered (`state` $state^)? `,` $temperature `,` $top_k `,`
    $top_p `,` $seeds `,` $steps attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Braid_SampleIdsOp : Braid_Op<"sample_ids", [Pure, Braid_KernelCall]> {
  let summary = "each row's token from the split sampler's state";
  let description = [{
    `ids[b]` (i32) is the token of row b's `state` [B, S]; a row the phases
    did not decide (a mode too small for its sampling) is a fatal runtime
    error naming it.

    ```mlir
    %ids = braid.sample_ids %s : tensor<2x16xi64> -> tensor<2xi32>
    ```
  }];
  let arguments = (ins Braid_I64Tensor:$state);
  let results = (outs Braid_I32Tensor:$ids);
  let assemblyFormat = [{
    $state attr-dict `:` type($state) `->` type($ids)
  }];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAID_IR_BRAIDSAMPLEOPS_TD
