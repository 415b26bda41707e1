//===- DistOps.td - the dist dialect: how a per-rank program runs -*- tablegen -*-===//
//
// `dist` holds what is about execution rather than about the model: the
// point-to-point transfers between pipeline stages and the micro-batches a
// step is cut into. The schedule of a pipeline rank is the order of these ops
// and of the calls to its stage functions in the rank's step function, so it
// can be printed, tested and reordered like any other IR.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_DIST_IR_DISTOPS_TD
#define BRAID_DIALECT_DIST_IR_DISTOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::mlir::dist";
  let summary = "Execution of per-rank programs: transfers and micro-batches";
  let description = [{
    Ops that say how the per-rank program of a partitioned model runs:
    point-to-point sends and receives between the ranks of a grid axis (the
    pipeline's activations forward and gradients backward) and the slicing of
    a step's batch into micro-batches. Peers are named by their coordinate
    along the listed axes of a `shard.grid`, the other coordinates being the
    sender's own.
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

def Dist_SendOp : Dist_Op<"send"> {
  let summary = "Send a tensor to a peer along grid axes";
  let description = [{
    Sends `value` to the rank whose coordinate along `grid_axes` of `grid` is
    `peer` (row-major over the axes, the sender's other coordinates kept).
    The data is captured when the op runs: the send completes without waiting
    for the peer's `dist.recv`, so two neighbours may send to each other at
    the same time. Between two ranks, transfers arrive in the order they were
    sent.

    ```mlir
    dist.send %h to 1 on @grid grid_axes = [0] : tensor<1x16x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, FlatSymbolRefAttr:$grid,
                       DenseI16ArrayAttr:$grid_axes, I64Attr:$peer);
  let assemblyFormat = [{
    $value `to` $peer `on` $grid `grid_axes` `=` $grid_axes attr-dict
    `:` type($value)
  }];
  let hasVerifier = 1;
}

def Dist_RecvOp : Dist_Op<"recv"> {
  let summary = "Receive a tensor from a peer along grid axes";
  let description = [{
    Receives the next tensor the rank at coordinate `peer` along `grid_axes`
    sent to this rank with `dist.send`; its type must be the sent one.

    ```mlir
    %h = dist.recv from 0 on @grid grid_axes = [0] : tensor<1x16x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes,
                       I64Attr:$peer);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `from` $peer `on` $grid `grid_axes` `=` $grid_axes attr-dict
    `:` type($result)
  }];
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

#endif // BRAID_DIALECT_DIST_IR_DISTOPS_TD
