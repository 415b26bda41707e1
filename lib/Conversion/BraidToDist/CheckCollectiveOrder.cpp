//===- CheckCollectiveOrder.cpp - one order of a group's collectives ------===//
//
// --dist-check-collective-order (Passes.td): the stages of a pipelined
// module must issue the collectives of every group they share in the same
// order, or the ranks of that group deadlock.
//
//===----------------------------------------------------------------------===//

#include "braid/Conversion/Passes.h"

#include "BraidToDist.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace braid {
#define GEN_PASS_DEF_DISTCHECKCOLLECTIVEORDERPASS
#include "braid/Conversion/Passes.h.inc"
} // namespace braid

using namespace mlir;

namespace {

/// One collective as its group's ranks must agree on it: kind and elements.
struct Collective {
  Operation *op;
  std::string what; ///< "all_reduce of 64 elements"
};

/// The collectives of `func`, its callees' inlined at their calls, in
/// program order, by group (the grid axes in grid order).
void flatten(ModuleOp module, func::FuncOp func,
             std::map<SmallVector<int16_t>, SmallVector<Collective>> &out,
             unsigned depth = 0) {
  if (depth > 64)
    return; // call chains are acyclic (the memory plan checks it)
  for (Operation &op : func.getBody().getOps()) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
        flatten(module, callee, out, depth + 1);
      continue;
    }
    std::optional<std::pair<ArrayRef<int16_t>, StringRef>> group =
        TypeSwitch<Operation *,
                   std::optional<std::pair<ArrayRef<int16_t>, StringRef>>>(&op)
            .Case<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
                  dist::AllToAllOp, dist::BroadcastOp>([](auto c) {
              return std::make_pair(c.getGridAxes(),
                                    c->getName().stripDialect());
            })
            .Default([](Operation *) { return std::nullopt; });
    if (!group)
      continue;
    int64_t elements =
        cast<RankedTensorType>(op.getOperand(0).getType()).getNumElements();
    out[SmallVector<int16_t>(group->first)].push_back(
        {&op, (group->second + " of " + Twine(elements) + " elements").str()});
  }
}

struct DistCheckCollectiveOrderPass
    : ::braid::impl::DistCheckCollectiveOrderPassBase<
          DistCheckCollectiveOrderPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto entries = module->getAttrOfType<ArrayAttr>("braid.pipeline_entries");
    FailureOr<std::optional<mlir::braid::Grid>> gridOf =
        mlir::braid::Grid::of(module);
    if (failed(gridOf))
      return signalPassFailure();
    std::optional<mlir::braid::Grid> grid = *gridOf;
    if (!entries || !grid)
      return; // one program for every rank: one order
    std::optional<int16_t> pp = grid->find("pp");
    if (!pp)
      return;
    SmallVector<std::pair<func::FuncOp, std::map<SmallVector<int16_t>, SmallVector<Collective>>>>
        stages;
    for (Attribute entry : entries) {
      auto func = module.lookupSymbol<func::FuncOp>(
          cast<FlatSymbolRefAttr>(entry).getValue());
      if (!func) {
        module.emitError("braid.pipeline_entries names no function: ") << entry;
        return signalPassFailure();
      }
      stages.push_back({func, {}});
      flatten(module, func, stages.back().second);
    }
    // Every group over pp spans the stages; compare each stage's sequence
    // with the first stage's.
    auto &[first, reference] = stages.front();
    for (auto &[func, groups] : llvm::drop_begin(stages)) {
      SmallVector<SmallVector<int16_t>> keys;
      for (auto &entry : reference)
        keys.push_back(entry.first);
      for (auto &entry : groups)
        if (!reference.count(entry.first))
          keys.push_back(entry.first);
      for (const SmallVector<int16_t> &axes : keys) {
        if (!llvm::is_contained(axes, *pp))
          continue;
        ArrayRef<Collective> want = reference[axes], got = groups[axes];
        for (size_t i = 0, e = std::max(want.size(), got.size()); i < e; ++i) {
          if (i < want.size() && i < got.size() && want[i].what == got[i].what)
            continue;
          std::string group = grid->describe(axes);
          if (i >= got.size()) {
            InFlightDiagnostic diag = module.emitError("pipeline stage @")
                                      << func.getSymName() << " issues "
                                      << got.size() << " collectives over "
                                      << group << ", @" << first.getSymName()
                                      << " " << want.size()
                                      << ": the ranks of the group would wait "
                                         "forever";
            diag.attachNote(want[i].op->getLoc())
                << "@" << first.getSymName() << " issues its " << want[i].what
                << " here";
            return signalPassFailure();
          }
          InFlightDiagnostic diag =
              got[i].op->emitError("collective #")
              << i << " over " << group << " of pipeline stage @"
              << func.getSymName() << " is an " << got[i].what << ", where @"
              << first.getSymName() << " issues "
              << (i < want.size() ? "an " + want[i].what : std::string("none"))
              << ": the ranks of the group would wait forever";
          if (i < want.size())
            diag.attachNote(want[i].op->getLoc())
                << "@" << first.getSymName() << "'s collective #" << i;
          return signalPassFailure();
        }
      }
    }
  }
};

} // namespace
