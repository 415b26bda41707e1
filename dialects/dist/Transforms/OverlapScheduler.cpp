//===- OverlapScheduler.cpp - one module's functions, scheduled -----------===//
//
// The scheduling of --braid-schedule-overlap (ScheduleOverlap.cpp, which
// tries it several ways under the memory budget).
//
// Each function is scheduled after its callees (a call then takes its
// callee's predicted seconds), in three steps, each producing a new order
// without moving ops one by one:
// - Starts: a transfer goes right after the latest of what it depends on:
//   its operands' definitions (a transfer's result: that transfer's wait),
//   for a group whose ranks run different programs (a pipeline's groups
//   over pp) the previous transfer on it and the last call issuing one
//   there (so that every rank of the group issues them alike and none can
//   deadlock; any other group's ranks all run this program, so its order
//   may change), and the last op writing
//   persistent storage (an update, a set_param; or a call to a function
//   holding one). A transfer of parameters only (a ZeRO-3 gather, moved
//   out of its layer's function into the caller first)
//   starts one call ahead of its first use instead: a prefetch, not a gather
//   of every layer at the start.
// - Buckets: with the starts in place, consecutive reductions of one group
//   combine into buckets, one transfer each (GradientBuckets.cpp).
// - The list scheduler (ListSchedule.cpp) orders the block over the timing
//   model that --braid-print-plan simulates (StepTiming: `hardware`, or the
//   emulator's `link`s): starts as soon as they can, each wait just before
//   the first op that needs it (or the next op writing persistent storage,
//   or the terminator), and among the ops ready to run the one that does
//   not stall on a transfer in flight, then the one that lets a transfer
//   start, then the longest path to the end. Compute keeps its side of
//   calls; what only a transfer reads moves with it. `move-compute=false`
//   keeps compute in program order (only starts and waits move).
//
//===----------------------------------------------------------------------===//

#include "ScheduleOverlap.h"
#include "LiveBytes.h"

#include "braid/Support/Debug.h"
#include "dialects/braid/Analysis/ElementwiseFusion.h"
#include "dialects/braid/Analysis/PersistentEffects.h"
#include "dialects/braid/Analysis/StepTiming.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"
#include "dialects/dist/IR/DistUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"

#define DEBUG_TYPE "braid-schedule-overlap"

using namespace mlir;
using namespace mlir::braid;

namespace {

/// An op named for debug output: its name and location.
std::string describe(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName() << "' at " << op->getLoc();
  return text;
}

/// Debug output: where the list scheduler left each transfer of `block`,
/// between the op it starts after and the first op but waits after its wait.
void logPlacement(Block &block, double seconds) {
  llvm::dbgs() << "  list schedule, " << llvm::format("%.3g", seconds)
               << " s predicted:\n";
  for (Operation &op : block) {
    Value token = dist::getToken(&op);
    dist::WaitOp wait = token ? dist::getWait(token) : dist::WaitOp();
    if (!wait || wait->getBlock() != &block)
      continue;
    Operation *before = op.getPrevNode(), *until = wait->getNextNode();
    while (isa_and_nonnull<dist::WaitOp>(until))
      until = until->getNextNode();
    llvm::dbgs() << "    " << describe(&op) << ": starts "
                 << (before ? "after " + describe(before)
                            : std::string("at the block's start"))
                 << ", waited for before "
                 << (until ? describe(until) : std::string("the end")) << "\n";
  }
}

/// Puts `block`'s ops in `order`.
void reorder(Block &block, ArrayRef<Operation *> order) {
  for (Operation *op : order)
    op->moveBefore(&block, block.end());
}

class Scheduler {
public:
  /// `prefetchAhead`: how many calls ahead of its first use a prefetch may
  /// start (1: while the previous call runs; 0: after it).
  /// `slack`: the bytes a function's peak of live bytes may exceed its
  /// program order's by (negative: no budget).
  Scheduler(ModuleOp module, unsigned prefetchAhead,
            dist::BucketSizes buckets, bool moveCompute,
            const StepTiming *timing, int64_t slack)
      : module(module), symbols(module), prefetchAhead(prefetchAhead), buckets(buckets),
        moveCompute(moveCompute), timing(timing), slack(slack) {
    // The pass read the grid first (an invalid one stopped it there).
    if (module->hasAttr(kPipelineEntriesAttrName))
      if (FailureOr<std::optional<Grid>> grid = Grid::of(module);
          succeeded(grid) && *grid)
        pp = (*grid)->find("pp");
  }

