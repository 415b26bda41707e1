//===- MemoryPlan.cpp - static arena layout of a braid program ------------===//

#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "llvm/ADT/StringSet.h"

#include "dialects/braid/Analysis/OpCost.h"
#include "dialects/braid/Analysis/PersistentEffects.h"
#include "dialects/braid/Analysis/PlanIndexes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::braid;

static int64_t align(int64_t bytes) {
  return llvm::alignTo(bytes, kBufferAlignment);
}

namespace {
/// A buffer to place: [firstOp, lastOp] x bytes.
struct Interval {
  int64_t bytes;
  unsigned firstOp, lastOp;
  unsigned order; // program order, for a deterministic tie break
  int64_t offset = -1;
};

/// A placed buffer as the placement scans it.
struct Placed {
  int64_t offset, end;
  unsigned firstOp, lastOp;
};

/// First fit by decreasing size: each buffer goes to the lowest offset where
/// it overlaps no already placed buffer live at the same time. Returns the
/// extent of the placement.
///
/// The placed buffers are kept in order of offset, so that a search walks
/// them upwards from 0 and stops at the first placed buffer starting above
/// the candidate's end: no conflict list to sort, and the walk ends where
/// the buffer fits. They are held in runs of at most kRun, each contiguous,
/// so that the walk reads memory in order and an insertion moves one run:
/// a pipelined step of twenty thousand buffers places in a tenth of a
/// second.
int64_t placeIntervals(MutableArrayRef<Interval> intervals) {
  SmallVector<Interval *> bySize;
  for (Interval &interval : intervals)
    bySize.push_back(&interval);
  llvm::stable_sort(bySize, [](Interval *a, Interval *b) {
    if (a->bytes != b->bytes)
      return a->bytes > b->bytes;
    return a->order < b->order;
  });
  constexpr size_t kRun = 512;
  std::vector<std::vector<Placed>> runs;
  int64_t extent = 0;
  for (Interval *interval : bySize) {
    int64_t offset = 0;
    bool fits = false;
    for (const std::vector<Placed> &run : runs) {
      for (const Placed &other : run) {
        if (offset + interval->bytes <= other.offset) {
          fits = true;
          break;
        }
        if (other.firstOp <= interval->lastOp &&
            interval->firstOp <= other.lastOp)
          offset = std::max(offset, other.end);
      }
      if (fits)
        break;
    }
    interval->offset = offset;
    extent = std::max(extent, offset + interval->bytes);
    // After every placed buffer at or below `offset`.
    Placed placed{offset, offset + interval->bytes, interval->firstOp,
                  interval->lastOp};
    auto run = std::upper_bound(
        runs.begin(), runs.end(), offset,
        [](int64_t value, const std::vector<Placed> &r) {
          return value < r.front().offset;
        });
    if (run != runs.begin())
      --run;
    if (run == runs.end()) {
      runs.push_back({placed});
      continue;
    }
    run->insert(std::upper_bound(run->begin(), run->end(), offset,
                                 [](int64_t value, const Placed &other) {
                                   return value < other.offset;
                                 }),
                placed);
    if (run->size() > 2 * kRun) {
      std::vector<Placed> upper(run->begin() + kRun, run->end());
      run->resize(kRun);
      runs.insert(run + 1, std::move(upper));
    }
  }
  return extent;
}

class MemoryPlanner {
public:
  MemoryPlanner(ModuleOp module, ProgramPlan &plan) : symbols(module), plan(plan) {
    // ProgramPlan::offsetOf by name, hashed: a step reads every parameter.
    for (const SmallVector<PersistentTensor> *list : {&plan.params, &plan.states})
      for (const PersistentTensor &tensor : *list)
        offsets.try_emplace(tensor.name, tensor.offset);
  }

  /// Plans `func` after every function it calls.
  LogicalResult planRecursively(func::FuncOp func);

private:
  SymbolTable symbols;
  ProgramPlan &plan;
  llvm::DenseSet<Operation *> onStack;
  PersistentEffects effects{symbols};
  llvm::StringMap<int64_t> offsets;

