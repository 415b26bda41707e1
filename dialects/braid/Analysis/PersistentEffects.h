//===- PersistentEffects.h - what ops do to persistent tensors --*- C++ -*-===//
//
// Parameters and optimizer states live outside the values of a function: ops
// name them by symbol (braid.param / get_param_range / set_param / the
// optimizer updates) and a call names, through its callee, whatever the
// callee names. The memory plan (is a range a view of its parameter?), the
// deferral of ZeRO's gathers (where is a parameter first read?) and the
// overlap scheduler (what may cross a set of a parameter?) all need the same
// closure over the call graph; this is it, memoized per function.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECTS_BRAID_ANALYSIS_PERSISTENTEFFECTS_H
#define BRAID_DIALECTS_BRAID_ANALYSIS_PERSISTENTEFFECTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::braid {

class PersistentEffects {
public:
  /// What a function does to persistent tensors, its callees' included.
  struct Summary {
    /// Every persistent tensor named: read, ranged, set or updated.
    llvm::StringSet<> named;
    /// The parameters written: set (`set_param`) or updated in place.
    llvm::StringSet<> written;
    /// The parameters set by `set_param` (the end of ZeRO's gathers).
    llvm::StringSet<> set;
    /// Whether it updates persistent storage in place (an optimizer update,
    /// a counter's increment): nothing touching persistent storage may cross
    /// such an op.
    bool updates = false;
  };

  /// `symbols` resolves callees; the caller keeps it current as it adds
  /// functions (a function made after a query of its caller is not seen).
  explicit PersistentEffects(SymbolTable &symbols) : symbols(symbols) {}

  /// The summary of `func`, memoized. A recursive call contributes nothing
  /// (the passes that use this reject recursion on their own).
  const Summary &of(func::FuncOp func);

  /// The symbols `op` names itself as persistent tensors (not a callee, not
  /// its grid).
  static void namedByOp(Operation *op, llvm::StringSet<> &out);
  /// The parameter `op` writes itself (set or update), or none.
  static StringRef writtenByOp(Operation *op);

  /// Queries of one op, itself or through its callee.
  bool names(Operation *op, StringRef name);
  bool writes(Operation *op, StringRef name);
  bool updates(Operation *op);
  llvm::StringSet<> namedBy(Operation *op);
  llvm::StringSet<> setBy(Operation *op);

private:
  /// The summary of `op`'s callee when `op` is a call of a function with a
  /// body in the module, else null.
  const Summary *ofCallee(Operation *op);

  SymbolTable &symbols;
  llvm::DenseMap<Operation *, Summary> memo;
};

} // namespace mlir::braid

#endif // BRAID_DIALECTS_BRAID_ANALYSIS_PERSISTENTEFFECTS_H
