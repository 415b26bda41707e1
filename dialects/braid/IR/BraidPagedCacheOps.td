//===- BraidPagedCacheOps.td - a KV cache of pages --------*- tablegen -*-===//
//
// Serving (issue 43) keeps every attention layer's KV cache as a POOL of
// pages shared by all sequences, [N, P, Hkv, D]: sequence b's position t
// lives in page pages[b, t / P] at row t % P. The page table `pages` [B, T]
// (T = ceil(C / P)) is an input of each call, so the runtime's scheduler
// allocates, shares and frees pages without recompiling. Both ops take the
// idle-row convention of the serving programs: `last_rows[b]` is the last
// real new row of sequence b in this call, -1 when b is idle; rows after it
// are padding, never written, their outputs zeros. Included by BraidOps.td;
// the rules are in PagedCacheOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDPAGEDCACHEOPS_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDPAGEDCACHEOPS_TD

def Braid_PagedCacheWriteOp : Braid_Op<"paged_cache_write",
    [MemoryEffects<[MemWrite]>, AllTypesMatch<["pool", "result"]>,
     Braid_ShardingRule, Braid_Cost, Braid_KernelCall]> {
  let summary = "writes new rows into a paged KV cache, in place";
  let description = [{
    `pool` [N, P, H, D] holds N pages of P rows; `rows` [B, S, H, D] are the
    new rows of B sequences, `positions` [B] (i32) their first positions,
    `pages` [B, T] (i32) each sequence's page table and `last_rows` [B] (i32)
    each sequence's last real row in `rows`. `result = pool` except that, for
    every s <= last_rows[b] and p = positions[b] + s,

    `result[pages[b, p / P], p % P, h, :] = rotate(rows[b, s, h, :], p)`,

    `rotate` being braid.cache_write's (RoPE at p with `rope_theta`, a copy
    without). `last_rows[b] == -1`: sequence b is idle, nothing of it is
    written; rows s > last_rows[b] are padding and never written. Fatal
    runtime errors naming the sequence: last_rows[b] < -1 or >= S, a written
    position outside [0, T P), a page outside [0, N) at a written position.
    The runtime owns the pages: two sequences writing one page at one row is
    its error, not the op's.

    With P = C, N = B, pages[b] = [b] and last_rows = S - 1 this is
    braid.cache_write.

    The result is the pool itself, updated in place (the memory plan gives
    it the pool's storage), so the pool operand must have no other use.

    ```mlir
    %kp1 = braid.paged_cache_write %kp, %k, %pos, %pages, %last {rope_theta = 1.000000e+04 : f64}
        : tensor<8x16x2x16xf32>, tensor<2x1x2x16xf32>, tensor<2xi32>,
          tensor<2x4xi32>, tensor<2xi32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$pool, Braid_FloatTensor:$rows,
                       Braid_I32Tensor:$positions, Braid_I32Tensor:$pages,
                       Braid_I32Tensor:$last_rows,
                       OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $pool `,` $rows `,` $positions `,` $pages `,` $last_rows attr-dict `:`
    type($pool) `,` type($rows) `,` type($positions) `,` type($pages) `,`
    type($last_rows)
  }];
  let hasVerifier = 1;
}

def Braid_PagedCacheAttentionOp : Braid_InferredOp<"paged_cache_attention",
    [Braid_ShardingRule, Braid_Cost, Braid_KernelCall]> {
  let summary = "attention of new query rows over a paged KV cache";
  let description = [{
    `query` [B, S, Hq, D], `key_pool` [N, P, Hkv, D], `value_pool`
    [N, P, Hkv, Dv], `positions`, `last_rows` [B] and `pages` [B, T] (i32)
    as braid.paged_cache_write, Hq a multiple of Hkv (g = Hq / Hkv).

    For s <= last_rows[b], query s of sequence b is at p = positions[b] + s,
    rotated to p (with `rope_theta`) and attends to the positions t <= p,
    whose key row is `key_pool[pages[b, t / P], t % P, h / g, :]` (stored
    rotated by braid.paged_cache_write):
    `score[t] = scale * sum_d q'[b, s, h, d] * key_pool[..., h/g, d]`,
    `scale` defaulting to 1/sqrt(D), and
    `result[b, s, h, :] = sum_{t <= p} softmax(score)[t] * value_pool[pages[b, t / P], t % P, h/g, :]`,
    the softmax in f32. Rows s > last_rows[b] (padding) and every row of an
    idle sequence (last_rows[b] == -1) are zeros. Fatal runtime errors naming
    the sequence: last_rows[b] < -1 or >= S, a query position outside
    [0, T P), a page read (t / P for t <= p) outside [0, N).

    With P = C, N = B, pages[b] = [b] and last_rows = S - 1 this is
    braid.cache_attention.

    ```mlir
    %o = braid.paged_cache_attention %q, %kp, %vp, %pos, %pages, %last {rope_theta = 1.000000e+04 : f64}
        : tensor<2x1x4x16xf32>, tensor<8x16x2x16xf32>, tensor<8x16x2x16xf32>,
          tensor<2xi32>, tensor<2x4xi32>, tensor<2xi32> -> tensor<2x1x4x16xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$query, Braid_FloatTensor:$key_pool,
                       Braid_FloatTensor:$value_pool,
                       Braid_I32Tensor:$positions, Braid_I32Tensor:$pages,
                       Braid_I32Tensor:$last_rows,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key_pool `,` $value_pool `,` $positions `,` $pages `,`
    $last_rows attr-dict `:` type($query) `,` type($key_pool) `,`
    type($value_pool) `,` type($positions) `,` type($pages) `,`
    type($last_rows) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// `scale`, or 1/sqrt(head dim).
    double getScaleOrDefault();
  }];
}

#endif // BRAID_DIALECT_BRAID_IR_BRAIDPAGEDCACHEOPS_TD
