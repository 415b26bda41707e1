//===- BraidBlockAttentionOps.td - attention by key blocks --*- tablegen -*-===//
//
// The local pieces that --convert-braid-to-dist expands context-parallel
// attention into (ring attention, and attention over a sequence stored in
// zigzag order): every query and key row carries its global position, its
// RoPE angle and, with `causal`, its mask (key t is visible to query s iff
// pos_k[t] <= pos_q[s]); attention is computed one block of keys at a time,
// each block's result merged into the running one by the log-sum-exp rule.
// The results are f32 accumulators, whatever the operands' element type.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDBLOCKATTENTIONOPS_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDBLOCKATTENTIONOPS_TD

def Braid_F32Tensor : StaticShapeTensorOf<[F32]>;
def Braid_PositionTensor : StaticShapeTensorOf<[I64]>;

def Braid_SequencePositionsOp : Braid_Op<"sequence_positions",
    [Pure, Braid_KernelCall]> {
  let summary = "the global positions of a range of stored sequence rows";
  let description = [{
    `result[i]` is the position of stored row `start + i` of a sequence of
    `length` rows: `start + i` in natural order; with `zigzag = n` the
    sequence is stored as 2n chunks of c = length / 2n rows in the order 0,
    2n-1, 1, 2n-2, ..., so stored row j 2c + w is at j c + w for w < c, else
    (2n-1-j) c + (w - c). The rows must lie in the sequence (the runtime
    checks it: `start` is a value).

    ```mlir
    %pos = braid.sequence_positions %start of 64 {zigzag = 2 : i64} : tensor<16xi64>
    ```
  }];
  let arguments = (ins Index:$start, I64Attr:$length,
                       DefaultValuedAttr<I64Attr, "0">:$zigzag);
  let results = (outs Braid_PositionTensor:$result);
  let assemblyFormat = "$start `of` $length attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Braid_AttentionBlockOp : Braid_Op<"attention_block",
    [Pure, Braid_Cost, Braid_KernelCall]> {
  let summary = "attention of the queries over one block of keys and values";
  let description = [{
    `braid.attention`'s arithmetic (GQA, `scale`, RoPE by `rope_theta`) with
    the rows at the positions given: query s at `query_positions[s]`, key t
    at `key_positions[t]`, for the rotation and, with `causal`, the mask.
    `out` [B, S, Hq, Dv] is the block's softmax-weighted sum of values and
    `lse` [B, S, Hq] the log-sum-exp of each row's visible scores (a row
    that sees no key of the block: 0 and -inf), both f32.

    ```mlir
    %o, %l = braid.attention_block %q, %k, %v, %qp, %kp causal scale 0.25
        : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>,
          tensor<8xi64>, tensor<8xi64> -> tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$query, Braid_FloatTensor:$key,
                       Braid_FloatTensor:$value,
                       Braid_PositionTensor:$query_positions,
                       Braid_PositionTensor:$key_positions, UnitAttr:$causal,
                       F64Attr:$scale, OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Braid_F32Tensor:$out, Braid_F32Tensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $query_positions `,` $key_positions
    (`causal` $causal^)? `scale` $scale attr-dict `:` type($query) `,`
    type($key) `,` type($value) `,` type($query_positions) `,`
    type($key_positions) `->` type($out) `,` type($lse)
  }];
  let hasVerifier = 1;
}

def Braid_AttentionMergeOp : Braid_Op<"attention_merge", [Pure,
    AllTypesMatch<["out", "block_out", "merged_out"]>,
    AllTypesMatch<["lse", "block_lse", "merged_lse"]>, Braid_KernelCall]> {
  let summary = "merges a key block's attention into the running result";
  let description = [{
    The log-sum-exp rule: `merged_lse = log(e^lse + e^block_lse)` and
    `merged_out = e^(lse - merged_lse) out + e^(block_lse - merged_lse)
    block_out` per row, weights in double; a block with lse = -inf adds
    nothing.

    ```mlir
    %o2, %l2 = braid.attention_merge %o, %l, %bo, %bl
        : tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
    ```
  }];
  let arguments = (ins Braid_F32Tensor:$out, Braid_F32Tensor:$lse,
                       Braid_F32Tensor:$block_out, Braid_F32Tensor:$block_lse);
  let results = (outs Braid_F32Tensor:$merged_out, Braid_F32Tensor:$merged_lse);
  let assemblyFormat = [{
    $out `,` $lse `,` $block_out `,` $block_lse attr-dict `:` type($out) `,`
    type($lse)
  }];
  let hasVerifier = 1;
}

def Braid_AttentionDeltaOp : Braid_Op<"attention_delta",
    [Pure, Braid_KernelCall]> {
  let summary = "the backward's row term: dout . out";
  let description = [{
    `delta[b, s, h] = sum_e grad[b, s, h, e] * out[b, s, h, e]` (a double
    sum), for `out` the forward's merged result and `grad` its cotangent.

    ```mlir
    %d = braid.attention_delta %dout, %o : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32> -> tensor<2x8x4xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$grad, Braid_F32Tensor:$out);
  let results = (outs Braid_F32Tensor:$delta);
  let assemblyFormat = [{
    $grad `,` $out attr-dict `:` type($grad) `,` type($out) `->` type($delta)
  }];
  let hasVerifier = 1;
}

def Braid_AttentionBlockGradOp : Braid_Op<"attention_block_grad",
    [Pure, Braid_Cost, Braid_KernelCall]> {
  let summary = "one key block's share of attention's backward, accumulated";
  let description = [{
    Given the final `lse` and `delta` of each query row, the block of keys
    and values adds its terms to the f32 accumulators: with
    `p = exp(scale q'.k'_t - lse)` and `ds = p (grad . v_t - delta)`,
    `dquery += scale ds k'_t` (rotated back), `dkey[t] += scale ds q'`
    (rotated back) and `dvalue[t] += p grad`, where q' and k' are rotated
    by the rows' positions (`braid.attention_block`). Rows with lse = -inf
    add nothing. The results are the accumulators after the addition.
  }];
  let arguments = (ins Braid_FloatTensor:$query, Braid_FloatTensor:$key,
                       Braid_FloatTensor:$value, Braid_FloatTensor:$grad,
                       Braid_PositionTensor:$query_positions,
                       Braid_PositionTensor:$key_positions,
                       Braid_F32Tensor:$lse, Braid_F32Tensor:$delta,
                       Braid_F32Tensor:$dquery_in, Braid_F32Tensor:$dkey_in,
                       Braid_F32Tensor:$dvalue_in, UnitAttr:$causal,
                       F64Attr:$scale, OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Braid_F32Tensor:$dquery, Braid_F32Tensor:$dkey,
                      Braid_F32Tensor:$dvalue);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $grad `,` $query_positions `,`
    $key_positions `,` $lse `,` $delta `into` $dquery_in `,` $dkey_in `,`
    $dvalue_in (`causal` $causal^)? `scale` $scale attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAID_IR_BRAIDBLOCKATTENTIONOPS_TD