  /// The groups `func` issues transfers on, its callees' included;
  /// memoized.
  const llvm::StringSet<> &groupsOf(func::FuncOp func) {
    if (auto it = groups.find(func); it != groups.end())
      return it->second;
    groups[func]; // a recursive call ends here (the plan rejects it)
    llvm::StringSet<> g;
    func.walk([&](Operation *op) {
      if (isTransfer(op))
        g.insert(dist::transferGroupKey(op));
      if (auto call = dyn_cast<func::CallOp>(op))
        if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
          for (const auto &k : groupsOf(callee))
            g.insert(k.getKey());
    });
    return groups[func] = std::move(g);
  }

  /// Ops whose effect is on persistent storage rather than on their
  /// results (optimizer updates, increments; a call of one): nothing reading
  /// or writing that storage may cross them. A set of a parameter (the end
  /// of ZeRO's gather of it) is ordered with the ops that touch that
  /// parameter only (`touchedParams`), so that a step's deferred gathers
  /// overlap the layers before the parameter's first read.
  bool isBarrier(Operation *op) { return persistent.updates(op); }

  /// The persistent tensors `op` names, itself or through a call.
  llvm::StringSet<> touchedParams(Operation *op) { return persistent.namedBy(op); }

  /// The parameters `op` sets, itself or through a call.
  llvm::StringSet<> setParams(Operation *op) { return persistent.setBy(op); }

  /// The groups `op` issues transfers on through a call.
  const llvm::StringSet<> *callGroups(Operation *op) {
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        return &groupsOf(callee);
    return nullptr;
  }

  /// Whether `transfer`'s group must keep its order: its ranks run
  /// different programs (a pipelined module's stages, when the group spans
  /// pp). Every rank of any other group runs this very program, so the
  /// schedule's order is theirs too: a layer's gradient all-reduces may
  /// start in the order the backward produces them.
  bool ordered(Operation *transfer) {
    if (!pp)
      return false;
    auto axes = transfer->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
    return !axes || llvm::is_contained(axes.asArrayRef(), *pp);
  }

  /// Schedules every function, each after its callees (whose predicted
  /// seconds its calls then take).
  void scheduleAll() {
    for (auto func : module.getOps<func::FuncOp>())
      scheduleFunction(func);
  }

  /// Schedules `block`: starts early, buckets of reductions formed where
  /// the starts then are, then the list scheduler's order over the timing
  /// model (ListSchedule.cpp). Returns the block's predicted seconds.
  double schedule(Block &block) {
    // The budget's base: the block's peak as the lowering ordered it.
    int64_t base = dist::LiveBytes::programOrderPeak(
        block, [&](Operation *op) { return callBytes(op, false); });
    LLVM_DEBUG({
      llvm::dbgs() << "scheduling";
      if (auto func = dyn_cast<func::FuncOp>(block.getParentOp()))
        llvm::dbgs() << " @" << func.getSymName();
      llvm::dbgs() << "\n";
    });
    reorder(block, hoistStarts(block));
    largestBucket = std::max(
        largestBucket,
        dist::bucketReductions(block, buckets, [&](Operation *op) { return ordered(op); },
                               [&](Operation *op) { return isBarrier(op); }));
    // What moves with a transfer is found afresh in the new order.
    moved.clear();
    auto barrier = [&](Operation *op) { return isBarrier(op); };
    auto keepsOrder = [&](Operation *op) { return ordered(op); };
    auto groups = [&](Operation *op) { return callGroups(op); };
    auto moving = [&](Operation *op) { return feeders(op, block); };
    auto anchor = [&](Operation *op) { return prefetchAnchor(op); };
    auto callTime = [&](Operation *op) { return callSeconds(op); };
    auto touched = [&](Operation *op) { return touchedParams(op); };
    auto sets = [&](Operation *op) { return setParams(op); };
    auto frame = [&](Operation *op, bool scheduled) { return callBytes(op, scheduled); };
    dist::ListScheduleRules rules{
        barrier, keepsOrder, groups, moving,     anchor,
        callTime, touched, sets, moveCompute, frame,
        slack < 0 ? -1 : base + slack};
    dist::ListScheduleResult result =
        dist::listSchedule(block, timing, rules);
    LLVM_DEBUG(logPlacement(block, result.seconds));
    if (auto func = dyn_cast<func::FuncOp>(block.getParentOp())) {
      peaks[func] = {result.peak, base};
    }
    return result.seconds;
  }

