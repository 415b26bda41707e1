//===- LiveBytes.cpp - a block's live bytes as its ops are placed ---------===//
//
// See LiveBytes.h.
//
//===----------------------------------------------------------------------===//

#include "LiveBytes.h"

#include "dialects/braid/Analysis/ElementwiseFusion.h"
#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

#include <memory>

using namespace mlir;
using namespace mlir::braid;

namespace mlir::dist {

LiveBytes::LiveBytes(Block &block, std::function<int64_t(Operation *)> callBytes)
    : callBytes(std::move(callBytes)) {
  SmallVector<Operation *> ops;
  for (Operation &op : block) {
    index[&op] = ops.size();
    ops.push_back(&op);
  }
  alloc.assign(ops.size(), 0);
  releases.resize(ops.size());
  std::unique_ptr<ElementwiseFusion> fusion;
  if (auto func = dyn_cast_or_null<func::FuncOp>(block.getParentOp());
      func && &func.getBody().front() == &block)
    fusion = std::make_unique<ElementwiseFusion>(func);

  // The value whose storage `v` shares: through reshapes, and an all-reduce
  // of a value it alone reads (reduced in place).
  auto root = [&](Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (def->getBlock() != &block)
        break;
      if (auto reshape = dyn_cast<ReshapeOp>(def)) {
        v = reshape.getInput();
        continue;
      }
      if (auto reduce = dyn_cast<dist::AllReduceOp>(def)) {
        Value in = reduce.getInput();
        if (in.getDefiningOp() && in.hasOneUse() && in.getType() == reduce.getResult().getType()) {
          v = in;
          continue;
        }
      }
      break;
    }
    return v;
  };
  // Each stored value of the block, by the values that share it.
  llvm::DenseMap<Value, unsigned> stored;
  SmallVector<SmallVector<Value, 2>> members;
  SmallVector<Operation *> definer;
  for (Operation *op : ops)
    for (Value v : op->getResults()) {
      if (!isa<RankedTensorType>(v.getType()))
        continue;
      Value r = root(v);
      if (!r.getDefiningOp() || r.getDefiningOp()->getBlock() != &block)
        continue; // an argument's, or a value of another block
      auto [it, inserted] = stored.try_emplace(r, members.size());
      unsigned s = it->second;
      if (inserted) {
        members.emplace_back();
        definer.push_back(r.getDefiningOp());
      }
      stored[v] = s;
      members[s].push_back(v);
    }
  bytes.assign(members.size(), 0);
  for (auto [s, values] : llvm::enumerate(members)) {
    Operation *def = definer[s];
    bool elsewhere = isa<GetParamOp, GetParamRangeOp>(def) ||
                     (fusion && fusion->isInner(values.front()));
    for (Value v : values)
      for (Operation *user : v.getUsers())
        elsewhere |= isa<func::ReturnOp, SetParamOp>(user);
    if (!elsewhere)
      bytes[s] = (getTensorBytes(values.front().getType()) + kBufferAlignment - 1) /
                 kBufferAlignment * kBufferAlignment;
    alloc[index[def]] += bytes[s];
  }
  // The ops a stored value is live until: its readers (in-block ancestors),
  // a transfer's wait among them, and its own transfer's wait.
  SmallVector<llvm::SmallSetVector<unsigned, 4>> until(members.size());
  // Each op's wait, found once per op: an op defines one stored value per
  // result, and a call's results grow with the layers it runs.
  SmallVector<std::optional<unsigned>> waitOf(ops.size());
  for (auto [j, op] : llvm::enumerate(ops))
    if (Value token = dist::getToken(op))
      if (dist::WaitOp wait = dist::getWait(token))
        if (Operation *w = block.findAncestorOpInBlock(*wait))
          waitOf[j] = index[w];
  for (auto [s, def] : llvm::enumerate(definer))
    if (std::optional<unsigned> w = waitOf[index[def]])
      until[s].insert(*w);
  // A fused group's members read their operands where the group runs: at
  // its root.
  auto runsAt = [&](Operation *op) {
    return fusion ? index[fusion->getExecutionPoint(op)] : index[op];
  };
  for (auto [j, op] : llvm::enumerate(ops)) {
    std::optional<unsigned> w = waitOf[j];
    unsigned at = runsAt(op);
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        auto it = stored.find(operand);
        if (it == stored.end())
          continue;
        until[it->second].insert(at);
        if (w)
          until[it->second].insert(*w);
      }
    });
  }
  // A fused group writes its result over an operand of the result's type
  // that it reads last (MemoryPlan.cpp): while it runs, the two are one.
  reusable.resize(ops.size());
  if (fusion)
    for (auto [j, op] : llvm::enumerate(ops)) {
      if (fusion->getRoot(op) != op || op->getNumResults() != 1)
        continue;
      Type type = op->getResult(0).getType();
      for (Operation *member : fusion->getMembers(op))
        for (Value operand : member->getOperands()) {
          auto it = stored.find(operand);
          if (it != stored.end() && operand.getType() == type &&
              !llvm::is_contained(fusion->getMembers(op), operand.getDefiningOp()))
            reusable[j].push_back(it->second);
        }
    }
  pending.assign(members.size(), 0);
  for (auto [s, ends] : llvm::enumerate(until)) {
    if (ends.empty())
      ends.insert(index[definer[s]]); // read by nothing: freed once defined
    pending[s] = ends.size();
    for (unsigned j : ends)
      releases[j].push_back(s);
  }
}

int64_t LiveBytes::reused(unsigned i) const {
  for (unsigned s : reusable[i])
    if (pending[s] == 1 && bytes[s] > 0 && llvm::is_contained(releases[i], s))
      return std::min(bytes[s], alloc[i]);
  return 0;
}

int64_t LiveBytes::during(Operation *op) const {
  unsigned i = index.lookup(op);
  return liveBytes + alloc[i] - reused(i) + callBytes(op);
}

int64_t LiveBytes::freedBy(Operation *op) const {
  int64_t freed = 0;
  for (unsigned s : releases[index.lookup(op)])
    if (pending[s] == 1)
      freed += bytes[s];
  return freed;
}

void LiveBytes::place(Operation *op) {
  unsigned i = index.lookup(op);
  liveBytes += alloc[i];
  peakBytes = std::max(peakBytes, liveBytes - reused(i) + callBytes(op));
  for (unsigned s : releases[i])
    if (--pending[s] == 0)
      liveBytes -= bytes[s];
}

int64_t LiveBytes::programOrderPeak(Block &block,
                                    llvm::function_ref<int64_t(Operation *)> callBytes) {
  LiveBytes live(block, callBytes);
  for (Operation &op : block)
    live.place(&op);
  return live.peak();
}

} // namespace mlir::dist
