//===- BraidVocabShardOps.td - vocabulary-parallel pieces ---*- tablegen -*-===//
//
// The local pieces that --convert-braid-to-dist expands a vocabulary-
// parallel embedding and cross-entropy into, each rank holding the rows
// [offset, offset + V) of the vocabulary (`offset` an index: the rank's
// coordinate times V). The cross-entropy's softmax statistics are per row:
// its maximum over the vocabulary, then the sum of exponentials and the
// label's logit, each reduced over the ranks between the pieces.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDVOCABSHARDOPS_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDVOCABSHARDOPS_TD

def Braid_F32Scalar : 0DTensorOf<[F32]>;

def Braid_EmbeddingShardOp : Braid_Op<"embedding_shard",
    [Pure, Braid_KernelCall]> {
  let summary = "this rank's share of an embedding lookup";
  let description = [{
    `table` [V, H] holds the vocabulary's rows [offset, offset + V):
    `result[..., s, :] = table[tokens[..., s] - offset, :]` for the tokens
    it holds, zeros for the others (the ranks' results sum to the lookup).

    ```mlir
    %e = braid.embedding_shard %tokens, %table at %off
        : tensor<2x16xi32>, tensor<32x64xf32> -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Braid_IndexTensor:$tokens, Braid_FloatTensor:$table,
                       Index:$offset);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $table `at` $offset attr-dict `:` type($tokens) `,`
    type($table) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Braid_EmbeddingGradShardOp : Braid_Op<"embedding_grad_shard",
    [Pure, Braid_KernelCall]> {
  let summary = "this rank's rows of an embedding table's cotangent";
  let description = [{
    The scatter-add of `grad`'s rows [..., s, :] into row
    `tokens[..., s] - offset` of the result [V, H], for the tokens in
    [offset, offset + V).
  }];
  let arguments = (ins Braid_IndexTensor:$tokens, Braid_FloatTensor:$grad,
                       Index:$offset);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $grad `at` $offset attr-dict `:` type($tokens) `,`
    type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Braid_CrossEntropyRowMaxOp : Braid_Op<"cross_entropy_row_max",
    [Pure, Braid_KernelCall]> {
  let summary = "each row's largest logit in this rank's vocabulary columns";
  let description = [{
    `logits` [..., V] holds the columns [offset, offset + V) of the
    vocabulary; columns at or past `valid` (padding) are left out. The
    result [...] is f32 (-inf for a row with no valid column here).
  }];
  let arguments = (ins Braid_FloatTensor:$logits, Index:$offset,
                       I64Attr:$valid);
  let results = (outs Braid_F32Tensor:$result);
  let assemblyFormat = [{
    $logits `at` $offset `valid` $valid attr-dict `:` type($logits) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Braid_CrossEntropyStatsOp : Braid_Op<"cross_entropy_stats",
    [Pure, Braid_KernelCall]> {
  let summary = "each row's sum of exponentials and label logit, this rank's share";
  let description = [{
    With `row_max` the maximum over every rank's columns: `result[..., 0] =
    sum over the valid columns here of exp(logit - row_max)` and
    `result[..., 1]` the label's logit when this rank holds the label's
    column, else 0. f32 [..., 2]; summed over the ranks they are the row's
    statistics.
  }];
  let arguments = (ins Braid_FloatTensor:$logits, Braid_IndexTensor:$labels,
                       Braid_F32Tensor:$row_max, Index:$offset,
                       I64Attr:$valid);
  let results = (outs Braid_F32Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $row_max `at` $offset `valid` $valid attr-dict
    `:` type($logits) `,` type($labels) `,` type($row_max) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Braid_CrossEntropyFromStatsOp : Braid_Op<"cross_entropy_from_stats",
    [Pure, Braid_KernelCall]> {
  let summary = "the mean cross-entropy from each row's reduced statistics";
  let description = [{
    `loss = sum over rows r of (row_max[r] + log stats[r, 0] - stats[r, 1])
    / denominator`, the labels' mean negative log-probability, f32.
  }];
  let arguments = (ins Braid_F32Tensor:$row_max, Braid_F32Tensor:$stats,
                       I64Attr:$denominator);
  let results = (outs Braid_F32Scalar:$result);
  let assemblyFormat = [{
    $row_max `,` $stats `denominator` $denominator attr-dict `:`
    type($row_max) `,` type($stats) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Braid_CrossEntropyGradShardOp : Braid_Op<"cross_entropy_grad_shard",
    [Pure, Braid_KernelCall]> {
  let summary = "the cotangent of this rank's logits from the reduced statistics";
  let description = [{
    `result[..., c] = grad / denominator * (exp(logit - row_max) /
    stats[..., 0] - [offset + c == label])` for the valid columns, 0 in
    padding columns; `grad` is the loss's cotangent (f32 scalar).
  }];
  let arguments = (ins Braid_FloatTensor:$logits, Braid_IndexTensor:$labels,
                       Braid_F32Tensor:$row_max, Braid_F32Tensor:$stats,
                       Braid_F32Scalar:$grad, Index:$offset,
                       I64Attr:$valid, I64Attr:$denominator);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $row_max `,` $stats `,` $grad `at` $offset
    `valid` $valid `denominator` $denominator attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAID_IR_BRAIDVOCABSHARDOPS_TD