  /// The bytes of the largest bucket formed so far.
  int64_t largestBucket = 0;

private:
  ModuleOp module;
  /// Callees by name, hashed (a module holds a symbol per parameter).
  SymbolTable symbols;
  /// The pp axis of a pipelined module.
  std::optional<int16_t> pp;
  unsigned prefetchAhead;
  dist::BucketSizes buckets;
  bool moveCompute;
  /// What ops and transfers cost (null: nothing, program order).
  const StepTiming *timing;
  PersistentEffects persistent{symbols};
  /// Each function's transfer groups (groupsOf).
  llvm::DenseMap<Operation *, llvm::StringSet<>> groups;
  /// Each scheduled function's predicted seconds (a call's cost); in the
  /// map while it is being scheduled (a recursive call, which the plan
  /// rejects, costs nothing).
  llvm::DenseMap<Operation *, double> seconds;
  /// Ops moved with the transfer they feed.
  llvm::SmallPtrSet<Operation *, 32> moved;
  int64_t slack;
  /// Each scheduled function's peak of live bytes, scheduled and in
  /// program order (LiveBytes.h): what a call to it holds while it runs.
  llvm::DenseMap<Operation *, std::pair<int64_t, int64_t>> peaks;

  int64_t callBytes(Operation *op, bool scheduled) {
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee())) {
        auto it = peaks.find(callee);
        if (it != peaks.end())
          return scheduled ? it->second.first : it->second.second;
      }
    return 0;
  }

  static bool isTransfer(Operation *op) { return dist::getToken(op) != nullptr; }

  /// Where hoistStarts puts a transfer: after the op at anchor index `a`
  /// (-1: the block start), among the transfers anchored there in program
  /// order. A key (anchor, index) orders ops of the new schedule: an op that
  /// stays is (its index, -1).
  using Key = std::pair<int64_t, int64_t>;

  /// The latest op a transfer (and `chain`, what moves with it) must start
  /// after, found among the ops of `block` placed so far (`key`).
  struct StartPlace {
    StartPlace(Block &block, ArrayRef<Operation *> chain,
               const llvm::DenseMap<Operation *, Key> &key)
        : block(block), chain(chain), inChain(chain.begin(), chain.end()),
          key(key) {}

    Key latest = {-1, -1};
    /// What decided the place, for debug output.
    Operation *anchor = nullptr;
    StringRef why = "nothing it depends on comes earlier";

    void after(Operation *dep, StringRef reason) {
      if (dep && dep->getBlock() == &block && !inChain.contains(dep))
        if (Key k = key.lookup(dep); latest < k) {
          latest = k;
          anchor = dep;
          why = reason;
        }
    }
    void afterOperands(Operation *user) {
      for (Value operand : user->getOperands()) {
        Operation *def = operand.getDefiningOp();
        // A transfer's result is there once its wait has completed it.
        if (Value token = def ? dist::getToken(def) : Value())
          def = dist::getWait(token);
        after(def, "it reads what that op makes");
      }
    }
    /// After what `transfer` reads, the call a prefetch starts after, the
    /// previous transfer on its group when the group keeps its order
    /// (`previousOnGroup`), the last barrier and the last set of a
    /// parameter it reads.
    void afterDependencies(Scheduler &s, Operation *transfer,
                           Operation *previousOnGroup, Operation *lastBarrier,
                           const llvm::StringMap<Operation *> &lastSet) {
      for (Operation *member : chain)
        afterOperands(member);
      afterOperands(transfer);
      // A prefetch (a transfer of parameters only, which are there from
      // the start: ZeRO-3's gathers) starts one call ahead of its first
      // use, not at the start: while one layer computes, the next one's
      // parameters arrive, and at most two layers' are gathered at once.
      after(s.prefetchAnchor(transfer, chain, inChain),
            "a prefetch of parameters starts a call ahead of its first use");
      after(previousOnGroup, "its group's ranks run other programs: its "
                             "transfers keep their order");
      after(lastBarrier, "nothing crosses a write of persistent storage");
      // A parameter a member reads is read after its last set.
      for (Operation *member :
           llvm::concat<Operation *const>(chain, ArrayRef(transfer)))
        for (const auto &p : s.touchedParams(member))
          after(lastSet.lookup(p.getKey()), "it reads a parameter that op sets");
    }

  private:
    Block &block;
    ArrayRef<Operation *> chain;
    llvm::SmallPtrSet<Operation *, 8> inChain;
    const llvm::DenseMap<Operation *, Key> &key;
  };

  /// Every transfer right after the latest op it depends on.
  SmallVector<Operation *> hoistStarts(Block &block) {
    SmallVector<Operation *> ops;
    llvm::DenseMap<Operation *, unsigned> index;
    for (Operation &op : block) {
      index[&op] = ops.size();
      ops.push_back(&op);
    }
    llvm::DenseMap<Operation *, Key> key;
    llvm::StringMap<Operation *> lastOnGroup, lastSet;
    Operation *lastBarrier = nullptr;
    std::map<int64_t, SmallVector<Operation *>> attached;
    for (Operation *op : ops) {
      int64_t i = index[op];
      if (!isTransfer(op)) {
        key[op] = {i, -1};
      } else {
        // What only this transfer reads (a gradient's copy, a reshape to
        // the flat form it sends) moves with it.
        SmallVector<Operation *> chain = feeders(op, block);
        std::string group = dist::transferGroupKey(op);
        StartPlace place(block, chain, key);
        place.afterDependencies(*this, op,
                                ordered(op) ? lastOnGroup.lookup(group) : nullptr,
                                lastBarrier, lastSet);
        Key latest = place.latest;
        LLVM_DEBUG(llvm::dbgs()
                   << "  start of " << describe(op) << " goes "
                   << (place.anchor ? "right after " + describe(place.anchor)
                                    : std::string("to the block's start"))
                   << ": " << place.why << "\n");
        for (Operation *member : chain) {
          moved.insert(member);
          key[member] = {latest.first, index[member]};
          attached[latest.first].push_back(member);
        }
        key[op] = {latest.first, i};
        attached[latest.first].push_back(op);
        lastOnGroup[group] = op;
      }
      if (isBarrier(op))
        lastBarrier = op;
      for (const auto &p : setParams(op))
        lastSet[p.getKey()] = op;
      if (const llvm::StringSet<> *groups = callGroups(op))
        for (const auto &g : *groups)
          lastOnGroup[g.getKey()] = op;
    }
    SmallVector<Operation *> order;
    auto emitAttached = [&](int64_t anchor) {
      auto it = attached.find(anchor);
      if (it != attached.end())
        llvm::append_range(order, it->second);
    };
    emitAttached(-1);
    for (Operation *op : ops) {
      if (isTransfer(op) || moved.contains(op))
        continue;
      order.push_back(op);
      emitAttached(index[op]);
    }
    return order;
  }

  void scheduleFunction(func::FuncOp func) {
    if (func.isExternal() || !func.getBody().hasOneBlock() ||
        !seconds.try_emplace(func, 0.0).second)
      return;
    func.walk([&](func::CallOp call) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        scheduleFunction(callee);
    });
    seconds[func] = schedule(func.getBody().front());
  }

  /// A call's predicted seconds: its callee's; another op with regions (a
  /// rolled loop) is not timed (0).
  double callSeconds(Operation *op) {
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        return seconds.lookup(callee);
    return 0;
  }

  /// The call a prefetch starts after: `prefetchAhead` calls ahead of the
  /// one that first uses it (null: not a prefetch, or too few calls).
  Operation *prefetchAnchor(Operation *transfer) {
    SmallVector<Operation *> chain = feeders(transfer, *transfer->getBlock());
    llvm::SmallPtrSet<Operation *, 8> inChain(chain.begin(), chain.end());
    return prefetchAnchor(transfer, chain, inChain);
  }
  /// The same, given what moves with the transfer (`chain`).
  Operation *prefetchAnchor(Operation *transfer, ArrayRef<Operation *> chain,
                            const llvm::SmallPtrSetImpl<Operation *> &inChain) {
    Block &block = *transfer->getBlock();
    if (!isPrefetch(transfer, chain, inChain))
      return nullptr;
    Operation *use = nullptr;
    for (Value result : transfer->getResults())
      if (!isa<dist::TokenType>(result.getType()))
        for (Operation *user : result.getUsers())
          if (Operation *u = block.findAncestorOpInBlock(*user))
            if (!use || u->isBeforeInBlock(use))
              use = u;
    if (!use)
      return nullptr;
    unsigned calls = 0;
    for (Operation *op = use->getPrevNode(); op; op = op->getPrevNode())
      if (isa<func::CallOp>(op) && ++calls == prefetchAhead + 1)
        return op;
    return nullptr;
  }

  /// Whether `transfer` (with the ops moving with it) reads parameters and
  /// arguments only.
  static bool isPrefetch(Operation *transfer, ArrayRef<Operation *> chain,
                         const llvm::SmallPtrSetImpl<Operation *> &inChain) {
    // A gather of a parameter's ranges into the parameter (ZeRO's deferred
    // to the next step) holds no memory of its own: it starts at once.
    if (llvm::any_of(chain, llvm::IsaPred<GetParamRangeOp>))
      return false;
    // What a parameter read becomes through elementwise ops and reshapes
    // (its compute copy: a convert to bf16), shared or not: a forward's and a
    // backward's gather of one layer read the same copy, which then is no
    // transfer's alone, and both are prefetches all the same.
    std::function<bool(Value)> fromParams = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || inChain.contains(def) || isa<GetParamOp>(def))
        return true;
      if (!isa<ReshapeOp, ConvertOp>(def) && !isFusibleElementwise(def))
        return false;
      return def->getNumOperands() > 0 && llvm::all_of(def->getOperands(), fromParams);
    };
    auto reads = [&](Operation *user) {
      return llvm::all_of(user->getOperands(), fromParams);
    };
    return reads(transfer) && llvm::all_of(chain, reads);
  }

  /// An index computation (a constant, a rank's coordinate, arithmetic on
  /// them: a ZeRO range's offset).
  static bool isIndex(Operation *op) {
    return op->getNumRegions() == 0 && op->getNumResults() == 1 &&
           op->getResult(0).getType().isIndex() && isMemoryEffectFree(op);
  }

  /// The ops only `transfer` reads, transitively: pure elementwise ops,
  /// fills, reshapes, parameter reads and index computations whose every use
  /// is the transfer or another of them, in program order.
  SmallVector<Operation *> feeders(Operation *transfer, Block &block) {
    llvm::SmallPtrSet<Operation *, 8> chain;
    SmallVector<Operation *> work = {transfer};
    while (!work.empty()) {
      Operation *user = work.pop_back_val();
      for (Value operand : user->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != &block || chain.contains(def) ||
            moved.contains(def) ||
            !(isFusibleElementwise(def) || isIndex(def) ||
              isa<ReshapeOp, ConvertOp, GetParamOp, GetParamRangeOp, dist::PackOp>(def)))
          continue;
        bool only = llvm::all_of(def->getUsers(), [&](Operation *u) {
          return u == transfer || chain.contains(u);
        });
        if (!only)
          continue;
        chain.insert(def);
        work.push_back(def);
      }
    }
    SmallVector<Operation *> ordered(chain.begin(), chain.end());
    llvm::sort(ordered,
               [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    return ordered;
  }

};

} // namespace

namespace mlir::dist {

int64_t scheduleFunctions(ModuleOp module, unsigned prefetchAhead, BucketSizes buckets,
                          bool moveCompute, const StepTiming *timing, int64_t slack) {
  Scheduler scheduler(module, prefetchAhead, buckets, moveCompute, timing, slack);
  scheduler.scheduleAll();
  return scheduler.largestBucket;
}

} // namespace mlir::dist
