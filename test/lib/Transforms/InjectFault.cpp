//===- InjectFault.cpp - break a partitioned program on purpose -----------===//
//
// --braid-test-inject-fault=kind=K rewrites a partitioned (lowered) module
// into a wrong plan of one known kind, so that tests can show that
// braid-run --verify fails it: a checker is trusted only once it has been
// seen failing a broken plan. braid-run's hidden --inject-fault=K runs this
// pass on the partitioned program before it is emitted (never on the 1-rank
// reference). Each kind edits the first op that it applies to, in the
// module's walk order:
//
//   drop-all-reduce    a shard.all_reduce of a tensor (rank >= 1) is removed:
//                      its users read the rank's partial value
//   wrong-axis         a shard.all_reduce over one axis of a grid of several
//                      reduces over the next axis instead (cyclically)
//   drop-state-carry   a braid.selective_scan loses its context_axes: each
//                      rank's chunk of the sequence starts from a zero state
//                      instead of the state the previous ranks carry into it
//   zero-offset        a ZeRO-1/2 update (zero_axes) of this rank's range of
//                      the gradient takes the first rank's range instead
//                      (the reduce-scatter's input all-reduced, its first
//                      block on every rank): a wrong shard offset
//   swap-microbatches  of the dist.microbatch ops reading one input (the
//                      first found), micro-batches 0 and 1 trade places:
//                      that input is paired with another micro-batch's rest
//   corrupt-replica    the result of a shard.all_reduce over one axis (a
//                      value every rank of that axis holds whole) stays
//                      right on coordinate 0 but, on the other ranks, has its
//                      block of dim 0 replaced by the first block: only a
//                      check of every rank's copy sees it
//   skip-ring-step     a ring braid.attention skips ring step 1 (the key and
//                      value block of the previous rank): the lowering to
//                      dist leaves that step's block op out, as
//                      braid_test.skip_ring_step asks, which only this pass
//                      sets (before the lowering, as every fault here)
//   wrong-cp-merge      a braid.cache_attention over a KV cache split by
//                      sequence (cache_axes) merges the cp ranks' partial
//                      results with equal weights instead of their
//                      log-sum-exps, as braid_test.wrong_cp_merge asks of the
//                      lowering to dist
//   drop-cp-prefill-carry
//                      a prefill's braid.scan_step over a prompt split by cp
//                      (context_axes) does not carry the state across cp
//                      ranks: each rank's chunk starts from the cache's
//                      carried state as if it were the first, as
//                      braid_test.drop_cp_prefill_carry asks of the lowering
//
// A module with nothing of the kind is an error (a test that injects nothing
// would pass for the wrong reason).
//
//===----------------------------------------------------------------------===//

#include "test/lib/Transforms/InjectFault.h"

#include "braid/Conversion/Passes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/Transforms/Sharding.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::braid;

