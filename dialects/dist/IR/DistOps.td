//===- DistOps.td - the dist dialect: how a per-rank program runs -*- tablegen -*-===//
//
// `dist` holds what is about execution rather than about the model: every
// transfer between ranks (collectives over grid axes, point-to-point sends
// and receives) as an asynchronous op with a `!dist.token`, the `dist.wait`
// that completes it, and the micro-batches a step is cut into. The schedule
// of a rank is the order of these ops and of the compute between them, so it
// can be printed, tested, costed and reordered like any other IR.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_DIST_IR_DISTOPS_TD
#define BRAID_DIALECT_DIST_IR_DISTOPS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::mlir::dist";
  let summary = "Execution of per-rank programs: transfers and micro-batches";
  let description = [{
    Ops that say how the per-rank program of a partitioned model runs. Every
    transfer is asynchronous: it starts where the op is, reading its operand
    then or at any time until its `dist.wait`, and its results may be read
    only after that wait. A transfer's group is the ranks that differ from
    this one only along `grid_axes` of a `shard.grid`, numbered row-major
    over those axes in the order listed; a peer is a coordinate in that
    numbering, the sender's other coordinates kept.

    Every rank of a group must issue the group's collectives in the same
    order (as NCCL requires); a schedule that moves waits later keeps it.

    A pipeline rank's step calls its chunk functions once per action of its
    schedule; each such `func.call` carries the dialect's attributes
    `dist.action` ("F" forward, "B" backward or its input-gradient half,
    "W" the weight-gradient half), `dist.chunk` (the model chunk) and
    `dist.microbatch` (the micro-batch), which the dialect verifies. The
    overlap scheduler moves a stage's gradient reductions into a copy of a
    chunk's backward made for its last micro-batch; the ops it moves there
    carry the unit attribute `dist.announce` (values of the step, which
    dumps announce although the function is not the stage's entry).
  }];
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
}

