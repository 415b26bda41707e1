//===- StepTiming.cpp - seconds of a dist program's ops and transfers -----===//

#include "dialects/braid/Analysis/StepTiming.h"

#include "dialects/braid/Analysis/OpCost.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::braid;

namespace {

double tensorBytes(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return double(type.getNumElements()) *
         double(std::max<int64_t>(1, type.getElementTypeBitWidth() / 8));
}

AxisList axesOf(ArrayRef<int16_t> indices) { return AxisList(indices.begin(), indices.end()); }

} // namespace

std::optional<StepTiming::Block> StepTiming::blockOf(Operation *op) const {
  // A collective's blocks over its ring, as the link model counts them; the
  // kind is the runtime's name of the collective.
  auto ring = [&](StringRef kind, ArrayRef<int16_t> gridAxes, double bytes) {
    AxisList axes = axesOf(gridAxes);
    return Block{kind, axes, bytes, ringBlocks(kind, axes)};
  };
  return TypeSwitch<Operation *, std::optional<Block>>(op)
      .Case<shard::AllReduceOp, dist::AllReduceOp>([&](auto r) {
        return ring("all_reduce", r.getGridAxes(), tensorBytes(r.getResult()));
      })
      .Case<shard::AllGatherOp, dist::AllGatherOp>([&](auto g) {
        return ring("all_gather", g.getGridAxes(), tensorBytes(g.getInput()));
      })
      .Case<shard::ReduceScatterOp, dist::ReduceScatterOp>([&](auto r) {
        return ring("reduce_scatter", r.getGridAxes(),
                    tensorBytes(r.getResult()));
      })
      .Case<shard::AllToAllOp, dist::AllToAllOp>([&](auto a) {
        double ranks = grid.size(axesOf(a.getGridAxes()));
        return ring("all_to_all", a.getGridAxes(),
                    tensorBytes(a.getInput()) / ranks);
      })
      // A chain: every rank but the last forwards the whole buffer (the
      // runtime counts it so).
      .Case([&](dist::BroadcastOp b) {
        return ring("broadcast", b.getGridAxes(), tensorBytes(b.getInput()));
      })
      // A pipeline stage's activations and cotangents to its neighbours
      // (what a rank receives is its neighbour's send).
      .Case([&](dist::SendOp send) {
        return Block{"send", axesOf(send.getGridAxes()), tensorBytes(send.getValue()), 1.0};
      })
      // A ring's blocks, one shift of one tensor each: dist.shift after
      // --convert-braid-to-dist, the ring attention's own before it
      // (ContextAttention.cpp expands it so). With open ends (a halo) the
      // ranks at the end send nothing: the mean rank sends (n - |offset|)
      // / n of a block.
      .Case([&](dist::ShiftOp sh) {
        AxisList axes = axesOf(sh.getGridAxes());
        double n = grid.size(axes);
        double sending =
            sh.getCyclic() ? 1.0 : (n - std::abs(static_cast<double>(sh.getOffset()))) / n;
        return Block{"shift", axes, tensorBytes(sh.getInput()), sending};
      })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<std::pair<StepTiming::Key, double>> StepTiming::transfer(Operation *op) const {
  std::optional<Block> b;
  if (auto recv = dyn_cast<dist::RecvOp>(op))
    b = Block{"send", axesOf(recv.getGridAxes()), tensorBytes(recv.getResult()), 1.0};
  else if (dist::getToken(op))
    b = blockOf(op);
  if (!b)
    return std::nullopt;
  // Each rank of a shift sends at most one block.
  if (isa<dist::ShiftOp>(op))
    b->blocks = 1;
  Key key = {b->kind.str(), grid.describe(b->axes)};
  if (grid.size(b->axes) <= 1)
    return std::make_pair(key, 0.0);
  return std::make_pair(key, predict(b->kind, b->axes, b->blockBytes, b->blocks).seconds);
}

::braid::cost::TransferTime StepTiming::predict(StringRef kind, ArrayRef<int16_t> axes,
                                                double blockBytes, double blocks) const {
  using ::braid::cost::TransferKind;
  if (!links.empty()) {
    // The emulator's model: the group's slowest link; a message kind
    // (send, one shift of a ring) sends its blocks one message each.
    std::vector<std::string> names;
    for (int16_t a : axes)
      names.push_back(grid.names[a]);
    ::braid::cost::TransferTime out;
    out.algorithm = "link";
    out.bytesSent = blockBytes * blocks;
    ::braid::link::Link l;
    if (!links.group(names, &l))
      return out;
    double n = grid.size(axes);
    out.seconds = kind == "send" || kind == "shift"
                      ? blocks * ::braid::link::seconds(l, kind.str(), n, blockBytes)
                      : ::braid::link::seconds(l, kind.str(), n, blockBytes * blocks);
    return out;
  }
  ::braid::cost::Transfer t;
  t.ranks = grid.size(axes);
  SmallVector<int64_t> indices(axes.begin(), axes.end());
  t.nodes = ::braid::cost::nodesSpanned(grid.sizes, indices, hardware.devicesPerNode);
  t.kind = llvm::StringSwitch<TransferKind>(kind)
               .Case("all_reduce", TransferKind::AllReduce)
               .Case("all_gather", TransferKind::AllGather)
               .Case("reduce_scatter", TransferKind::ReduceScatter)
               .Case("all_to_all", TransferKind::AllToAll)
               .Case("broadcast", TransferKind::Broadcast)
               .Default(TransferKind::PointToPoint);
  // The buffer each kind is about (CommCost.h), from the ring model's
  // block.
  t.bytes = t.kind == TransferKind::AllReduce || t.kind == TransferKind::Broadcast
                ? blockBytes
                : blockBytes * t.ranks;
  if (t.kind != TransferKind::PointToPoint)
    return ::braid::cost::estimate(t, hardware);
  // A ring's steps: `blocks` messages of one block to the next rank.
  t.bytes = blockBytes;
  ::braid::cost::TransferTime step = ::braid::cost::estimate(t, hardware);
  step.seconds *= blocks;
  step.bytesSent *= blocks;
  return step;
}

double StepTiming::computeSeconds(Operation *op) const {
  // A collective matmul's assembly copies its pieces into place; a
  // bucket's pack and unpack copy its tensors in and out.
  if (isa<dist::AssembleOp, dist::PackOp, dist::UnpackOp>(op)) {
    double bytes = 2.0 * tensorBytes(op->getResult(0));
    return calibration ? calibration->memorySeconds(hardware, bytes) + hardware.kernelLaunch
                       : hardware.rooflineSeconds(0, bytes);
  }
  if (isa<GetParamOp, ReshapeOp, func::ReturnOp, func::CallOp>(op) ||
      isa_and_nonnull<dist::DistDialect>(op->getDialect()))
    return 0;
  // ZeRO's gather of a parameter's ranges sends from a view of the
  // parameter and gathers into it (the memory plan's): nothing is copied.
  if (isa<GetParamRangeOp>(op))
    return 0;
  if (auto set = dyn_cast<SetParamOp>(op))
    if (Operation *def = set.getValue().getDefiningOp(); def && dist::getToken(def))
      return 0;
  // A product whose kernel's rate was measured (a description of CPU ranks).
  if (!hardware.opFlopsPerSecond.empty()) {
    auto rate = hardware.opFlopsPerSecond.find(op->getName().stripDialect().str());
    if (rate != hardware.opFlopsPerSecond.end())
      if (int64_t flops = getForwardCost(op).matmulFlops)
        return double(flops) / rate->second;
  }
  double bytes = 0;
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (isa<RankedTensorType>(v.getType()))
      bytes += tensorBytes(v);
  if (calibration)
    return calibratedSeconds(op, bytes);
  OpCost cost = getForwardCost(op);
  return hardware.rooflineSeconds(double(cost.matmulFlops + cost.otherFlops), bytes);
}

double StepTiming::calibratedSeconds(Operation *op, double bytes) const {
  const ::braid::cost::ComputeCalibration &cal = *calibration;
  OpCost cost = getForwardCost(op);
  // What is not a product: its arithmetic at the peak or its bytes at the
  // memory-bound kernels' bandwidth, whichever is slower.
  auto rest = [&](double flops, double moved) {
    return std::max(flops / hardware.peakBf16Flops, cal.memorySeconds(hardware, moved));
  };
  // Products as the planner times them: m x k by k x n, by shape.
  if (auto linear = dyn_cast<LinearOp>(op)) {
    double n = double(linear.getOutFeatures()), k = double(linear.getInFeatures());
    double m = double(cast<RankedTensorType>(linear.getResult().getType()).getNumElements()) / n;
    double bias = linear.getBias() ? cal.memorySeconds(hardware, 3 * tensorBytes(linear.getResult()))
                                   : 0;
    return cal.gemmSeconds(hardware, m, n, k) + bias;
  }
  if (auto mm = dyn_cast<BatchMatmulOp>(op)) {
    auto result = cast<RankedTensorType>(mm.getResult().getType());
    ArrayRef<int64_t> shape = result.getShape();
    double m = double(shape[shape.size() - 2]), n = double(shape.back());
    double batch = double(result.getNumElements()) / (m * n);
    double k = double(cost.matmulFlops) / (2.0 * double(result.getNumElements()));
    return cal.gemmSeconds(hardware, m, n, k, batch);
  }
  // Flash attention: under a causal mask each query meets half the keys on
  // average, which the kernel computes alone; the backward recomputes the
  // scores (2.5 times the forward's products, 1.25 times the four products
  // OpCost counts).
  if (isa<AttentionOp, AttentionBlockOp, AttentionGradOp, AttentionBlockGradOp>(op)) {
    double causal = op->hasAttr("causal") ? 0.5 : 1.0;
    bool backward = isa<AttentionGradOp, AttentionBlockGradOp>(op);
    double flops = double(cost.matmulFlops) * causal * (backward ? 1.25 : 1.0);
    return cal.flashSeconds(hardware, flops, backward) +
           rest(double(cost.otherFlops) * causal, 0);
  }
  if (isa<SelectiveScanOp, SelectiveScanGradOp>(op))
    return cal.scanSeconds(hardware, double(cost.matmulFlops + cost.otherFlops), bytes);
  // Other products (an expert FFN over its buffers): at the large
  // product's efficiency.
  double products = cost.matmulFlops
                        ? double(cost.matmulFlops) / (hardware.peakBf16Flops * cal.gemmEfficiency)
                        : 0;
  return std::max(products, rest(double(cost.otherFlops), bytes)) + hardware.kernelLaunch;
}

std::string StepTiming::computeBasis() const {
  return calibration ? calibration->hardware + "'s calibration" : std::string("the roofline");
}

llvm::Expected<std::optional<::braid::cost::ComputeCalibration>>
StepTiming::calibrationFor(StringRef option, StringRef hardware) {
  using ::braid::cost::ComputeCalibration;
  if (option == "roofline")
    return std::optional<ComputeCalibration>();
  if (option == "auto") {
    if (hardware.ends_with(".json"))
      return std::optional<ComputeCalibration>();
    llvm::Expected<ComputeCalibration> builtin = ComputeCalibration::named(hardware);
    if (!builtin) {
      llvm::consumeError(builtin.takeError());
      return std::optional<ComputeCalibration>();
    }
    return std::optional<ComputeCalibration>(std::move(*builtin));
  }
  llvm::Expected<ComputeCalibration> named = ComputeCalibration::named(option);
  if (!named)
    return named.takeError();
  return std::optional<ComputeCalibration>(std::move(*named));
}