namespace {

/// The first op of type OpTy in walk order for which `pred` holds.
template <typename OpTy, typename Pred>
OpTy findFirst(ModuleOp module, Pred pred) {
  OpTy found;
  module.walk([&](OpTy op) {
    if (!pred(op))
      return WalkResult::advance();
    found = op;
    return WalkResult::interrupt();
  });
  return found;
}

LogicalResult dropAllReduce(ModuleOp module) {
  auto op = findFirst<shard::AllReduceOp>(module, [](shard::AllReduceOp op) {
    return cast<RankedTensorType>(op.getType()).getRank() >= 1;
  });
  if (!op)
    return module.emitError("drop-all-reduce: no shard.all_reduce of a tensor");
  op.getResult().replaceAllUsesWith(op.getInput());
  op.erase();
  return success();
}

LogicalResult wrongAxis(ModuleOp module) {
  FailureOr<std::optional<Grid>> gridOf = Grid::of(module);
  if (failed(gridOf))
    return failure();
  std::optional<Grid> grid = *gridOf;
  if (!grid || grid->names.size() < 2)
    return module.emitError("wrong-axis: needs a grid of two axes or more");
  auto op = findFirst<shard::AllReduceOp>(module, [](shard::AllReduceOp op) {
    return op.getGridAxes().size() == 1;
  });
  if (!op)
    return module.emitError("wrong-axis: no shard.all_reduce over one axis");
  int16_t axis = (op.getGridAxes()[0] + 1) % int16_t(grid->names.size());
  op.setGridAxes(SmallVector<int16_t>{axis});
  return success();
}

LogicalResult dropStateCarry(ModuleOp module) {
  auto op = findFirst<SelectiveScanOp>(
      module, [](SelectiveScanOp op) { return bool(op.getContextAxesAttr()); });
  if (!op)
    return module.emitError(
        "drop-state-carry: no braid.selective_scan with context_axes");
  op.removeContextAxesAttr();
  return success();
}

/// The ZeRO update's gradient replaced by its first range on every rank:
/// the flat gradient's block floor(c / n) = 0 of n ranks (braid.slice with
/// replicas n), which the emitter takes as this rank's range.
/// The first ZeRO update (zero_axes) whose gradient is this rank's range,
/// reduce-scattered over the ranks.
template <typename UpdateOp>
UpdateOp firstRangeZeroUpdate(ModuleOp module) {
  return findFirst<UpdateOp>(module, [&](UpdateOp op) {
    return op.getZeroAxesAttr() &&
           op.getGrad().template getDefiningOp<shard::ReduceScatterOp>();
  });
}

/// Every rank updates its range with the first rank's range of the
/// gradient: the reduce-scatter's input is all-reduced over its axes and its
/// first block taken on every rank.
template <typename UpdateOp>
LogicalResult shiftZeroRange(UpdateOp op, const Grid &grid) {
  auto scatter = op.getGrad().template getDefiningOp<shard::ReduceScatterOp>();
  int64_t ranks = 1;
  for (Attribute name : op.getZeroAxesAttr()) {
    std::optional<int16_t> axis =
        grid.find(cast<StringAttr>(name).getValue());
    if (!axis)
      return op.emitError("zero-offset: zero_axes name no axis of the grid");
    ranks *= grid.sizes[*axis];
  }
  if (ranks < 2)
    return op.emitError("zero-offset: the update is not split over ranks");
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value whole = scatter.getInput();
  Value sum = shard::AllReduceOp::create(b, loc, whole.getType(), grid.symbol,
                                         scatter.getGridAxes(), whole);
  Value first = SliceOp::create(b, loc, op.getGrad().getType(), sum,
                                op.getZeroAxesAttr(), /*dim=*/0,
                                /*replicas=*/ranks);
  op.getGradMutable().assign(first);
  return success();
}

LogicalResult zeroOffset(ModuleOp module) {
  FailureOr<std::optional<Grid>> gridOf = Grid::of(module);
  if (failed(gridOf))
    return failure();
  std::optional<Grid> grid = *gridOf;
  if (!grid)
    return module.emitError("zero-offset: the module is not partitioned");
  if (auto op = firstRangeZeroUpdate<AdamWUpdateOp>(module))
    return shiftZeroRange(op, *grid);
  if (auto op = firstRangeZeroUpdate<SGDUpdateOp>(module))
    return shiftZeroRange(op, *grid);
  return module.emitError(
      "zero-offset: no ZeRO-1/2 update of a reduce-scattered gradient range");
}

LogicalResult swapMicrobatches(ModuleOp module) {
  auto first = findFirst<dist::MicrobatchOp>(
      module, [](dist::MicrobatchOp op) { return op.getCount() >= 2; });
  if (!first)
    return module.emitError(
        "swap-microbatches: no dist.microbatch of two micro-batches or more");
  Value input = first.getInput();
  dist::MicrobatchOp zero, one;
  for (Operation *user : input.getUsers())
    if (auto mb = dyn_cast<dist::MicrobatchOp>(user)) {
      if (mb.getIndex() == 0 && !zero)
        zero = mb;
      else if (mb.getIndex() == 1 && !one)
        one = mb;
    }
  if (!zero || !one)
    return first.emitError("swap-microbatches: micro-batches 0 and 1 of this "
                           "input are not both taken");
  zero.setIndex(1);
  one.setIndex(0);
  return success();
}

/// v - own(v) + first(v): own(v) is v's block c of dim 0 in place (zeros
/// elsewhere), first(v) its block 0 in place; on coordinate c = 0 the two
/// cancel.
LogicalResult corruptReplica(ModuleOp module) {
  FailureOr<std::optional<Grid>> gridOf = Grid::of(module);
  if (failed(gridOf))
    return failure();
  std::optional<Grid> grid = *gridOf;
  if (!grid)
    return module.emitError("corrupt-replica: the module is not partitioned");
  auto op = findFirst<shard::AllReduceOp>(module, [&](shard::AllReduceOp op) {
    auto type = cast<RankedTensorType>(op.getType());
    return op.getGridAxes().size() == 1 && type.getRank() >= 1 &&
           type.getDimSize(0) % grid->sizes[op.getGridAxes()[0]] == 0;
  });
  if (!op)
    return module.emitError("corrupt-replica: no shard.all_reduce over one "
                            "axis that divides its result's dim 0");
  auto type = cast<RankedTensorType>(op.getType());
  int16_t axis = op.getGridAxes()[0];
  int64_t ranks = grid->sizes[axis];
  SmallVector<int64_t> blockShape(type.getShape());
  blockShape[0] /= ranks;
  RankedTensorType block = type.clone(blockShape);
  ArrayAttr axes = grid->nameAttr(op.getContext(), {axis});
  OpBuilder b(op.getContext());
  b.setInsertionPointAfter(op);
  Location loc = op.getLoc();
  Value v = op.getResult();
  // The uses to break, taken before the new ops add their own.
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : v.getUses())
    uses.push_back(&use);
  auto inPlace = [&](int64_t replicas) -> Value {
    Value part = SliceOp::create(b, loc, block, v, axes, 0, replicas);
    return UnsliceOp::create(b, loc, type, part, axes, 0, replicas);
  };
  Value own = inPlace(1), first = inPlace(ranks);
  Value broken = AddOp::create(
      b, loc, type, v,
      AddOp::create(b, loc, type, NegOp::create(b, loc, type, own), first));
  for (OpOperand *use : uses)
    use->set(broken);
  return success();
}

