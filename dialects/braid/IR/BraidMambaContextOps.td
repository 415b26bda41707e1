//===- BraidMambaContextOps.td - Mamba state carry over cp -*- tablegen -*-===//
//
// The local pieces --convert-braid-to-dist expands a prefill's Mamba steps
// into when context parallelism splits the prompt (MambaContext.cpp of
// BraidToDist): each rank holds the rows [first_row, first_row + S) of a
// prompt of `prompt_len` rows. The convolution takes the previous rank's
// last K-1 inputs (a halo), the scan the state the previous chunks leave
// (composed from every chunk's zero-start final state and decay, as
// training's braid.scan_carry), and each sequence's new states, taken on
// the rank that holds its last row, are all-gathered and written on every
// rank. Included by BraidOps.td; their rules are in MambaContextOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDMAMBACONTEXTOPS_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDMAMBACONTEXTOPS_TD

def Braid_ConvStepChunkOp : Braid_Op<"conv_step_chunk",
    [Pure, AllTypesMatch<["state", "halo", "chunk_state"]>,
     AllTypesMatch<["input", "result"]>,
     AllTypesMatch<["positions", "last_rows"]>, Braid_Cost,
     Braid_KernelCall]> {
  let summary = "braid.conv_step over this rank's chunk of the prompt rows";
  let description = [{
    `input` [B, S, C] holds rows [first_row, first_row + S) of each
    sequence's `prompt_len` prompt rows; `halo` [B, K-1, C] the K-1 inputs
    before them (the previous rank's last rows); `state`, `weight`, `bias`,
    `positions` and `last_rows` (required) as braid.conv_step. With
    `xe[b] = concat(first_row > 0 ? halo[b] : positions[b] == 0 ? 0 :
    state[b], input[b])`, `result` is braid.conv_step's and `chunk_state[b]`
    = `xe[b, l + 1 + i]` (i < K-1) with l = last_rows[b] - first_row when
    the sequence's last row falls in the chunk (0 <= l < S), zeros
    otherwise. A last row outside [0, prompt_len) is a fatal runtime error.
    The state is only read: braid.take_chunk_state writes it.

    ```mlir
    %y, %cs = braid.conv_step_chunk %s, %halo, %x, %w bias %b, %pos last %last
        at %first of 16 : tensor<2x3x128xf32>, tensor<2x8x128xf32>,
        tensor<128x4xf32> bias tensor<128xf32>, tensor<2xi32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$state, Braid_FloatTensor:$halo,
                       Braid_FloatTensor:$input, Braid_FloatTensor:$weight,
                       Optional<Braid_FloatTensor>:$bias,
                       Braid_IndexTensor:$positions,
                       Braid_IndexTensor:$last_rows, Index:$first_row,
                       I64Attr:$prompt_len);
  let results = (outs Braid_FloatTensor:$result,
                      Braid_FloatTensor:$chunk_state);
  let assemblyFormat = [{
    $state `,` $halo `,` $input `,` $weight (`bias` $bias^)? `,` $positions
    `last` $last_rows `at` $first_row `of` $prompt_len attr-dict `:`
    type($state) `,` type($input) `,` type($weight) (`bias` type($bias)^)?
    `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Braid_ScanStepChunkOp : Braid_Op<"scan_step_chunk",
    [Pure, AllTypesMatch<["state", "chunk_state"]>,
     AllTypesMatch<["decay_all", "hend_all"]>,
     AllTypesMatch<["input", "result"]>,
     AllTypesMatch<["positions", "last_rows"]>, Braid_Cost,
     Braid_KernelCall]> {
  let summary = "braid.scan_step over this rank's chunk, from the carried state";
  let description = [{
    `input` and `delta` [B, S, Di] hold rows [first_row, first_row + S) of
    each sequence's `prompt_len` prompt rows (chunk c = first_row / S of n =
    prompt_len / S); `decay_all` and `hend_all` f32 [n B, Di, N] every
    chunk's zero-start decay and final state (braid.scan_chunk_state,
    all-gathered); the rest as braid.scan_step. The state entering the
    chunk is H_{c-1}, with H_{-1} = `positions[b] == 0 ? 0 : state[b]` and
    H_j = decay_j H_{j-1} + hend_j (in double, rounded to f32 once); from
    it the chunk's rows are scanned as braid.scan_step scans them.
    `chunk_state[b]` is h after row last_rows[b] when that row falls in the
    chunk, zeros otherwise. A last row outside [0, prompt_len) is a fatal
    runtime error. The state is only read: braid.take_chunk_state writes it.

    ```mlir
    %y, %hs = braid.scan_step_chunk %h, %decays, %hends, %x, %dt, %A, %B, %C,
        %D, %pos last %last at %first of 16 delta_softplus
        : tensor<2x128x16xf32>, tensor<4x128x16xf32>, tensor<2x8x128xf32>,
          tensor<2x8x128xf32>, tensor<128x16xf32>, tensor<2x8x16xf32>,
          tensor<2x8x16xf32>, tensor<128xf32>, tensor<2xi32>
    ```
  }];
  let arguments = (ins Braid_F32Tensor:$state, Braid_F32Tensor:$decay_all,
                       Braid_F32Tensor:$hend_all, Braid_FloatTensor:$input,
                       Braid_FloatTensor:$delta, Braid_FloatTensor:$A,
                       Braid_FloatTensor:$B, Braid_FloatTensor:$C,
                       Braid_FloatTensor:$D, Braid_IndexTensor:$positions,
                       Braid_IndexTensor:$last_rows, Index:$first_row,
                       I64Attr:$prompt_len, UnitAttr:$delta_softplus);
  let results = (outs Braid_FloatTensor:$result,
                      Braid_F32Tensor:$chunk_state);
  let assemblyFormat = [{
    $state `,` $decay_all `,` $hend_all `,` $input `,` $delta `,` $A `,` $B
    `,` $C `,` $D `,` $positions `last` $last_rows `at` $first_row `of`
    $prompt_len (`delta_softplus` $delta_softplus^)? attr-dict `:`
    type($state) `,` type($decay_all) `,` type($input) `,` type($delta) `,`
    type($A) `,` type($B) `,` type($C) `,` type($D) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Braid_TakeChunkStateOp : Braid_Op<"take_chunk_state",
    [MemoryEffects<[MemWrite]>, AllTypesMatch<["state", "new_state"]>,
     Braid_KernelCall]> {
  let summary = "each sequence's state from the chunk that holds its last row, in place";
  let description = [{
    `chunk_states` [n B, ...] stacks n chunks' `chunk_state` results
    (chunk j at rows j B.., as an all-gather along dimension 0 lays them
    out); `last_rows` [B] (i32) each sequence's last prompt row, in chunks
    of `chunk_rows` rows: `new_state[b] = chunk_states[(last_rows[b] /
    chunk_rows) B + b]`, a copy, so every rank holds the same bits. A last
    row outside [0, n chunk_rows) is a fatal runtime error.

    `new_state` is the state updated in place (the memory plan gives it the
    state's storage). The state's other users are the chunk ops that read it
    before: this op depends on them through `chunk_states`.

    ```mlir
    %s1 = braid.take_chunk_state %s, %all, %last of 8
        : tensor<2x3x128xf32>, tensor<4x3x128xf32>, tensor<2xi32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$state, AnyRankedTensor:$chunk_states,
                       Braid_IndexTensor:$last_rows, I64Attr:$chunk_rows);
  let results = (outs AnyRankedTensor:$new_state);
  let assemblyFormat = [{
    $state `,` $chunk_states `,` $last_rows `of` $chunk_rows attr-dict `:`
    type($state) `,` type($chunk_states) `,` type($last_rows)
  }];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAID_IR_BRAIDMAMBACONTEXTOPS_TD
