//===- ElementwiseFusion.h - chains computed by one kernel ------*- C++ -*-===//
//
// Elementwise ops (activations, add, mul, glu) are grouped into trees whose
// inner values have exactly one use, inside the tree: one generated kernel
// computes a tree, reading its leaves and storing only its root. The memory
// plan and the emitter both use this analysis, so inner values are never
// allocated and never written.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_ELEMENTWISEFUSION_H
#define BRAID_DIALECT_BRAID_ANALYSIS_ELEMENTWISEFUSION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::braid {

/// True for the ops a fused elementwise kernel can compute: those with a
/// scalar expression (ScalarExpressionOpInterface).
bool isFusibleElementwise(Operation *op);

class ElementwiseFusion {
public:
  explicit ElementwiseFusion(func::FuncOp func);

  /// The root of the group `op` belongs to (`op` itself for a root), or null
  /// when `op` is not a fusible elementwise op.
  Operation *getRoot(Operation *op) const { return rootOf.lookup(op); }
  /// The members of the group rooted at `root`, in program order, root last.
  ArrayRef<Operation *> getMembers(Operation *root) const;
  /// True when `value` is computed inside a group and never stored.
  bool isInner(Value value) const;
  /// Where `op` executes: the root of its group, or the op itself.
  Operation *getExecutionPoint(Operation *op) const;

private:
  llvm::DenseMap<Operation *, Operation *> rootOf;
  llvm::DenseMap<Operation *, SmallVector<Operation *>> members;
};

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_ELEMENTWISEFUSION_H