LogicalResult skipRingStep(ModuleOp module) {
  auto op = findFirst<AttentionOp>(
      module, [](AttentionOp op) { return bool(op.getRingAxesAttr()); });
  if (!op)
    return module.emitError("skip-ring-step: no braid.attention with ring_axes");
  op->setAttr(::braid::kTestSkipRingStepAttr,
              IntegerAttr::get(IntegerType::get(op.getContext(), 64), 1));
  return success();
}

LogicalResult wrongCpMerge(ModuleOp module) {
  auto op = findFirst<CacheAttentionOp>(
      module, [](CacheAttentionOp op) { return op->hasAttr("cache_axes"); });
  if (!op)
    return module.emitError("wrong-cp-merge: no braid.cache_attention with "
                            "cache_axes");
  op->setAttr(::braid::kTestWrongCpMergeAttr, UnitAttr::get(op.getContext()));
  return success();
}

LogicalResult dropCpPrefillCarry(ModuleOp module) {
  auto op = findFirst<ScanStepOp>(
      module, [](ScanStepOp op) { return op->hasAttr("context_axes"); });
  if (!op)
    return module.emitError("drop-cp-prefill-carry: no braid.scan_step with "
                            "context_axes");
  op->setAttr(::braid::kTestDropCpPrefillCarryAttr,
              UnitAttr::get(op.getContext()));
  return success();
}

/// The faults by name, in the order the pass lists them.
struct Fault {
  StringRef kind;
  LogicalResult (*inject)(ModuleOp);
};
constexpr Fault kFaults[] = {
    {"drop-all-reduce", dropAllReduce},   {"wrong-axis", wrongAxis},
    {"drop-state-carry", dropStateCarry}, {"zero-offset", zeroOffset},
    {"swap-microbatches", swapMicrobatches},
    {"corrupt-replica", corruptReplica},  {"skip-ring-step", skipRingStep},
    {"wrong-cp-merge", wrongCpMerge},
    {"drop-cp-prefill-carry", dropCpPrefillCarry},
};

struct InjectFaultPass
    : public PassWrapper<InjectFaultPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InjectFaultPass)

  InjectFaultPass() = default;
  InjectFaultPass(const InjectFaultPass &other) : PassWrapper(other) {}
  explicit InjectFaultPass(StringRef k) { kind = k.str(); }

  StringRef getArgument() const final { return "braid-test-inject-fault"; }
  StringRef getDescription() const final {
    return "Break a partitioned program in one known way (tests of "
           "braid-run --verify)";
  }
  void getDependentDialects(DialectRegistry &registry) const final {
    registry.insert<BraidDialect>();
  }

  void runOnOperation() final {
    ModuleOp module = getOperation();
    const Fault *fault = llvm::find_if(
        kFaults, [&](const Fault &f) { return f.kind == kind; });
    if (fault == std::end(kFaults)) {
      module.emitError("unknown fault '")
          << kind << "' (" << llvm::join(::braid::test::faultKinds(), ", ")
          << ")";
      return signalPassFailure();
    }
    if (failed(fault->inject(module)))
      signalPassFailure();
  }

  Option<std::string> kind{*this, "kind",
                           llvm::cl::desc("The fault to inject")};
};

} // namespace

namespace braid::test {

SmallVector<StringRef> faultKinds() {
  return llvm::map_to_vector(kFaults, [](const Fault &f) { return f.kind; });
}

std::unique_ptr<Pass> createInjectFaultPass(StringRef kind) {
  return std::make_unique<InjectFaultPass>(kind);
}

void registerTestPasses() { PassRegistration<InjectFaultPass>(); }

} // namespace braid::test
