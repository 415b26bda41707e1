//===- EntryPass.h - a pass over a module's one entry point -----*- C++ -*-===//
//
// Private to dialects/braid/Transforms. Most braid passes work on the one
// program a module declares (EntryPoints.h): they find it, fail with a
// diagnostic naming their flag when there is not exactly one, and then work
// on it. EntryPass does the finding once for all of them.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_ENTRYPASS_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_ENTRYPASS_H

#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace mlir::braid {

/// The base of a module pass that works on the module's one entry point:
/// derive `struct XPass : EntryPass<XPass, impl::XPassBase[, Kind]>` and
/// define `LogicalResult runOnEntry(ModuleOp module, func::FuncOp entry)`.
/// With `Kind` (at most one EntryKind) only an entry of that kind counts;
/// without, any one entry point. getUniqueEntry's diagnostic names the pass
/// by its flag; a failure of either fails the pass.
template <typename Derived, template <typename> class PassBase,
          EntryKind... Kind>
class EntryPass : public PassBase<Derived> {
  static_assert(sizeof...(Kind) <= 1, "an entry pass takes at most one kind");

public:
  using PassBase<Derived>::PassBase;

  void runOnOperation() final {
    ModuleOp module = this->getOperation();
    std::optional<EntryKind> kind;
    if constexpr (sizeof...(Kind) == 1)
      kind = (Kind, ...);
    std::string flag = ("--" + this->getArgument()).str();
    FailureOr<func::FuncOp> entry = getUniqueEntry(module, kind, flag);
    if (failed(entry) ||
        failed(static_cast<Derived *>(this)->runOnEntry(module, *entry)))
      this->signalPassFailure();
  }
};

/// An EntryPass over the module's training step.
template <typename Derived, template <typename> class PassBase>
using TrainStepPass = EntryPass<Derived, PassBase, EntryKind::TrainStep>;

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_ENTRYPASS_H
