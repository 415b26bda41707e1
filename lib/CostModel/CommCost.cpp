//===- CommCost.cpp - alpha-beta times of transfers -----------------------===//

#include "braid/CostModel/CommCost.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace braid::cost;

const char *braid::cost::kindName(TransferKind kind) {
  switch (kind) {
  case TransferKind::AllReduce:
    return "all_reduce";
  case TransferKind::AllGather:
    return "all_gather";
  case TransferKind::ReduceScatter:
    return "reduce_scatter";
  case TransferKind::AllToAll:
    return "all_to_all";
  case TransferKind::Broadcast:
    return "broadcast";
  case TransferKind::PointToPoint:
    return "send";
  }
  return "?";
}

int64_t braid::cost::nodesSpanned(llvm::ArrayRef<int64_t> sizes,
                                  llvm::ArrayRef<int64_t> axes,
                                  int64_t devicesPerNode) {
  // The group of rank 0: every coordinate along `axes`, the others 0.
  std::vector<int64_t> stride(sizes.size(), 1);
  for (int64_t a = int64_t(sizes.size()) - 2; a >= 0; --a)
    stride[a] = stride[a + 1] * sizes[a + 1];
  std::vector<int64_t> members = {0};
  for (int64_t a : axes) {
    std::vector<int64_t> next;
    for (int64_t m : members)
      for (int64_t c = 0; c < sizes[a]; ++c)
        next.push_back(m + c * stride[a]);
    members = std::move(next);
  }
  std::set<int64_t> nodes;
  for (int64_t m : members)
    nodes.insert(m / std::max<int64_t>(devicesPerNode, 1));
  return int64_t(nodes.size());
}

TransferTime braid::cost::estimate(const Transfer &t, const Hardware &hw) {
  TransferTime out;
  const double n = double(t.ranks), m = double(std::max<int64_t>(t.nodes, 1));
  if (t.ranks <= 1 || t.bytes <= 0)
    return out;
  const LinkClass &intra = hw.intraNode;
  LinkClass inter = hw.interNode;
  const bool across = t.nodes > 1;
  // A node whose GPUs share fewer network ports than they are: every group
  // like this one transfers at once (a step's dp reduction, a stage's
  // sends), each through one flow per node, and the flows of a node share
  // its ports. A group with two of its ranks on a node leaves it once per
  // ring, so half the node's GPUs send across at a time.
  const double ranksPerNode = std::max(1.0, n / m);
  const double nodeShare =
      inter.nodeBytesPerSecond > 0
          ? inter.nodeBytesPerSecond / std::max(1.0, double(hw.devicesPerNode) / ranksPerNode)
          : 0;
  if (across && nodeShare > 0)
    inter.bytesPerSecond = std::min(inter.bytesPerSecond, nodeShare);
  // A ring across nodes goes through each node's NICs. NCCL runs a channel
  // (a ring of its own, over a share of the bytes) per network port of the
  // group's GPUs on a node, each channel leaving the node through its own
  // port: a group with r ranks on each node crosses nodes r ports wide, up to
  // NVLink's bandwidth and the node's share of its ports (nccl-tests' bus
  // bandwidth across DGX nodes is close to the sum of a node's ports, not to
  // one); a narrow ring, one port wide. An all-to-all's off-node blocks leave
  // through each GPU's own port.
  const double ports = t.narrowRing ? 1.0 : ranksPerNode;
  double ringAcross = std::min(intra.bytesPerSecond, hw.interNode.bytesPerSecond * ports);
  if (nodeShare > 0)
    ringAcross = std::min(ringAcross, nodeShare);
  const double bw = across ? ringAcross : intra.bytesPerSecond;
  auto ring = [&](double steps, double interSteps, double sent) {
    TransferTime r;
    r.bytesSent = sent;
    r.seconds = hw.collectiveLatency + (steps - interSteps) * intra.stepLatency +
                interSteps * inter.stepLatency + sent / bw;
    r.algorithm = "ring";
    return r;
  };
  switch (t.kind) {
  case TransferKind::AllReduce: {
    out = ring(2 * (n - 1), 2 * (m - 1), 2 * (n - 1) / n * t.bytes);
    if (across) {
      // A double binary tree: up and down the ranks of a node, then log2
      // of the nodes across; half the bus bandwidth (NCCL's model).
      TransferTime tree;
      tree.bytesSent = 2 * t.bytes;
      tree.seconds = hw.collectiveLatency +
                     2 * ((n / m - 1) * intra.stepLatency +
                          std::log2(m) * inter.stepLatency) +
                     2 * t.bytes / bw;
      tree.algorithm = "tree";
      if (tree.seconds < out.seconds)
        out = tree;
    }
    return out;
  }
  case TransferKind::AllGather:
  case TransferKind::ReduceScatter:
    return ring(n - 1, m - 1, (n - 1) / n * t.bytes);
  case TransferKind::Broadcast:
    return ring(n - 1, m - 1, t.bytes);
  case TransferKind::AllToAll: {
    // Every rank sends a block of bytes / n to each other rank, those on
    // other nodes over the network, the rest over NVLink, at once.
    double block = t.bytes / n, perNode = n / m;
    double offNode = (n - perNode) * block, onNode = (perNode - 1) * block;
    out.bytesSent = offNode + onNode;
    out.seconds = hw.collectiveLatency +
                  (n - 1) * (across ? inter.stepLatency : intra.stepLatency) +
                  std::max(onNode / intra.bytesPerSecond,
                           across ? offNode / inter.bytesPerSecond : 0.0);
    out.algorithm = "pairwise";
    return out;
  }
  case TransferKind::PointToPoint: {
    const LinkClass &link = across ? inter : intra;
    out.bytesSent = t.bytes;
    // An NCCL send or receive is an operation of its own: it pays the
    // collective's latency too, and one step.
    out.seconds = hw.collectiveLatency + link.stepLatency + t.bytes / link.bytesPerSecond;
    out.algorithm = "p2p";
    return out;
  }
  }
  return out;
}