  LogicalResult planFunction(func::FuncOp func);
  std::optional<int64_t> offsetOf(StringRef name) const {
    auto it = offsets.find(name);
    return it == offsets.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
};

} // namespace

LogicalResult MemoryPlanner::planRecursively(func::FuncOp func) {
  if (plan.functions.count(func))
    return success();
  if (!onStack.insert(func).second)
    return func.emitError("recursive call to '")
           << func.getSymName() << "' cannot be planned";
  WalkResult walk = func.walk([&](func::CallOp call) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal()) {
      call.emitError("cannot plan a call to '")
          << call.getCalleeAttr() << "', which has no body in this module";
      return WalkResult::interrupt();
    }
    return failed(planRecursively(callee)) ? WalkResult::interrupt()
                                           : WalkResult::advance();
  });
  onStack.erase(func);
  if (walk.wasInterrupted())
    return failure();
  return planFunction(func);
}

LogicalResult MemoryPlanner::planFunction(func::FuncOp func) {
  auto functionPlan = std::make_unique<FunctionPlan>();
  FunctionPlan &fp = *functionPlan;
  fp.func = func;
  if (!func.getBody().hasOneBlock())
    return func.emitError("the memory plan needs a function of one block");
  Block &block = func.getBody().front();
  fp.fusion = std::make_unique<ElementwiseFusion>(func);

  // Positions: fused members execute with their root.
  unsigned index = 0;
  for (Operation &op : block) {
    if (op.getNumRegions() != 0)
      return op.emitError("ops with regions are not supported by the memory "
                          "plan");
    fp.position[&op] = index++;
  }
  for (Operation &op : block)
    fp.position[&op] = fp.position[fp.fusion->getExecutionPoint(&op)];

  // Values sharing storage: a reshape and its input.
  llvm::EquivalenceClasses<Value> classes;
  for (BlockArgument arg : block.getArguments())
    classes.insert(arg);
  for (Operation &op : block)
    for (Value result : op.getResults()) {
      classes.insert(result);
      if (auto reshape = dyn_cast<ReshapeOp>(op))
        classes.unionSets(result, reshape.getInput());
    }

  // Where each class's data comes from.
  llvm::DenseMap<Value, Storage> leaderStorage;
  for (BlockArgument arg : block.getArguments())
    leaderStorage[classes.getLeaderValue(arg)] = {Storage::Kind::Argument, 0,
                                                  arg.getArgNumber(), {}};
  for (Operation &op : block)
    if (auto get = dyn_cast<GetParamOp>(op)) {
      StringRef name = get.getName();
      leaderStorage[classes.getLeaderValue(get.getResult())] = {
          Storage::Kind::Param, *offsetOf(name), 0, name};
    }
  // Where the ops of the block name and write persistent tensors, built
  // when a set or a range asks.
  std::optional<TouchIndex> touchIndex;
  auto touchesOf = [&]() -> TouchIndex & {
    if (!touchIndex)
      touchIndex.emplace(block, symbols, effects);
    return *touchIndex;
  };
  // The positions of the ops reading a value stored in each parameter
  // (braid.get_param's, through reshapes).
  std::optional<llvm::StringMap<SmallVector<unsigned, 4>>> paramReaders;
  auto paramReadersOf = [&](StringRef name) -> ArrayRef<unsigned> {
    if (!paramReaders) {
      paramReaders.emplace();
      for (Operation &op : block)
        for (Value operand : op.getOperands()) {
          auto storage = leaderStorage.find(classes.getLeaderValue(operand));
          if (storage == leaderStorage.end() || storage->second.kind != Storage::Kind::Param)
            continue;
          SmallVector<unsigned, 4> &list = (*paramReaders)[storage->second.name];
          unsigned at = touchesOf().positionOf(&op);
          if (list.empty() || list.back() != at)
            list.push_back(at);
        }
    }
    auto it = paramReaders->find(name);
    return it == paramReaders->end() ? ArrayRef<unsigned>() : ArrayRef<unsigned>(it->second);
  };
  // A value set into a parameter is stored in the parameter (a ZeRO
  // all-gather then writes it in place) when it is the set's alone and
  // nothing reads or writes the parameter between its definition and the
  // set.
  for (Operation &op : block) {
    auto set = dyn_cast<SetParamOp>(op);
    if (!set)
      continue;
    Value value = set.getValue();
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != &block || !value.hasOneUse() ||
        isa<ReshapeOp>(def) || leaderStorage.count(classes.getLeaderValue(value)))
      continue;
    // An op touches the parameter when it names it (an update, a read of
    // a range; a call whose callee does) or reads a value stored in it
    // (braid.get_param's, through reshapes). The values this loop stores
    // in parameters are read by their sets alone, which name them: what
    // touches a parameter is known before the loop.
    StringRef name = set.getParam();
    unsigned from = touchesOf().positionOf(def), to = touchesOf().positionOf(set);
    bool untouched = !touchesOf().namedBetween(name, from, to) &&
                     TouchIndex::between(paramReadersOf(name), from, to).empty();
    if (untouched)
      leaderStorage[classes.getLeaderValue(value)] = {
          Storage::Kind::Param, *offsetOf(set.getParam()), 0,
          set.getParam()};
  }
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  for (auto [k, value] : llvm::enumerate(ret.getOperands())) {
    Value leader = classes.getLeaderValue(value);
    auto existing = leaderStorage.find(leader);
    if (existing != leaderStorage.end()) {
      if (existing->second.kind == Storage::Kind::Result)
        return ret.emitError("returns the same value twice; the memory plan "
                             "needs one buffer per result");
      return ret.emitError("returns a function argument or a parameter; the "
                           "memory plan needs results computed in the "
                           "function");
    }
    leaderStorage[leader] = {Storage::Kind::Result, 0,
                             static_cast<unsigned>(k), {}};
  }

  // Where each op reads its operands until: its own position, or a
  // transfer's wait (a transfer may read its operands until then).
  auto readsUntil = [&](Operation &op) {
    unsigned until = fp.position[&op];
    if (Value token = dist::getToken(&op))
      if (dist::WaitOp wait = dist::getWait(token))
        until = std::max(until, fp.position[wait]);
    return until;
  };

  // The block's ops in order, and the positions they execute at.
  SmallVector<Operation *> blockOps;
  for (Operation &op : block)
    blockOps.push_back(&op);
  ExecutionOrder executionOrder(llvm::to_vector(
      llvm::map_range(blockOps, [&](Operation *op) { return fp.position[op]; })));
  // The positions of the ops other than braid.get_param defining a value
  // stored in each parameter (a gather set into it).
  std::optional<llvm::StringMap<SmallVector<unsigned, 4>>> paramWriters;
  auto paramWritersOf = [&](StringRef name) -> ArrayRef<unsigned> {
    if (!paramWriters) {
      paramWriters.emplace();
      for (auto [at, op] : llvm::enumerate(blockOps)) {
        if (isa<GetParamOp>(op))
          continue;
        for (Value result : op->getResults()) {
          auto stored = leaderStorage.find(classes.getLeaderValue(result));
          if (stored == leaderStorage.end() || stored->second.kind != Storage::Kind::Param)
            continue;
          SmallVector<unsigned, 4> &list = (*paramWriters)[stored->second.name];
          if (list.empty() || list.back() != at)
            list.push_back(at);
        }
      }
    }
    auto it = paramWriters->find(name);
    return it == paramWriters->end() ? ArrayRef<unsigned>() : ArrayRef<unsigned>(it->second);
  };
  // A range of a parameter read while nothing writes the parameter is a
  // view of it, not a copy: ZeRO's all-gather of this rank's updated range
  // then sends from the parameter itself, into which it gathers (its own
  // block stays as it is: in place, as NCCL and MPI_IN_PLACE take it). The
  // gather alone may write there, through the set its result is stored by.
  for (Operation &op : block) {
    auto range = dyn_cast<GetParamRangeOp>(op);
    if (!range)
      continue;
    Value leader = classes.getLeaderValue(range.getResult());
    if (leaderStorage.count(leader))
      continue;
    StringRef name = range.getParam();
    unsigned last = fp.position[&op];
    SmallVector<Operation *> readers;
    for (auto m = classes.findLeader(range.getResult()); m != classes.member_end(); ++m)
      for (Operation *user : (*m).getUsers()) {
        last = std::max(last, readsUntil(*user));
        readers.push_back(user);
      }
    // The ops after the range up to the first one executing after `last`
    // (a fused member runs at its root, later than its own place).
    TouchIndex &touches = touchesOf();
    unsigned from = touches.positionOf(&op);
    unsigned to = executionOrder.firstAbove(from, last);
    bool untouched = !touches.writtenBetween(name, from, to);
    // Another value stored in the parameter is written while the view is
    // read: a gather that is not the view's reader.
    if (untouched)
      for (unsigned at : TouchIndex::between(paramWritersOf(name), from, to))
        untouched &= llvm::is_contained(readers, blockOps[at]);
    if (!untouched)
      continue;
    Storage view{Storage::Kind::ParamRange, *offsetOf(name), 0, name};
    view.at = range.getOffset();
    view.elementBytes = range.getType().getElementTypeBitWidth() / 8;
    leaderStorage[leader] = view;
  }

  // A fused elementwise group writes its result in place of an operand of
  // the result's type that is read for the last time there: element i is
  // loaded before it is stored, and no other element reads it. Gradient
  // accumulation over micro-batches then adds into one buffer per
  // parameter instead of a new one per micro-batch.
  {
    llvm::DenseMap<Value, unsigned> lastRead;
    for (Operation &op : block) {
      unsigned until = readsUntil(op);
      for (Value operand : op.getOperands()) {
        unsigned &last = lastRead[classes.getLeaderValue(operand)];
        last = std::max(last, until);
      }
    }
    auto inFrame = [&](Value value) {
      return !leaderStorage.count(classes.getLeaderValue(value)) &&
             !fp.fusion->isInner(value);
    };
    // `result` takes `operand`'s buffer: one class, read until the result's
    // last read (the operand's ended where the result is written).
    auto storeInPlace = [&](Value operand, Value result) {
      unsigned resultLast = lastRead.lookup(classes.getLeaderValue(result));
      classes.unionSets(classes.getLeaderValue(operand), result);
      lastRead[classes.getLeaderValue(result)] = resultLast;
    };
    for (Operation &op : block) {
      // An all-reduce likewise reduces in place an operand it reads last
      // (the runtime reduces with the send buffer as the receive buffer:
      // MPI_IN_PLACE, NCCL's in place): a gradient and its sum share a
      // buffer, so a reduction started early costs no memory of its own.
      // Every other read of the operand must come before the start: the
      // buffer holds partial sums while the reduction is in flight.
      if (auto reduce = dyn_cast<dist::AllReduceOp>(op)) {
        Value input = reduce.getInput(), result = reduce.getResult();
        auto readBefore = [&] {
          for (auto m = classes.findLeader(input); m != classes.member_end(); ++m)
            for (Operation *user : (*m).getUsers())
              if (user != &op && readsUntil(*user) >= fp.position[&op])
                return false;
          return true;
        };
        // A reduction the function returns (a micro-batched gradient summed
        // and reduced in its last backward, OverlapRewrites.cpp) reduces in
        // the caller's buffer for it: the sum is computed there, not in a
        // buffer of this frame that would live until the wait.
        auto returned = leaderStorage.find(classes.getLeaderValue(result));
        bool intoResult = returned != leaderStorage.end() &&
                          returned->second.kind == Storage::Kind::Result &&
                          classes.getLeaderValue(result) == result;
        if (input.getType() == result.getType() && input.getDefiningOp() &&
            inFrame(input) && (inFrame(result) || intoResult) && readBefore() &&
            lastRead.lookup(classes.getLeaderValue(input)) == readsUntil(op)) {
          if (intoResult) {
            Storage storage = returned->second;
            leaderStorage.erase(returned);
            storeInPlace(input, result);
            leaderStorage[classes.getLeaderValue(result)] = storage;
          } else {
            storeInPlace(input, result);
          }
        }
        continue;
      }
      if (fp.fusion->getRoot(&op) != &op || op.getNumResults() != 1)
        continue;
      Value result = op.getResult(0);
      if (!inFrame(result))
        continue;
      ArrayRef<Operation *> members = fp.fusion->getMembers(&op);
      unsigned at = fp.position[&op];
      auto reusable = [&](Value operand) {
        Operation *def = operand.getDefiningOp();
        return def && !llvm::is_contained(members, def) &&
               operand.getType() == result.getType() && inFrame(operand) &&
               lastRead.lookup(classes.getLeaderValue(operand)) == at;
      };
      for (Operation *member : members) {
        auto operand = llvm::find_if(member->getOperands(), reusable);
        if (operand == member->getOperands().end())
          continue;
        storeInPlace(*operand, result);
        break;
      }
    }
  }

  // Live ranges of the classes computed in this frame.
  // Keyed by class leader; `definer` is the class's first value in program
  // order (the op result a reshape chain starts from).
  llvm::MapVector<Value, Interval> frameClasses;
  llvm::DenseMap<Value, Value> definer;
  for (Operation &op : block) {
    for (Value result : op.getResults()) {
      // A transfer's token, an index (a rank's coordinate), are no data.
      if (!isa<RankedTensorType>(result.getType()))
        continue;
      Value leader = classes.getLeaderValue(result);
      if (leaderStorage.count(leader) || fp.fusion->isInner(result))
        continue;
      unsigned at = fp.position[&op];
      if (frameClasses.try_emplace(leader, Interval{align(getTensorBytes(
                                                        result.getType())),
                                                    at, at, at})
              .second)
        definer[leader] = result;
    }
  }
  // A transfer may read its operands, and writes its results, until its
  // dist.wait: both live until then (a result nothing reads would otherwise
  // be freed at the start, and its buffer reused while the transfer still
  // writes it).
  for (Operation &op : block) {
    unsigned until = readsUntil(op);
    auto extend = [&](Value value) {
      if (!isa<RankedTensorType>(value.getType()))
        return;
      auto it = frameClasses.find(classes.getLeaderValue(value));
      if (it != frameClasses.end())
        it->second.lastOp = std::max(it->second.lastOp, until);
    };
    for (Value operand : op.getOperands())
      extend(operand);
    if (until != fp.position[&op])
      for (Value result : op.getResults())
        extend(result);
  }

  SmallVector<Interval> intervals;
  SmallVector<Value> intervalValue;
  SmallVector<Operation *> intervalCall;
  for (auto &[leader, interval] : frameClasses) {
    if (interval.bytes == 0)
      continue;
    intervals.push_back(interval);
    intervalValue.push_back(leader);
    intervalCall.push_back(nullptr);
  }
  for (Operation &op : block)
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      int64_t bytes = plan.get(callee).frameBytes;
      if (bytes == 0)
        continue;
      unsigned at = fp.position[&op];
      intervals.push_back({bytes, at, at, at});
      intervalValue.push_back(nullptr);
      intervalCall.push_back(&op);
    }
  if (plan.detail == PlanDetail::PeakLiveBytes) {
    // A sweep over the intervals' ends: the most bytes live at once.
    SmallVector<std::pair<unsigned, int64_t>> events;
    for (const Interval &interval : intervals) {
      events.push_back({interval.firstOp, interval.bytes});
      events.push_back({interval.lastOp + 1, -interval.bytes});
    }
    llvm::sort(events, [](const auto &a, const auto &b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    int64_t live = 0, peak = 0;
    for (auto [at, bytes] : events)
      peak = std::max(peak, live += bytes);
    fp.frameBytes = peak;
    plan.functions[func] = std::move(functionPlan);
    return success();
  }
  fp.frameBytes = placeIntervals(intervals);

  for (auto [i, interval] : llvm::enumerate(intervals)) {
    if (Operation *call = intervalCall[i]) {
      fp.calleeFrame[call] = interval.offset;
      continue;
    }
    Value leader = intervalValue[i];
    leaderStorage[leader] = {Storage::Kind::Frame, interval.offset, 0, {}};
    fp.buffers.push_back({definer.lookup(leader), interval.offset,
                          interval.bytes, interval.firstOp, interval.lastOp});
  }
  for (auto &[leader, interval] : frameClasses)
    if (interval.bytes == 0)
      leaderStorage[leader] = {Storage::Kind::Frame, 0, 0, {}};

  for (auto it = classes.begin(); it != classes.end(); ++it) {
    if (!(*it)->isLeader())
      continue;
    Value leader = (*it)->getData();
    auto storage = leaderStorage.find(leader);
    if (storage == leaderStorage.end())
      continue; // inner values of fused groups
    for (auto member = classes.member_begin(**it);
         member != classes.member_end(); ++member)
      fp.storage[*member] = storage->second;
  }
  plan.functions[func] = std::move(functionPlan);
  return success();
}

std::optional<int64_t> ProgramPlan::offsetOf(StringRef name) const {
  for (const SmallVector<PersistentTensor> *list : {&params, &states})
    for (const PersistentTensor &tensor : *list)
      if (tensor.name == name)
        return tensor.offset;
  return std::nullopt;
}

FailureOr<ProgramPlan> mlir::braid::planProgram(ModuleOp module,
                                                func::FuncOp entry,
                                                PlanDetail detail) {
  ProgramPlan plan;
  plan.entry = entry;
  if (!plan.entry || plan.entry.isExternal())
    return module.emitError("no entry function with a body to plan");
  plan.kind = getEntryKind(plan.entry).value_or(EntryKind::TrainStep);
  FunctionType type = plan.entry.getFunctionType();
  if (plan.kind == EntryKind::TrainStep) {
    auto lossType = type.getNumResults() == 1
                        ? dyn_cast<RankedTensorType>(type.getResult(0))
                        : RankedTensorType();
    if (!lossType || lossType.getRank() != 0 || !lossType.getElementType().isF32())
      return plan.entry.emitError("the step function must return one "
                                  "tensor<f32> (the loss), found ")
             << type;
  }

  if (auto name = plan.entry->getAttrOfType<FlatSymbolRefAttr>(kFinishAttrName)) {
    plan.finish = module.lookupSymbol<func::FuncOp>(name);
    if (!plan.finish || plan.finish.isExternal())
      return plan.entry.emitError("no finish function ")
             << name << " with a body in this module";
  }

  // The parameters and state the entry uses: a pipeline rank's program
  // holds only its own stages' (the module holds every rank's).
  llvm::StringSet<> used;
  {
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> work = {plan.entry};
    llvm::SmallPtrSet<Operation *, 16> seen;
    while (!work.empty()) {
      func::FuncOp f = work.pop_back_val();
      if (!seen.insert(f).second)
        continue;
      f.walk([&](Operation *op) {
        if (auto call = dyn_cast<func::CallOp>(op))
          if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
            work.push_back(callee);
        // Parameters and states are named by an op's own attributes
        // (braid.get_param @p, an update's @p, @m, @v): no need to walk
        // nested attributes, which a step of tens of thousands of ops
        // would pay for on every pipeline stage's plan.
        for (NamedAttribute attr : op->getAttrs())
          if (auto ref = dyn_cast<FlatSymbolRefAttr>(attr.getValue()))
            used.insert(ref.getValue());
      });
    }
  }
  int64_t offset = 0;
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (!used.contains(param.getSymName()))
      continue;
    plan.params.push_back(
        {param.getSymName().str(), param.getTensorType(), offset});
    offset += align(getTensorBytes(param.getTensorType()));
  }
  for (StateOp state : module.getOps<StateOp>()) {
    if (!used.contains(state.getSymName()))
      continue;
    plan.states.push_back(
        {state.getSymName().str(), state.getTensorType(), offset});
    offset += align(getTensorBytes(state.getTensorType()));
  }
  for (BlockArgument arg : plan.entry.getArguments()) {
    auto argType = dyn_cast<RankedTensorType>(arg.getType());
    if (!argType || !argType.hasStaticShape())
      return plan.entry.emitError("step argument #")
             << arg.getArgNumber() << " must be a static tensor, found "
             << arg.getType();
    plan.inputs.push_back({"", argType, offset});
    offset += align(getTensorBytes(argType));
  }
  for (auto [index, result] : llvm::enumerate(type.getResults())) {
    auto resultType = dyn_cast<RankedTensorType>(result);
    if (!resultType || !resultType.hasStaticShape())
      return plan.entry.emitError("result #")
             << index << " of an entry point must be a static tensor, found "
             << result;
    plan.outputs.push_back({"", resultType, offset});
    offset += align(getTensorBytes(resultType));
  }
  plan.persistentBytes = offset;

  plan.detail = detail;
  if (detail == PlanDetail::Persistent)
    return plan;
  MemoryPlanner planner(module, plan);
  if (failed(planner.planRecursively(plan.entry)))
    return failure();
  int64_t frame = plan.get(plan.entry).frameBytes;
  if (plan.finish) {
    if (failed(planner.planRecursively(plan.finish)))
      return failure();
    frame = std::max(frame, plan.get(plan.finish).frameBytes);
  }
  plan.arenaBytes = plan.persistentBytes + frame;
  return plan;
}

FailureOr<int64_t> mlir::braid::peakArenaBytes(ModuleOp module,
                                               PlanDetail detail) {
  SmallVector<func::FuncOp> programs = getPrograms(module);
  if (programs.empty())
    return module.emitError("no entry point to plan (a public func.func "
                            "marked braid.entry)");
  int64_t most = 0;
  for (func::FuncOp program : programs) {
    FailureOr<ProgramPlan> plan = planProgram(module, program, detail);
    if (failed(plan))
      return failure();
    most = std::max(most, plan->arenaBytes);
  }
  return most;
}
