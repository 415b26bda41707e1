//===- PlanIndexes.h - the memory plan's indexes of a block -----*- C++ -*-===//
//
// What the memory plan asks of a block many times, answered by index rather
// than by scanning the ops between two positions: which ops touch a
// persistent tensor (TouchIndex) and where execution order first passes a
// position (ExecutionOrder). Under ZeRO-1/2 every parameter's gather is
// deferred into the next step, so these stretches grow with the model and a
// scan per parameter made the plan quadratic in layers.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_PLANINDEXES_H
#define BRAID_DIALECT_BRAID_ANALYSIS_PLANINDEXES_H

#include "dialects/braid/Analysis/PersistentEffects.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>

namespace mlir::braid {

/// Where ops of one block touch persistent tensors, by the tensor's name:
/// the positions (in block order) of the ops that name it (itself or
/// through a callee: PersistentEffects) and of those that write it, each
/// list ascending. A scan of the ops between two positions for one that
/// names or writes a tensor becomes a binary search: a ZeRO step sets and
/// views every parameter, each over a stretch of the step that grows with
/// the model.
class TouchIndex {
public:
  TouchIndex(Block &block, SymbolTable &symbols, PersistentEffects &effects) {
    for (Operation &op : block) {
      unsigned at = order.size();
      order[&op] = at;
      const PersistentEffects::Summary *callee = nullptr;
      if (auto call = dyn_cast<func::CallOp>(op))
        if (auto f = symbols.lookup<func::FuncOp>(call.getCallee()); f && !f.isExternal())
          callee = &effects.of(f);
      llvm::StringSet<> own;
      PersistentEffects::namedByOp(&op, own);
      for (const auto &name : own)
        addOnce(named[name.getKey()], at);
      if (StringRef w = PersistentEffects::writtenByOp(&op); !w.empty())
        addOnce(written[w], at);
      if (callee) {
        for (const auto &name : callee->named)
          addOnce(named[name.getKey()], at);
        for (const auto &name : callee->written)
          addOnce(written[name.getKey()], at);
      }
    }
  }

  /// The position of `op` in the block.
  unsigned positionOf(Operation *op) const { return order.lookup(op); }
  /// Whether an op at a position in (`from`, `to`) names `name`.
  bool namedBetween(StringRef name, unsigned from, unsigned to) const {
    return anyBetween(named, name, from, to);
  }
  /// Whether an op at a position in (`from`, `to`) writes `name`.
  bool writtenBetween(StringRef name, unsigned from, unsigned to) const {
    return anyBetween(written, name, from, to);
  }
  /// The positions in (`from`, `to`) of `list`, ascending.
  static ArrayRef<unsigned> between(ArrayRef<unsigned> list, unsigned from, unsigned to) {
    auto first = std::upper_bound(list.begin(), list.end(), from);
    auto last = std::lower_bound(first, list.end(), to);
    return ArrayRef<unsigned>(first, last);
  }

private:
  llvm::DenseMap<Operation *, unsigned> order;
  llvm::StringMap<SmallVector<unsigned, 4>> named, written;

  static void addOnce(SmallVector<unsigned, 4> &list, unsigned at) {
    if (list.empty() || list.back() != at)
      list.push_back(at);
  }
  static bool anyBetween(const llvm::StringMap<SmallVector<unsigned, 4>> &lists, StringRef name,
                         unsigned from, unsigned to) {
    auto it = lists.find(name);
    return it != lists.end() && !between(it->second, from, to).empty();
  }
};

/// The positions ops execute at, in block order, and the first op after a
/// given one executing after a given position: a sparse table of maxima
/// over the positions, built when first asked.
class ExecutionOrder {
public:
  explicit ExecutionOrder(SmallVector<unsigned> positions) : positions(std::move(positions)) {}

  /// The least j > `i` whose position exceeds `last` (the block's size if
  /// none).
  unsigned firstAbove(unsigned i, unsigned last) {
    unsigned n = positions.size();
    if (levels.empty())
      build();
    unsigned j = i + 1;
    // Jump over spans whose maximum stays within `last`, the longest first.
    for (unsigned k = levels.size(); k-- > 0;)
      if (j + (1u << k) <= n && levels[k][j] <= last)
        j += 1u << k;
    return std::min(j, n);
  }

private:
  SmallVector<unsigned> positions;
  /// levels[k][j]: the greatest position among [j, j + 2^k).
  SmallVector<SmallVector<unsigned>> levels;

  void build() {
    levels.push_back(positions);
    for (unsigned k = 1; (1u << k) <= positions.size(); ++k) {
      const SmallVector<unsigned> &prev = levels[k - 1];
      SmallVector<unsigned> next(positions.size() - (1u << k) + 1);
      for (unsigned j = 0; j < next.size(); ++j)
        next[j] = std::max(prev[j], prev[j + (1u << (k - 1))]);
      levels.push_back(std::move(next));
    }
  }
};

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_PLANINDEXES_H
