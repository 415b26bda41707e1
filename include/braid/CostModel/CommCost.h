//===- CommCost.h - alpha-beta times of transfers ---------------*- C++ -*-===//
//
// The time of one transfer on a Hardware description, in the manner of
// NCCL's own tuning model (src/graph/tuning.cc) for the Simple protocol:
// a latency of the collective plus one per step, each step on the link class
// it crosses, plus the bytes a rank sends over the bandwidth of the slowest
// link the transfer uses. Rings for all-gather, reduce-scatter and
// broadcast; ring or tree for an all-reduce across nodes, whichever is
// faster (as NCCL chooses); pairwise exchange for all-to-all; one message for
// point to point (an NCCL operation too: the collective's latency and a
// step).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_COSTMODEL_COMMCOST_H
#define BRAID_LIB_COSTMODEL_COMMCOST_H

#include "braid/CostModel/Hardware.h"

#include "llvm/ADT/ArrayRef.h"

namespace braid::cost {

enum class TransferKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  PointToPoint,
};

/// One transfer over a group of `ranks` GPUs spread over `nodes` nodes.
struct Transfer {
  TransferKind kind = TransferKind::AllReduce;
  int64_t ranks = 1;
  int64_t nodes = 1;
  /// The buffer the transfer is about: an all-reduce's or broadcast's
  /// buffer, the whole gathered (all-gather) or reduced (reduce-scatter)
  /// tensor, an all-to-all's input on one rank, a message.
  double bytes = 0;
  /// A ring across nodes leaves each node one network port wide, whatever
  /// the group's ranks there: how the frameworks of 2021-22 behave in the
  /// published step times (planner Runtime::narrowRings); otherwise as wide
  /// as the group's GPUs on a node (NCCL's channel per port).
  bool narrowRing = false;
};

struct TransferTime {
  double seconds = 0;
  double bytesSent = 0;  ///< by each rank
  const char *algorithm = "none";
};

TransferTime estimate(const Transfer &transfer, const Hardware &hw);

/// How many nodes the group over grid axes `axes` (indices into `sizes`,
/// ranks laid out row-major over the grid, the last axis fastest) spans
/// with `devicesPerNode` consecutive ranks per node.
int64_t nodesSpanned(llvm::ArrayRef<int64_t> sizes, llvm::ArrayRef<int64_t> axes,
                     int64_t devicesPerNode);

const char *kindName(TransferKind kind);

} // namespace braid::cost

#endif // BRAID_LIB_COSTMODEL_COMMCOST_H
