//===- BraidCacheContextOps.td - a KV cache split by sequence -*- tablegen -*-===//
//
// The local pieces --convert-braid-to-dist expands a KV cache split by
// sequence over context-parallel ranks into (CacheContext.cpp of
// BraidToDist): each rank holds a contiguous chunk of every sequence's cache
// rows, [first_row, first_row + C/n) of a context of C rows, writes the new
// rows that fall in it, and attends over it; the ranks' partial results are
// all-gathered and merged by the log-sum-exp rule, the same on every rank.
// Included by BraidOps.td; their rules are in CacheContextOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDCACHECONTEXTOPS_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDCACHECONTEXTOPS_TD

def Braid_CacheWriteChunkOp : Braid_Op<"cache_write_chunk",
    [MemoryEffects<[MemWrite]>, AllTypesMatch<["cache", "result"]>,
     Braid_KernelCall]> {
  let summary = "writes the new rows that fall in this rank's chunk of a KV cache";
  let description = [{
    braid.cache_write on a chunk of the cache: `cache` [B, Cl, H, D] holds
    the rows [first_row, first_row + Cl) of each sequence's `context_len` rows.
    For s < S and p = positions[b] + s, a p outside [0, context_len) is a fatal
    runtime error naming the sequence; a p in the chunk writes
    `result[b, p - first_row, h, :] = rotate(rows[b, s, h, :], p)`; the other
    rows belong to other ranks and are skipped. In place, as cache_write.

    ```mlir
    %kc1 = braid.cache_write_chunk %kc, %k, %pos at %first of 64
        {rope_theta = 1.000000e+04 : f64}
        : tensor<2x32x2x16xf32>, tensor<2x16x2x16xf32>, tensor<2xi32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$cache, Braid_FloatTensor:$rows,
                       Braid_IndexTensor:$positions, Index:$first_row,
                       I64Attr:$context_len, OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $cache `,` $rows `,` $positions `at` $first_row `of` $context_len attr-dict
    `:` type($cache) `,` type($rows) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Braid_CacheAttentionChunkOp : Braid_Op<"cache_attention_chunk",
    [Pure, Braid_Cost, Braid_KernelCall]> {
  let summary = "attention of new query rows over this rank's chunk of a KV cache";
  let description = [{
    braid.cache_attention over the cache rows [first_row, first_row + Cl)
    of a context of `context_len` rows (`key_cache` [B, Cl, Hkv, D]): local row
    t is at position first_row + t and is visible to query s of sequence b
    iff first_row + t <= p = positions[b] + s (a p outside [0, context_len) is a
    fatal runtime error). `out` [B, S, Hq, Dv] is the softmax-weighted sum
    of the visible values and `lse` [B, S, Hq] the log-sum-exp of their
    scores (a row that sees none: 0 and -inf), both f32, as
    braid.attention_block gives them; braid.cache_attention_merge merges
    the chunks'.

    ```mlir
    %o, %l = braid.cache_attention_chunk %q, %kc, %vc, %pos at %first of 64
        {rope_theta = 1.000000e+04 : f64}
        : tensor<2x1x4x16xf32>, tensor<2x32x2x16xf32>, tensor<2x32x2x16xf32>,
          tensor<2xi32> -> tensor<2x1x4x16xf32>, tensor<2x1x4xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$query, Braid_FloatTensor:$key_cache,
                       Braid_FloatTensor:$value_cache,
                       Braid_IndexTensor:$positions, Index:$first_row,
                       I64Attr:$context_len, OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Braid_F32Tensor:$out, Braid_F32Tensor:$lse);
  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `,` $positions `at` $first_row
    `of` $context_len attr-dict `:` type($query) `,` type($key_cache) `,`
    type($value_cache) `,` type($positions) `->` type($out) `,` type($lse)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// `scale`, or 1/sqrt(head dim).
    double getScaleOrDefault();
  }];
}

def Braid_CacheAttentionMergeOp : Braid_Op<"cache_attention_merge",
    [Pure, Braid_KernelCall]> {
  let summary = "merges the ranks' partial attention over a cache split by sequence";
  let description = [{
    `outs` [n B, S, H, Dv] and `lses` [n B, S, H] hold n chunks' partial
    results (chunk j at rows j B.., as an all-gather along dimension 0 lays
    them out). Per row, with m = max_j lse_j (double arithmetic):
    `result = sum_j e^(lse_j - m) out_j / sum_j e^(lse_j - m)`, the chunks
    summed in the order j = 0, 1, ..., so that every rank computes the same
    bits; chunks with lse = -inf add nothing. The result is rounded to its
    element type.

    ```mlir
    %o = braid.cache_attention_merge %outs, %lses
        : tensor<4x1x4x16xf32>, tensor<4x1x4xf32> -> tensor<2x1x4x16xf32>
    ```
  }];
  let arguments = (ins Braid_F32Tensor:$outs, Braid_F32Tensor:$lses);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $outs `,` $lses attr-dict `:` type($outs) `,` type($lses) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_BRAID_IR_BRAIDCACHECONTEXTOPS_TD
