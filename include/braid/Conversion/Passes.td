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
                           "::mlir::braid::BraidDialect"];
}

#endif // BRAID_CONVERSION_PASSES_TD
