//===- Passes.td - Braid's conversion passes ----------------*- tablegen -*-===//

#ifndef BRAID_CONVERSION_PASSES_TD
#define BRAID_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertBraidToDistPass : Pass<"convert-braid-to-dist", "::mlir::ModuleOp"> {
  let summary = "Make every transfer of a partitioned program a dist op";
  let description = [{
    Lowers what the partitioner left of communication to `dist`, the
    per-rank execution dialect: each transfer becomes an asynchronous dist
    op whose `!dist.token` a `dist.wait` completes (here at once, where the
    transfer was; the overlap scheduler moves waits later), with its group
    in grid order and each rank's block contiguous, as the runtime's
    collectives move them. Protocols are expanded in IR, one file per
    family:
    - Collectives.cpp: the upstream `shard` collectives (all_reduce,
      all_gather, reduce_scatter, all_to_all). Where the partitioner's
      blocks are not contiguous per rank in communicator order (a split
      dimension that is not the outermost, or group axes listed out of grid
      order) the re-layout is explicit: `braid.reshape` and
      `braid.transpose` around a transfer of whole blocks.
    - ContextAttention.cpp: ring attention (`ring_axes`), attention of this
      rank's chunk of the queries (`query_offset_axes`) and over a sequence
      in zigzag order (`sequence_zigzag`): the block ops
      (`braid.sequence_positions`, `braid.attention_block`,
      `braid.attention_merge`, `braid.attention_delta`,
      `braid.attention_block_grad`), the rank's `dist.coordinate`, and for
      the ring one `dist.shift` per block and step, started before the
      block's compute and waited for after it.
    - SequenceChunks.cpp: Mamba over a sequence split into chunks
      (`context_axes`): the convolution's halo as a `dist.shift` of the
      chunk's last rows (and its cotangent shifted back), the scan's carry
      as all-gathers of every chunk's final state and decay composed by
      `braid.scan_carry` (and their cotangents by `braid.scan_carry_grad`).
    - VocabParallel.cpp: the embedding and cross-entropy over this rank's
      rows of the vocabulary (`vocab_axes`): lookups at the rank's offset,
      the softmax statistics all-reduced between their pieces.
    - ZeroUpdate.cpp: optimizer updates sharded over `zero_axes` (ZeRO-1
      and 2): the update of this rank's range of the flat parameter, then
      `braid.get_param_range`, a `dist.all_gather` and `braid.set_param`.

    After it, no op carries a partitioning attribute whose protocol the
    emitter would have to decide.

    ```mlir
    %y = shard.all_reduce %x on @grid grid_axes = [1] : tensor<2x64xf32> -> tensor<2x64xf32>
    ```
    becomes
    ```mlir
    %y, %t = dist.all_reduce %x on @grid grid_axes = [1] reduction = sum
        : tensor<2x64xf32> -> tensor<2x64xf32>
    dist.wait %t
    ```
  }];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::braid::BraidDialect"];
}

def RaiseLinalgToBraidPass : Pass<"raise-linalg-to-braid", "::mlir::ModuleOp"> {
  let summary = "Raise front ends' linalg and tensor IR to braid ops";
  let description = [{
    Accepts what front ends that lower to upstream MLIR produce (linalg on
    tensors, tensor reshapes, `shard.shard` annotations) and raises it to
    the braid ops that Braid partitions, differentiates and emits:
    - contractions (`linalg.matmul`, `linalg.batch_matmul`, a
      `linalg.generic` of one contracted and one free dimension per
      operand) accumulating into zero: `braid.linear` for `[rows..., k]`
      times `[k, n]` or `[n, k]` (`transpose_weight`), `braid.batch_matmul`
      with its transposes otherwise;
    - parallel ops (`linalg.generic`, `linalg.add`, `linalg.mul`,
      `linalg.exp`, `linalg.elementwise`...) whose body is arithmetic on the
      inputs' elements: `braid.add` (and `arith.subf` as an add of a
      negation), `braid.mul`, `braid.neg`, `braid.exp`, ReLU from a max
      with zero, `braid.sigmoid` from `1 / (1 + exp(-x))`, `braid.silu` from
      `x * sigmoid(x)` or `x / (1 + exp(-x))`, `braid.gelu` from
      `0.5 x (1 + erf(x / sqrt 2))`, SwiGLU's `silu(g) * u` as
      `braid.glu silu`, and an input broadcast over the leading dimensions
      added as `braid.bias_add`;
    - `linalg.softmax` as `braid.softmax` (over the last dimension, with
      transposes around it for another);
    - `linalg.transpose` as `braid.transpose`; `tensor.expand_shape`,
      `tensor.collapse_shape` and `tensor.reshape` as `braid.reshape`.
    Annotations stay on the raised values; the products' zero inits go.
    Any other linalg or tensor op, elementwise arithmetic on whole tensors,
    dynamic shapes and non-float element types are errors at the op that say
    why (a general reduction, for one: braid has no reduction op outside
    its products, norms, softmax and loss). A module of braid ops
    alone is left as it is; the training pipeline runs this pass first.

    ```mlir
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<16x64xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x64xf32>) -> tensor<16x64xf32>
    %y = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x64xf32>)
                       outs(%init : tensor<16x64xf32>) -> tensor<16x64xf32>
    ```
    becomes
    ```mlir
    %y = braid.linear %x, %w : tensor<16x32xf32>, tensor<32x64xf32> -> tensor<16x64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

#endif // BRAID_CONVERSION_PASSES_TD
