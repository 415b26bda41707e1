//===- ElementwiseFusion.cpp - chains computed by one kernel --------------===//

#include "dialects/braid/Analysis/ElementwiseFusion.h"

#include "dialects/braid/IR/BraidOps.h"

using namespace mlir;
using namespace mlir::braid;

bool mlir::braid::isFusibleElementwise(Operation *op) {
  return isa<ScalarExpressionOpInterface>(op);
}

ElementwiseFusion::ElementwiseFusion(func::FuncOp func) {
  // Groups do not span calls: a group runs at its root, so an op fused past
  // a call would keep its operands alive through the callee (a pipeline's
  // gradient accumulation would hold every micro-batch's gradients).
  llvm::DenseMap<Operation *, unsigned> segment;
  unsigned calls = 0;
  for (Operation &op : func.getBody().getOps()) {
    if (isa<func::CallOp>(op))
      ++calls;
    segment[&op] = calls;
  }
  for (Operation &op : func.getBody().getOps()) {
    if (!isFusibleElementwise(&op))
      continue;
    SmallVector<Operation *> group;
    // An operand produced by a fusible op whose only use is `op` joins this
    // group with its whole group (it is a root: its single use was not
    // grouped before).
    for (Value operand : op.getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (!producer || !isFusibleElementwise(producer) ||
          !operand.hasOneUse() || producer->getBlock() != op.getBlock() ||
          segment.lookup(producer) != segment.lookup(&op) ||
          rootOf.lookup(producer) != producer)
        continue;
      auto it = members.find(producer);
      for (Operation *member : it->second) {
        rootOf[member] = &op;
        group.push_back(member);
      }
      members.erase(it);
    }
    rootOf[&op] = &op;
    group.push_back(&op);
    llvm::sort(group, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    members[&op] = std::move(group);
  }
}

ArrayRef<Operation *> ElementwiseFusion::getMembers(Operation *root) const {
  auto it = members.find(root);
  return it == members.end() ? ArrayRef<Operation *>() : it->second;
}

bool ElementwiseFusion::isInner(Value value) const {
  Operation *producer = value.getDefiningOp();
  Operation *root = producer ? rootOf.lookup(producer) : nullptr;
  return root && root != producer;
}

Operation *ElementwiseFusion::getExecutionPoint(Operation *op) const {
  Operation *root = rootOf.lookup(op);
  return root ? root : op;
}
