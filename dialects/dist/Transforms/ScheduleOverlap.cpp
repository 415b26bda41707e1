//===- ScheduleOverlap.cpp - transfers started early, waited for late ----===//
//
// --braid-schedule-overlap (Passes.td): in each function of a per-rank dist
// program, every transfer starts as soon as what it sends is ready and is
// waited for just before its result is first read, so that the ops between
// run while it is in flight: a layer's gradient all-reduce starts when the
// layer's backward returns, not after the whole backward.
//
// Each function is scheduled after its callees (OverlapScheduler.cpp: starts
// right after their dependencies, reductions in buckets, then the list
// scheduler's order over the timing model).
// A pipeline stage's gradient reductions wait for its chunks' last backward
// calls, each a whole chunk: they first move into a copy of the chunk's
// backward made for its last call (OverlapRewrites.cpp:
// specializeLastBackward), where the schedule starts them layer by layer;
// ZeRO-3's gathers first leave their layers' functions
// (hoistArgumentGathers).
// The memory plan keeps a transfer's operands live until its wait, so the
// later wait costs memory: the scheduled programs' peak of live bytes may
// exceed the unscheduled one's by the fraction `memory-growth` at most
// (default 5%), or every function keeps its order; buckets stay when the
// program still fits, or when they add at most their largest bucket.
//
//===----------------------------------------------------------------------===//

#include "dialects/dist/Transforms/Passes.h"

#include "ScheduleOverlap.h"

#include "braid/Support/Debug.h"
#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/Analysis/StepTiming.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Format.h"

#include <functional>

#define DEBUG_TYPE "braid-schedule-overlap"

namespace mlir::dist {
#define GEN_PASS_DEF_BRAIDSCHEDULEOVERLAPPASS
#include "dialects/dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::braid;

namespace {

/// Replaces the ops of `module` by those of `from` (emptied).
void replaceBody(ModuleOp module, ModuleOp from) {
  Block *body = module.getBody();
  for (Operation &op : *body)
    op.dropAllReferences();
  while (!body->empty())
    body->back().erase();
  body->getOperations().splice(body->end(), from.getBody()->getOperations());
}

/// The most bytes live at once in any program of `module`
/// (peakArenaBytes), or nullopt when it cannot be planned: the emitter
/// reports what the memory plan cannot plan.
std::optional<int64_t> arenaBytes(ModuleOp module) {
  ScopedDiagnosticHandler quiet(module.getContext(), [](Diagnostic &) { return success(); });
  FailureOr<int64_t> peak = peakArenaBytes(module);
  return succeeded(peak) ? std::optional<int64_t>(*peak) : std::nullopt;
}

struct BraidScheduleOverlapPass
    : mlir::dist::impl::BraidScheduleOverlapPassBase<BraidScheduleOverlapPass> {
  using BraidScheduleOverlapPassBase::BraidScheduleOverlapPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(makeTiming(module)))
      return signalPassFailure();
    // Memory-neutral (each gather writes its parameter in place from a view
    // of it): the budget's baseline is the deferred program's.
    if (deferParamGather)
      dist::deferParamGathers(module);
    std::optional<int64_t> before = arenaBytes(module);
    baseline = before;
    LLVM_DEBUG({
      if (before)
        llvm::dbgs() << "unscheduled peak: " << *before
                     << " bytes live; a schedule may add memory-growth="
                     << llvm::format("%g", static_cast<double>(memoryGrowth))
                     << " of it\n";
      else
        llvm::dbgs() << "the memory plan cannot plan the unscheduled "
                        "program: any schedule fits\n";
    });
    constexpr double kMiB = 1024.0 * 1024.0;
    dist::BucketSizes buckets{static_cast<int64_t>(bucketMb * kMiB),
                              static_cast<int64_t>(firstBucketMb * kMiB)};
    // Each try schedules a copy of the module, kept if its peak of live
    // bytes fits the budget: ZeRO-3's gathers moved out of their layers'
    // functions (held through the call, a layer's gathered parameters cost
    // memory), then left in them; prefetches a call ahead, then after the
    // previous call; compute moved after the starts it does not feed, then
    // left in place (later, it lives longer). A try takes its buckets if it fits with them, or if
    // the same schedule fits without them and they add no more than their
    // largest one to its peak (the flat copy a bucket holds while its
    // tensors or their unpacked sums are live too).
    bool hoistable = true;
    for (bool hoisted : {true, false})
      for (unsigned ahead : {1u, 0u})
        for (bool move : {true, false})
          if ((!move || moveCompute) && (!hoisted || hoistable) &&
              attempt(module, before, buckets, hoisted, ahead, move, hoistable))
            return;
    // Nothing fits: every function keeps its order.
    LLVM_DEBUG(llvm::dbgs() << "no schedule fits the memory budget: every "
                               "function keeps its order\n");
  }

