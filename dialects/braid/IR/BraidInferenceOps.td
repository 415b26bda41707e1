//===- BraidInferenceOps.td - KV cache and generation ops --*- tablegen -*-===//
//
// The ops of the inference programs (`prefill`, `decode`) that
// --braid-derive-inference makes from a model's training step: the KV cache
// is persistent program state (braid.state, read by braid.get_param like any
// state), written in place by braid.cache_write and read by
// braid.cache_attention; a prompt's last row is picked by braid.take_rows;
// learned positions at a sequence's own offset are braid.add_positions; a
// Mamba layer's conv and SSM states are advanced in place by
// braid.conv_step and braid.scan_step. Included by BraidOps.td. Their rules
// are in InferenceOps.cpp and MambaStepOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDINFERENCEOPS_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDINFERENCEOPS_TD

def Braid_CacheWriteOp : Braid_Op<"cache_write",
    [MemoryEffects<[MemWrite]>, AllTypesMatch<["cache", "result"]>,
     Braid_ShardingRule, Braid_Cost, Braid_KernelCall]> {
  let summary = "writes new rows into a KV cache, in place";
  let description = [{
    `cache` [B, C, H, D] holds C rows per sequence; `rows` [B, S, H, D] are
    the new rows of each sequence and `positions` [B] (i32) their first
    position: `result = cache` except that, for s < S and p = positions[b] + s,
    `result[b, p, h, :] = rotate(rows[b, s, h, :], p)`. With `rope_theta`,
    `rotate` is the rotary embedding braid.attention applies to a key at
    position p (so the cache holds keys as attention compares them and a
    decode step rotates only its query); without it, a copy. A position
    outside [0, C) is a fatal runtime error naming the sequence (the runtime
    refuses a request that would reach it before it runs).

    The result is the cache itself, updated in place: the memory plan gives
    it the cache's storage (a state, or the argument that carries one into a
    layer function), so the cache operand must have no other use. The write
    persists after the program returns, so the op is not pure.

    ```mlir
    %kc1 = braid.cache_write %kc, %k, %pos {rope_theta = 1.000000e+04 : f64}
        : tensor<2x64x2x16xf32>, tensor<2x1x2x16xf32>, tensor<2xi32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$cache, Braid_FloatTensor:$rows,
                       Braid_IndexTensor:$positions,
                       OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $cache `,` $rows `,` $positions attr-dict `:` type($cache) `,` type($rows)
    `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Braid_CacheAttentionOp : Braid_InferredOp<"cache_attention",
    [Braid_ShardingRule, Braid_Cost, Braid_KernelCall]> {
  let summary = "attention of new query rows over a KV cache";
  let description = [{
    `query` [B, S, Hq, D], `key_cache` [B, C, Hkv, D], `value_cache`
    [B, C, Hkv, Dv], `positions` [B] (i32), Hq a multiple of Hkv
    (g = Hq / Hkv: grouped-query attention as braid.attention).

    Query s of sequence b is at position p = positions[b] + s: it is rotated
    to p (with `rope_theta`, as braid.attention rotates a query) and attends
    causally to the cache rows t <= p, whose keys braid.cache_write stored
    already rotated:
    `score[t] = scale * sum_d q'[b, s, h, d] * key_cache[b, t, h/g, d]`,
    `scale` defaulting to 1/sqrt(D), and
    `result[b, s, h, :] = sum_{t <= p} softmax(score)[t] * value_cache[b, t, h/g, :]`,
    the softmax in f32. Rows beyond p (a shorter prompt's padding, another
    request's leftovers) are never read. With positions 0 and the rows of
    the cache written from the same keys, this is braid.attention with
    `causal`. A position at or beyond C is a fatal runtime error.

    ```mlir
    %o = braid.cache_attention %q, %kc, %vc, %pos {rope_theta = 1.000000e+04 : f64}
        : tensor<2x1x4x16xf32>, tensor<2x64x2x16xf32>, tensor<2x64x2x16xf32>,
          tensor<2xi32> -> tensor<2x1x4x16xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$query, Braid_FloatTensor:$key_cache,
                       Braid_FloatTensor:$value_cache,
                       Braid_IndexTensor:$positions,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `,` $positions attr-dict `:`
    type($query) `,` type($key_cache) `,` type($value_cache) `,`
    type($positions) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// `scale`, or 1/sqrt(head dim).
    double getScaleOrDefault();
  }];
}

def Braid_TakeRowsOp : Braid_InferredOp<"take_rows",
    [Braid_ShardingRule, Braid_Cost, Braid_KernelCall]> {
  let summary = "one row of each sequence";
  let description = [{
    `input` [B, S, H], `index` [B] (i32): `result[b, :] = input[b, index[b], :]`,
    [B, H]. Prefill picks each prompt's last row with it, before the final
    norm and the LM head, so their work is one row per sequence. Index -1
    gives a row of zeros (an idle sequence of a serving program,
    BraidPagedCacheOps.td); any other index outside [0, S) is a fatal runtime
    error naming the sequence.

    ```mlir
    %last = braid.take_rows %h, %idx : tensor<2x16x64xf32>, tensor<2xi32> -> tensor<2x64xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_IndexTensor:$index);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $index attr-dict `:` type($input) `,` type($index) `->`
    type($result)
  }];
}

def Braid_AddPositionsOp : Braid_InferredOp<"add_positions",
    [Braid_ShardingRule, Braid_Cost, Braid_KernelCall]> {
  let summary = "adds learned position embeddings at each sequence's offset";
  let description = [{
    `input` [B, S, H], `table` [P, H], `positions` [B] (i32):
    `result[b, s, :] = input[b, s, :] + table[positions[b] + s, :]`, one f32
    addition rounded to the element type: braid.embedding with a position
    table computes the same sum for positions 0. A row outside [0, P) is a
    fatal runtime error.

    ```mlir
    %h = braid.add_positions %x, %wpe, %pos
        : tensor<2x1x64xf32>, tensor<16x64xf32>, tensor<2xi32> -> tensor<2x1x64xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$table,
                       Braid_IndexTensor:$positions);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $table `,` $positions attr-dict `:` type($input) `,`
    type($table) `,` type($positions) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Mamba state (MambaStepOps.cpp)
//===----------------------------------------------------------------------===//

// The state slot of each sequence of a Mamba step ([B] i32).
def Braid_SlotTensor : StaticShapeTensorOf<[I32]>;

// A Mamba layer carries two states per sequence from one call to the next:
// the last K-1 inputs of its causal convolution and the selective scan's
// h. Both ops below advance a state over S new rows of each sequence (a
// prompt in prefill, S = 1 in decode), in place as braid.cache_write: the
// memory plan gives `new_state` the state's storage and the verifier makes
// the op the state operand's only use.

def Braid_ConvStepOp : Braid_Op<"conv_step",
    [MemoryEffects<[MemWrite]>, AttrSizedOperandSegments,
     AllTypesMatch<["input", "result"]>, AllTypesMatch<["state", "new_state"]>,
     Braid_ShardingRule, Braid_Cost, Braid_KernelCall]> {
  let summary = "braid.conv1d over new rows after a carried conv state, in place";
  let description = [{
    `state` [B, K-1, C] holds, per sequence, the K-1 inputs before its
    position; `input` [B, S, C] the new rows, `weight` [C, K], optional
    `bias` [C], `positions` [B] (i32) each sequence's first new position and
    optional `last_rows` [B] (i32, default S - 1) its last real row. With
    `xe[b] = concat(positions[b] == 0 ? 0 : state[b], input[b])` ([K-1+S, C]:
    a sequence at position 0 starts from the causal zero padding, whatever
    the state holds):

    `result[b, t, c] = bias[c] + sum_{j<K} weight[c, j] * xe[b, t + j, c]`
    (braid.conv1d of the whole sequence so far, at its new rows), and
    `new_state[b, i, c] = xe[b, last_rows[b] + 1 + i, c]` for i < K-1: the
    K-1 inputs ending at row `last_rows[b]`, so padding after a shorter
    prompt is not carried.

    `last_rows[b] == -1` marks sequence b idle in this call: its state is
    untouched and `result[b]` is zeros. Any other last row outside [0, S) is
    a fatal runtime error naming the sequence.

    With the optional `slots` [B] (i32), the state holds S' slots
    ([S', K-1, C], S' free) and sequence b reads and writes slot
    `slots[b]` in place of `state[b]` above; without it sequence b uses
    slot b (S' = B). The slots of the sequences that are not idle must lie
    in [0, S') and be distinct (an idle sequence's slot is not read): a
    fatal runtime error naming the sequence otherwise. Slots other than
    those of the non-idle sequences are untouched.

    `new_state` is the state updated in place (the memory plan gives it the
    state's storage: the op must be the state operand's only use).

    ```mlir
    %y, %cs1 = braid.conv_step %cs, %x, %w bias %b, %pos last %last
        : tensor<2x3x128xf32>, tensor<2x16x128xf32>, tensor<128x4xf32>
          bias tensor<128xf32>, tensor<2xi32>, tensor<2xi32>
    // Two sequences in slots %slots of a state of 8 slots:
    %y2, %cs2 = braid.conv_step %cs8, %x, %w, %pos last %last slots %slots
        : tensor<8x3x128xf32>, tensor<2x16x128xf32>, tensor<128x4xf32>,
          tensor<2xi32>, tensor<2xi32> slots tensor<2xi32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$state, Braid_FloatTensor:$input,
                       Braid_FloatTensor:$weight,
                       Optional<Braid_FloatTensor>:$bias,
                       Braid_IndexTensor:$positions,
                       Optional<Braid_IndexTensor>:$last_rows,
                       Optional<Braid_SlotTensor>:$slots);
  let results = (outs Braid_FloatTensor:$result, Braid_FloatTensor:$new_state);
  let assemblyFormat = [{
    $state `,` $input `,` $weight (`bias` $bias^)? `,` $positions
    (`last` $last_rows^)? (`slots` $slots^)? attr-dict `:` type($state) `,`
    type($input) `,` type($weight) (`bias` type($bias)^)? `,`
    type($positions) (`,` type($last_rows)^)? (`slots` type($slots)^)?
  }];
  let builders = [
    // Without slots: sequence b uses state slot b.
    OpBuilder<(ins "Value":$state, "Value":$input, "Value":$weight,
                   "Value":$bias, "Value":$positions, "Value":$lastRows), [{
      build($_builder, $_state, state, input, weight, bias, positions,
            lastRows, /*slots=*/Value());
    }]>
  ];
  let hasVerifier = 1;
}

def Braid_ScanStepOp : Braid_Op<"scan_step",
    [MemoryEffects<[MemWrite]>, AttrSizedOperandSegments,
     AllTypesMatch<["input", "result"]>, AllTypesMatch<["state", "new_state"]>,
     Braid_ShardingRule, Braid_Cost, Braid_KernelCall]> {
  let summary = "braid.selective_scan over new rows from a carried state, in place";
  let description = [{
    `state` f32 [B, Di, N] holds each sequence's h before its position;
    `input` x and `delta` [B, S, Di], `A` [Di, N], `B` and `C` [B, S, N],
    `D` [Di], `positions` [B] (i32) and optional `last_rows` [B] (i32,
    default S - 1) as braid.conv_step. h[b] starts at
    `positions[b] == 0 ? 0 : state[b]` and for t = 0..S-1, with
    dt = softplus(delta) when `delta_softplus` is set and delta otherwise,
    runs braid.selective_scan's recurrence:
    `h = exp(dt[b,t,d] * A[d,n]) * h + dt[b,t,d] * B[b,t,n] * x[b,t,d]`,
    `result[b,t,d] = sum_n C[b,t,n] * h[b,d,n] + D[d] * x[b,t,d]`,
    in f32. `new_state[b]` is h after row `last_rows[b]` (rows after it,
    a shorter prompt's padding, do not reach the state).

    `last_rows[b] == -1` marks sequence b idle, and the optional `slots`
    [B] (i32) names each sequence's state slot (state [S', Di, N], S'
    free), exactly as braid.conv_step's: an idle sequence's state is
    untouched and its result rows are zeros; the non-idle sequences' slots
    must lie in [0, S') and be distinct; a last row below -1 or at or past
    S, or a bad slot, is a fatal runtime error naming the sequence.

    `new_state` is the state updated in place, as braid.conv_step's.

    ```mlir
    %y, %h1 = braid.scan_step %h, %x, %dt, %A, %B, %C, %D, %pos delta_softplus
        : tensor<2x128x16xf32>, tensor<2x1x128xf32>, tensor<2x1x128xf32>,
          tensor<128x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>,
          tensor<128xf32>, tensor<2xi32>
    // Two sequences in slots %slots of a state of 8 slots:
    %y2, %h2 = braid.scan_step %h8, %x, %dt, %A, %B, %C, %D, %pos last %last
        slots %slots delta_softplus
        : tensor<8x128x16xf32>, tensor<2x1x128xf32>, tensor<2x1x128xf32>,
          tensor<128x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>,
          tensor<128xf32>, tensor<2xi32>, tensor<2xi32> slots tensor<2xi32>
    ```
  }];
  let arguments = (ins Braid_F32Tensor:$state, Braid_FloatTensor:$input,
                       Braid_FloatTensor:$delta, Braid_FloatTensor:$A,
                       Braid_FloatTensor:$B, Braid_FloatTensor:$C,
                       Braid_FloatTensor:$D, Braid_IndexTensor:$positions,
                       Optional<Braid_IndexTensor>:$last_rows,
                       Optional<Braid_SlotTensor>:$slots,
                       UnitAttr:$delta_softplus);
  let results = (outs Braid_FloatTensor:$result, Braid_F32Tensor:$new_state);
  let assemblyFormat = [{
    $state `,` $input `,` $delta `,` $A `,` $B `,` $C `,` $D `,` $positions
    (`last` $last_rows^)? (`slots` $slots^)?
    (`delta_softplus` $delta_softplus^)? attr-dict `:`
    type($state) `,` type($input) `,` type($delta) `,` type($A) `,` type($B)
    `,` type($C) `,` type($D) `,` type($positions) (`,` type($last_rows)^)?
    (`slots` type($slots)^)?
  }];
  let builders = [
    // Without slots: sequence b uses state slot b.
    OpBuilder<(ins "Value":$state, "Value":$input, "Value":$delta,
                   "Value":$A, "Value":$B, "Value":$C, "Value":$D,
                   "Value":$positions, "Value":$lastRows,
                   "bool":$deltaSoftplus), [{
      build($_builder, $_state, state, input, delta, A, B, C, D, positions,
            lastRows, /*slots=*/Value(), deltaSoftplus);
    }]>
  ];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAID_IR_BRAIDINFERENCEOPS_TD