def Dist_TokenType : TypeDef<Dist_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "A transfer in flight, completed by dist.wait";
}

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the ranks' values", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Max", 1, "max">,
      I32EnumAttrCase<"Min", 2, "min">]> {
  let cppNamespace = "::mlir::dist";
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

// A transfer over the group of `grid_axes`: its operands, the data it moves,
// and the token its dist.wait takes.
class Dist_TransferOp<string mnemonic> : Dist_Op<mnemonic> {
  code transferClassDeclaration = [{
    /// The ranks of the transfer's group (the product of its axes' sizes).
    int64_t getGroupSize();
  }];
  let extraClassDeclaration = transferClassDeclaration;
  let hasVerifier = 1;
}

class Dist_CollectiveOp<string mnemonic, dag extra = (ins)>
    : Dist_TransferOp<mnemonic> {
  let arguments = !con((ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid,
                            DenseI16ArrayAttr:$grid_axes), extra);
  let results = (outs AnyRankedTensor:$result, Dist_TokenType:$token);
}

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce",
    (ins Dist_ReductionKind:$reduction)> {
  let summary = "Start an all-reduce over grid axes";
  let description = [{
    Every rank of the group gets the element-wise reduction of the group's
    `input`s. The result has the input's type.

    ```mlir
    %y, %t = dist.all_reduce %x on @grid grid_axes = [1] reduction = sum
        : tensor<2x16x64xf32> -> tensor<2x16x64xf32>
    dist.wait %t
    ```
  }];
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes `reduction` `=` $reduction
    attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather",
    (ins I64Attr:$gather_axis)> {
  let summary = "Start an all-gather over grid axes";
  let description = [{
    The result is the group's `input`s concatenated along `gather_axis` in
    group-rank order: that dimension is the group size times the input's.

    ```mlir
    %y, %t = dist.all_gather %x on @grid grid_axes = [0] gather_axis = 0
        : tensor<32x64xf32> -> tensor<64x64xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes `gather_axis` `=` $gather_axis
    attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter",
    (ins Dist_ReductionKind:$reduction, I64Attr:$scatter_axis)> {
  let summary = "Start a reduce-scatter over grid axes";
  let description = [{
    The group's `input`s are reduced element-wise and group rank r gets block
    r along `scatter_axis`, a dimension the group size divides.

    ```mlir
    %y, %t = dist.reduce_scatter %x on @grid grid_axes = [1] reduction = sum
        scatter_axis = 1 : tensor<2x16x64xf32> -> tensor<2x8x64xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes `reduction` `=` $reduction
    `scatter_axis` `=` $scatter_axis attr-dict `:` type($input) `->`
    type($result)
  }];
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all",
    (ins I64Attr:$split_axis, I64Attr:$concat_axis)> {
  let summary = "Start an all-to-all over grid axes";
  let description = [{
    `input` is cut into group-size blocks along `split_axis`; group rank r's
    block s goes to rank s, which concatenates what it receives along
    `concat_axis` in group-rank order.

    ```mlir
    %y, %t = dist.all_to_all %x on @grid grid_axes = [0] split_axis = 0
        concat_axis = 1 : tensor<4x8xf32> -> tensor<2x16xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes `split_axis` `=` $split_axis
    `concat_axis` `=` $concat_axis attr-dict `:` type($input) `->`
    type($result)
  }];
}

def Dist_BroadcastOp : Dist_CollectiveOp<"broadcast", (ins I64Attr:$root)> {
  let summary = "Start a broadcast over grid axes";
  let description = [{
    Every rank of the group gets group rank `root`'s `input`.

    ```mlir
    %y, %t = dist.broadcast %x on @grid grid_axes = [0] root = 0
        : tensor<64xf32> -> tensor<64xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes `root` `=` $root attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Dist_ShiftOp : Dist_CollectiveOp<"shift",
    (ins I64Attr:$offset, UnitAttr:$cyclic)> {
  let summary = "Start a shift along grid axes: every rank sends to one peer "
                "and receives from another";
  let description = [{
    Group rank r sends `input` to rank r + `offset` and receives its result
    from rank r - `offset`, all ranks at once (one send-receive pair each,
    which the runtime issues together so that no ring can deadlock). With
    `cyclic` the ranks are a ring (coordinates modulo the group size): ring
    attention's key and value blocks. Without it the ends are open: a rank
    with no source gets zeros and a rank with no destination sends nothing
    (a halo, as a convolution over a sequence split into chunks takes from
    its neighbour). The result has the input's type.

    ```mlir
    %k1, %t = dist.shift %k0 on @grid grid_axes = [2] offset = 1 cyclic
        : tensor<2x8x4x16xf32> -> tensor<2x8x4x16xf32>
    dist.wait %t
    ```
  }];
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes `offset` `=` $offset
    (`cyclic` $cyclic^)? attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_CoordinateOp : Dist_Op<"coordinate", [Pure]> {
  let summary = "This rank's coordinate in the group of grid axes";
  let description = [{
    The rank's index in the group of `grid_axes` (listed in grid order), row
    major over the axes: its rank in their communicator. Local pieces of a
    partitioned op take it where their work depends on which block the rank
    holds (the global positions of its chunk of a sequence).

    ```mlir
    %c = dist.coordinate on @grid grid_axes = [2] : index
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes);
  let results = (outs Index:$result);
  let assemblyFormat = [{
    `on` $grid `grid_axes` `=` $grid_axes attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The ranks of the group (the product of its axes' sizes).
    int64_t getGroupSize();
  }];
}

def Dist_SendOp : Dist_TransferOp<"send"> {
  let summary = "Start sending a tensor to a peer along grid axes";
  let description = [{
    Sends `value` to the rank at coordinate `peer` of the group. Between two
    ranks, transfers match in the order they were issued, as NCCL, which has
    no tags, matches them: a rank's receives from a peer must be that peer's
    sends to it, in order, and `tag` labels each pair, the receive's equal to
    the send's (over MPI the runtime also matches by tag). For the stages of
    a pipeline, `--dist-check-collective-order` checks both.

    ```mlir
    %t = dist.send %h to 1 on @grid grid_axes = [0] tag = 3 : tensor<1x16x64xf32>
    dist.wait %t
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, FlatSymbolRefAttr:$grid,
                       DenseI16ArrayAttr:$grid_axes, I64Attr:$peer,
                       OptionalAttr<I64Attr>:$tag);
  let results = (outs Dist_TokenType:$token);
  let assemblyFormat = [{
    $value `to` $peer `on` $grid `grid_axes` `=` $grid_axes (`tag` `=` $tag^)?
    attr-dict `:` type($value)
  }];
}

def Dist_RecvOp : Dist_TransferOp<"recv"> {
  let summary = "Start receiving a tensor from a peer along grid axes";
  let description = [{
    Receives the next tensor that the rank at coordinate `peer` of the group
    sends this rank (see `dist.send`); its tag and type must be the sent
    one's.

    ```mlir
    %h, %t = dist.recv from 0 on @grid grid_axes = [0] tag = 3 : tensor<1x16x64xf32>
    dist.wait %t
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes,
                       I64Attr:$peer, OptionalAttr<I64Attr>:$tag);
  let results = (outs AnyRankedTensor:$result, Dist_TokenType:$token);
  let assemblyFormat = [{
    `from` $peer `on` $grid `grid_axes` `=` $grid_axes (`tag` `=` $tag^)?
    attr-dict `:` type($result)
  }];
}

def Dist_WaitOp : Dist_Op<"wait"> {
  let summary = "Complete transfers";
  let description = [{
    Completes the transfers whose tokens it takes: after it their results
    may be read, and their operands' buffers reused. Each token is waited
    for exactly once, in the block of its transfer.

    ```mlir
    dist.wait %t0, %t1
    ```
  }];
  let arguments = (ins Variadic<Dist_TokenType>:$tokens);
  let assemblyFormat = "$tokens attr-dict";
  let hasVerifier = 1;
}

def Dist_MicrobatchOp : Dist_Op<"microbatch", [Pure]> {
  let summary = "One micro-batch of a batch";
  let description = [{
    Micro-batch `index` of `count`: the rows [index * n, (index + 1) * n) of
    the leading (batch) dimension of `input`, n = dim 0 / count, which
    `count` must divide.

    ```mlir
    %mb = dist.microbatch %tokens[1 of 4] : tensor<8x16xi32> -> tensor<2x16xi32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$index, I64Attr:$count);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `[` $index `of` $count `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_AssembleOp : Dist_Op<"assemble", [Pure]> {
  let summary = "Blocks a ring brought, each into its place";
  let description = [{
    The rank with coordinate c over `grid_axes` (n ranks) places piece k at
    block (c + k) mod n along dimension `axis` of the result: after k shifts
    by offset -1 a rank holds its neighbour k places up's block, and a
    collective matmul computes one piece of the product from each block it
    holds. The n pieces have one type; the result is n of them along `axis`.

    ```mlir
    %y = dist.assemble %p0, %p1 along 1 on @grid grid_axes = [1]
        : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x16x16xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$pieces, I64Attr:$axis,
                       FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $pieces `along` $axis `on` $grid `grid_axes` `=` $grid_axes attr-dict
    `:` type($pieces) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_BlockOp : Dist_Op<"block", [Pure]> {
  let summary = "The block a ring step works on";
  let description = [{
    The rank with coordinate c over `grid_axes` (n ranks) takes block
    (c + `offset`) mod n of the n equal blocks of `input` along dimension
    `axis`: the rows whose partial product a collective matmul's step adds
    into the sum it passes on (dist.assemble's inverse).

    ```mlir
    %b = dist.block %h along 1 offset 1 on @grid grid_axes = [1]
        : tensor<2x16x16xf32> -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis, I64Attr:$offset,
                       FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `along` $axis `offset` $offset `on` $grid `grid_axes` `=` $grid_axes
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_PackOp : Dist_Op<"pack", [Pure]> {
  let summary = "Tensors copied into one flat bucket a single transfer moves";
  let description = [{
    A bucket of transfers of one group (gradient buckets, as PyTorch DDP's)
    moves as one transfer of a flat tensor: the latency is paid once, not
    per tensor. Each input, flattened, is cut into `parts` equal blocks;
    the result holds block 0 of every input in order, then block 1 of every
    input, and so on. With `parts` the group size, a reduce-scatter of the
    bucket gives each rank its block of every input, one after the other;
    with 1 it is a concatenation.

    ```mlir
    %b = dist.pack %g0, %g1 parts 2 : tensor<4x2xf32>, tensor<6xf32> -> tensor<14xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$parts);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $inputs `parts` $parts attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_UnpackOp : Dist_Op<"unpack", [Pure]> {
  let summary = "One tensor taken out of a flat bucket";
  let description = [{
    `input` (flat) is cut into `parts` equal parts; the result's flattened
    elements are as many equal blocks, block r being the elements of part r
    from `offset` on: dist.pack's inverse for the input packed at that
    offset. After a reduce-scatter of a bucket, each rank's part is one,
    holding its blocks of the inputs one after the other.

    ```mlir
    %g1 = dist.unpack %b offset 8 parts 1 : tensor<14xf32> -> tensor<6xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$offset, I64Attr:$parts);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `offset` $offset `parts` $parts attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

#endif // BRAID_DIALECT_DIST_IR_DISTOPS_TD