  /// The timing model of `hardware` (or `link`) over the module's grid;
  /// none for a module without one.
  LogicalResult makeTiming(ModuleOp module) {
    llvm::Expected<::braid::cost::Hardware> hw = ::braid::cost::Hardware::named(hardware);
    if (!hw)
      return emitError(module.getLoc(), "--braid-schedule-overlap: ") << llvm::toString(hw.takeError());
    hardwareModel = *hw;
    std::string error;
    if (!link.empty() && !::braid::link::parse(link, &links, &error))
      return emitError(module.getLoc(), "--braid-schedule-overlap: link=: ") << error;
    auto calibrated = StepTiming::calibrationFor(calibration, hardware);
    if (!calibrated)
      return emitError(module.getLoc(), "--braid-schedule-overlap: ")
             << llvm::toString(calibrated.takeError());
    rates = std::move(*calibrated);
    FailureOr<std::optional<Grid>> gridOf = Grid::of(module);
    if (failed(gridOf))
      return failure();
    grid = *gridOf;
    if (grid)
      timing = std::make_shared<StepTiming>(*grid, hardwareModel, links,
                                            rates ? &*rates : nullptr);
    return success();
  }

  std::optional<Grid> grid;
  /// The unscheduled program's peak of live bytes (the budget's base).
  std::optional<int64_t> baseline;
  ::braid::cost::Hardware hardwareModel;
  ::braid::link::Links links;
  std::optional<::braid::cost::ComputeCalibration> rates;
  std::shared_ptr<StepTiming> timing; // shared by the pass's clones

  /// A scheduled copy of a module and what the budget needs of it.
  struct Try {
    OwningOpRef<ModuleOp> module;
    std::optional<int64_t> peak; ///< its peak of live bytes (nullopt: unplanned)
    int64_t prefetch = 0;        ///< one call's gathered bytes, when gathers moved
    int64_t largestBucket = 0;   ///< the bytes of its largest bucket (0: none)
  };

