//===- BraidSequenceChunkOps.td - Mamba over sequence chunks -*- tablegen -*-===//
//
// The local pieces that --convert-braid-to-dist expands a context-parallel
// Mamba mixer into, each rank holding one chunk of the sequence: the
// causal convolution takes the K-1 rows before its chunk (a halo, from the
// previous rank), and the selective scan starts from the state the previous
// chunks leave (composed from every chunk's zero-start final state and
// decay, gathered over the ranks). States and their cotangents are f32
// [B, Di, N], whatever the operands' element type.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDSEQUENCECHUNKOPS_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDSEQUENCECHUNKOPS_TD

def Braid_Conv1dHaloOp : Braid_Op<"conv1d_halo", [Pure, Braid_KernelCall]> {
  let summary = "causal depthwise convolution of a chunk after its halo";
  let description = [{
    `input` [B, S, C] is a chunk of a sequence and `halo` [B, K-1, C] the
    K-1 rows before it (zeros before the first chunk); the result is the
    rows of `braid.conv1d` of their concatenation that belong to the chunk.

    ```mlir
    %y = braid.conv1d_halo %x, %h, %w bias %b : (tensor<2x8x16xf32>,
        tensor<2x3x16xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$halo,
                       Braid_FloatTensor:$weight,
                       Optional<Braid_FloatTensor>:$bias);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $halo `,` $weight (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Braid_Conv1dHaloGradOp : Braid_Op<"conv1d_halo_grad",
    [Pure, Braid_KernelCall]> {
  let summary = "cotangents of conv1d_halo's input, weight, bias and halo";
  let description = [{
    For `braid.conv1d_halo` of `input`, `halo`, `weight` and the cotangent
    `grad` of its result: `dinput`, this chunk's share of `dweight` and
    `dbias`, and `dhalo` [B, K-1, C], the cotangent of the previous chunk's
    last rows.
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$halo,
                       Braid_FloatTensor:$weight, Braid_FloatTensor:$grad);
  let results = (outs Braid_FloatTensor:$dinput, Braid_FloatTensor:$dweight,
                      Braid_FloatTensor:$dbias, Braid_FloatTensor:$dhalo);
  let assemblyFormat = [{
    $input `,` $halo `,` $weight `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Braid_AddTailOp : Braid_Op<"add_tail", [Pure,
    AllTypesMatch<["input", "result"]>, Braid_KernelCall]> {
  let summary = "adds a tensor into the last rows of a chunk";
  let description = [{
    `result = input` except `result[b, S - T + i, c] = input[b, S - T + i, c]
    + tail[b, i, c]` for the T rows of `tail` [B, T, C]: the next chunk's
    cotangent of this chunk's last rows (its halo).

    ```mlir
    %dx2 = braid.add_tail %dx, %dnext : tensor<2x8x16xf32>, tensor<2x3x16xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$tail);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input `,` $tail attr-dict `:` type($input) `,` type($tail)";
  let hasVerifier = 1;
}

def Braid_TailOp : Braid_Op<"tail", [Pure, Braid_KernelCall]> {
  let summary = "the last rows of a chunk";
  let description = [{
    `result[b, i, c] = input[b, S - T + i, c]` for the T rows of the result
    [B, T, C]: the halo a chunk sends to the next.

    ```mlir
    %h = braid.tail %x : tensor<2x8x16xf32> -> tensor<2x3x16xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Braid_ScanChunkStateOp : Braid_Op<"scan_chunk_state",
    [Pure, Braid_KernelCall]> {
  let summary = "a chunk's selective scan from a zero state: its final state and decay";
  let description = [{
    `braid.selective_scan`'s recurrence over the chunk from h = 0 gives
    `hend`, its last state, and `decay[b, d, n] = exp(A[d, n] sum_t
    delta[b, t, d])` (after the softplus with `delta_softplus`), the factor
    by which the chunk scales a state entering it. Both f32 [B, Di, N].
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$delta,
                       Braid_FloatTensor:$A, Braid_FloatTensor:$B,
                       Braid_FloatTensor:$C, Braid_FloatTensor:$D,
                       UnitAttr:$delta_softplus);
  let results = (outs Braid_F32Tensor:$hend, Braid_F32Tensor:$decay);
  let assemblyFormat = [{
    $input `,` $delta `,` $A `,` $B `,` $C `,` $D
    (`delta_softplus` $delta_softplus^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Braid_ScanCarryOp : Braid_Op<"scan_carry", [Pure,
    AllTypesMatch<["decay_all", "hend_all"]>, Braid_KernelCall]> {
  let summary = "the state entering a chunk, from every chunk's final state and decay";
  let description = [{
    `decay_all` and `hend_all` [n B, Di, N] hold the n chunks' zero-start
    decay and final state (chunk j at rows j B..). The result is the state
    entering chunk `chunk`: H_{chunk-1}, with H_{-1} = 0 and
    H_j = decay_j H_{j-1} + hend_j.
  }];
  let arguments = (ins Braid_F32Tensor:$decay_all, Braid_F32Tensor:$hend_all,
                       Index:$chunk);
  let results = (outs Braid_F32Tensor:$result);
  let assemblyFormat = [{
    $decay_all `,` $hend_all `chunk` $chunk attr-dict `:` type($decay_all)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Braid_ScanChunkOp : Braid_Op<"scan_chunk", [Pure, Braid_KernelCall]> {
  let summary = "a chunk's selective scan from the state entering it";
  let description = [{
    `braid.selective_scan` over the chunk with the state h0 (f32 [B, Di, N])
    before its first row.
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$delta,
                       Braid_FloatTensor:$A, Braid_FloatTensor:$B,
                       Braid_FloatTensor:$C, Braid_FloatTensor:$D,
                       Braid_F32Tensor:$h0, UnitAttr:$delta_softplus);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $delta `,` $A `,` $B `,` $C `,` $D `from` $h0
    (`delta_softplus` $delta_softplus^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Braid_ScanChunkGradOp : Braid_Op<"scan_chunk_grad",
    [Pure, Braid_KernelCall]> {
  let summary = "cotangents of scan_chunk, the entering state's included";
  let description = [{
    For `braid.scan_chunk` with the same operands and the cotangent `grad`
    of its result: the cotangents of input, delta (raw), A, B, C, D, and
    `dh0` (f32) of the entering state.
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$delta,
                       Braid_FloatTensor:$A, Braid_FloatTensor:$B,
                       Braid_FloatTensor:$C, Braid_FloatTensor:$D,
                       Braid_F32Tensor:$h0, Braid_FloatTensor:$grad,
                       UnitAttr:$delta_softplus);
  let results = (outs Braid_FloatTensor:$dinput, Braid_FloatTensor:$ddelta,
                      Braid_FloatTensor:$dA, Braid_FloatTensor:$dB,
                      Braid_FloatTensor:$dC, Braid_FloatTensor:$dD,
                      Braid_F32Tensor:$dh0);
  let assemblyFormat = [{
    $input `,` $delta `,` $A `,` $B `,` $C `,` $D `from` $h0 `,` $grad
    (`delta_softplus` $delta_softplus^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Braid_ScanCarryGradOp : Braid_Op<"scan_carry_grad", [Pure,
    AllTypesMatch<["decay_all", "hend_all", "dh0_all"]>,
    AllTypesMatch<["ddecay", "dhend"]>, Braid_KernelCall]> {
  let summary = "cotangents of a chunk's final state and decay through every carry";
  let description = [{
    From `dh0_all` [n B, Di, N], the cotangent of every chunk's entering
    state, this chunk's: `dhend` = dH_chunk and `ddecay` = H_{chunk-1}
    dH_chunk, with dH_{n-1} = 0 and dH_j = dh0_{j+1} + decay_{j+1}
    dH_{j+1} (`braid.scan_carry`'s recurrence, transposed).
  }];
  let arguments = (ins Braid_F32Tensor:$decay_all, Braid_F32Tensor:$hend_all,
                       Braid_F32Tensor:$dh0_all, Index:$chunk);
  let results = (outs Braid_F32Tensor:$ddecay, Braid_F32Tensor:$dhend);
  let assemblyFormat = [{
    $decay_all `,` $hend_all `,` $dh0_all `chunk` $chunk attr-dict `:`
    type($decay_all) `->` type($ddecay)
  }];
  let hasVerifier = 1;
}

def Braid_ScanChunkStateGradOp : Braid_Op<"scan_chunk_state_grad",
    [Pure, Braid_KernelCall]> {
  let summary = "scan_chunk_state's cotangents, added to accumulators";
  let description = [{
    The cotangents of input, delta (raw), A, B, C and D through
    `braid.scan_chunk_state` from those of its final state (`dhend`) and
    decay (`ddecay`), added to the `*_in` accumulators (the chunk's other
    terms, from `braid.scan_chunk_grad`); the results are the sums.
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$delta,
                       Braid_FloatTensor:$A, Braid_FloatTensor:$B,
                       Braid_FloatTensor:$C, Braid_FloatTensor:$D,
                       Braid_F32Tensor:$dhend, Braid_F32Tensor:$ddecay,
                       Braid_FloatTensor:$dinput_in, Braid_FloatTensor:$ddelta_in,
                       Braid_FloatTensor:$dA_in, Braid_FloatTensor:$dB_in,
                       Braid_FloatTensor:$dC_in, Braid_FloatTensor:$dD_in,
                       UnitAttr:$delta_softplus);
  let results = (outs Braid_FloatTensor:$dinput, Braid_FloatTensor:$ddelta,
                      Braid_FloatTensor:$dA, Braid_FloatTensor:$dB,
                      Braid_FloatTensor:$dC, Braid_FloatTensor:$dD);
  let assemblyFormat = [{
    $input `,` $delta `,` $A `,` $B `,` $C `,` $D `,` $dhend `,` $ddecay
    `into` $dinput_in `,` $ddelta_in `,` $dA_in `,` $dB_in `,` $dC_in `,`
    $dD_in (`delta_softplus` $delta_softplus^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAID_IR_BRAIDSEQUENCECHUNKOPS_TD