  /// Schedules `module` one way, with buckets and without, and keeps the
  /// result if it fits the budget over `before`; false leaves `module` as it
  /// was (and clears `hoistable` when there was no gather to move).
  bool attempt(ModuleOp module, std::optional<int64_t> before,
               dist::BucketSizes buckets, bool hoisted, unsigned ahead,
               bool moveCompute, bool &hoistable) {
    LLVM_DEBUG(llvm::dbgs()
               << "try: ZeRO-3 gathers " << (hoisted ? "out of" : "in")
               << " their layers, prefetch " << ahead
               << " call(s) ahead, compute "
               << (moveCompute ? "moved after the starts it does not feed"
                               : "in program order")
               << "\n");
    Try bucketed;
    if (buckets.bytes > 0) {
      bucketed = scheduled(module, hoisted, ahead, buckets, moveCompute);
      if (!bucketed.module) {
        LLVM_DEBUG(llvm::dbgs() << "  no gather to move: the same as the "
                                   "next try\n");
        hoistable = false; // no gather to move: the same as unmoved
        return false;
      }
      LLVM_DEBUG(logFit("with buckets", bucketed, before,
                        ahead ? bucketed.prefetch : 0));
      if (bucketed.largestBucket &&
          within(bucketed.peak, before, ahead ? bucketed.prefetch : 0)) {
        LLVM_DEBUG(llvm::dbgs() << "  kept with buckets\n");
        replaceBody(module, *bucketed.module);
        return true;
      }
    }
    Try plain = scheduled(module, hoisted, ahead, {}, moveCompute);
    if (!plain.module) {
      LLVM_DEBUG(llvm::dbgs() << "  no gather to move: the same as the "
                                 "next try\n");
      hoistable = false;
      return false;
    }
    LLVM_DEBUG(logFit("without buckets", plain, before,
                      ahead ? plain.prefetch : 0));
    if (!within(plain.peak, before, ahead ? plain.prefetch : 0))
      return false;
    bool keep = bucketed.largestBucket &&
                (!plain.peak || within(bucketed.peak, plain.peak, bucketed.largestBucket, 0.0));
    LLVM_DEBUG(if (bucketed.largestBucket) llvm::dbgs()
               << "  kept " << (keep ? "with" : "without")
               << " buckets: they add "
               << (keep ? "at most" : "more than")
               << " their largest bucket to the peak\n");
    replaceBody(module, keep ? *bucketed.module : *plain.module);
    return true;
  }

  /// Debug output: a try's peak against the budget over `before`.
  void logFit(StringRef what, const Try &t, std::optional<int64_t> before,
              int64_t allowance) {
    llvm::dbgs() << "  " << what << ": peak ";
    if (t.peak)
      llvm::dbgs() << *t.peak << " bytes";
    else
      llvm::dbgs() << "unplanned";
    if (t.largestBucket)
      llvm::dbgs() << " (largest bucket " << t.largestBucket << " bytes)";
    if (before)
      llvm::dbgs() << ", budget "
                   << static_cast<int64_t>(static_cast<double>(*before) *
                                               (1.0 + memoryGrowth) +
                                           static_cast<double>(allowance))
                   << " bytes";
    llvm::dbgs() << ": "
                 << (within(t.peak, before, allowance) ? "fits" : "too much")
                 << "\n";
  }

  /// `module` scheduled on a copy, or no module for a try that would repeat
  /// another (`hoisted` with no gather to move). `hoisted`: ZeRO-3's gathers
  /// first leave their functions; with `buckets`, reductions are bucketed.
  Try scheduled(ModuleOp module, bool hoisted, unsigned ahead,
                dist::BucketSizes buckets, bool moveCompute) {
    Try t;
    if (hoisted && !dist::mayHoistArgumentGathers(module))
      return Try(); // nothing to move: not worth a copy of the module
    t.module = module.clone();
    if (hoisted && !(t.prefetch = dist::hoistArgumentGathers(*t.module)))
      return Try();
    // The clone's grid is the module's (read by makeTiming).
    if ((*t.module)->hasAttr(kPipelineEntriesAttrName) && grid)
      dist::specializeLastBackward(*t.module, grid->find("pp"));
    int64_t slack = -1;
    if (baseline)
      slack = static_cast<int64_t>(static_cast<double>(*baseline) * memoryGrowth) +
              (ahead ? t.prefetch : 0);
    t.largestBucket = dist::scheduleFunctions(*t.module, ahead, buckets, moveCompute,
                                              timing.get(), slack);
    t.peak = arenaBytes(*t.module);
    return t;
  }

  /// Whether a peak of live bytes (`after`) stays within the budget over
  /// `before` (the unscheduled peak): the fraction `growth` more
  /// (memory-growth unless given) and `allowance` bytes. An unplanned
  /// program before fits anything; one after, nothing.
  bool within(std::optional<int64_t> after, std::optional<int64_t> before, int64_t allowance,
              std::optional<double> growth = std::nullopt) {
    if (!before)
      return true;
    double budget = static_cast<double>(*before) * (1.0 + growth.value_or(memoryGrowth)) +
                    static_cast<double>(allowance);
    return after && static_cast<double>(*after) <= budget;
  }
};

} // namespace
