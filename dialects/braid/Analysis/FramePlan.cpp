//===- FramePlan.cpp - the memory plan of one function's frame ------------===//

#include "dialects/braid/Analysis/FramePlan.h"

#include "dialects/braid/Analysis/BufferPlacement.h"
#include "dialects/braid/Analysis/PlanIndexes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::braid;

namespace {
/// Positions in block order, ascending and each once, of the ops doing
/// something to each persistent tensor, by the tensor's name.
using PositionLists = llvm::StringMap<SmallVector<unsigned, 4>>;

void addPosition(PositionLists &lists, StringRef name, unsigned at) {
  SmallVector<unsigned, 4> &list = lists[name];
  if (list.empty() || list.back() != at)
    list.push_back(at);
}

ArrayRef<unsigned> positionsOf(const PositionLists &lists, StringRef name) {
  auto it = lists.find(name);
  return it == lists.end() ? ArrayRef<unsigned>() : ArrayRef<unsigned>(it->second);
}

/// A buffer `offset` bytes into the frame.
Storage frameStorage(int64_t offset) {
  Storage storage;
  storage.kind = Storage::Kind::Frame;
  storage.offset = offset;
  return storage;
}

/// An argument's or a result's storage.
Storage indexedStorage(Storage::Kind kind, unsigned index) {
  Storage storage;
  storage.kind = kind;
  storage.index = index;
  return storage;
}

/// A parameter's storage, or a view of a range of it.
Storage paramStorage(Storage::Kind kind, StringRef name, int64_t offset) {
  Storage storage;
  storage.kind = kind;
  storage.name = name;
  storage.offset = offset;
  return storage;
}

/// The buffers a frame places: a class of values computed in it, or a
/// call's frame for its callee.
struct FrameBuffers {
  SmallVector<BufferInterval> intervals;
  /// Per interval, the class leader it stores (or null) and the call it
  /// reserves a frame for (or null).
  SmallVector<Value> leaders;
  SmallVector<Operation *> calls;
};

/// Plans one function's frame, step by step, each deciding where some of
/// its values are stored; what no step stores lives in a buffer of the
/// frame. Values sharing storage form one class (a reshape and its input,
/// an operand and the result written in its place), decided by its leader.
class FramePlanner {
public:
  FramePlanner(func::FuncOp func, const ProgramPlan &plan, SymbolTable &symbols,
               PersistentEffects &effects, const llvm::StringMap<int64_t> &paramOffsets)
      : plan(plan), symbols(symbols), effects(effects), paramOffsets(paramOffsets),
        block(func.getBody().front()), functionPlan(std::make_unique<FunctionPlan>()),
        fp(*functionPlan) {
    fp.func = func;
    fp.fusion = std::make_unique<ElementwiseFusion>(func);
  }

  FailureOr<std::unique_ptr<FunctionPlan>> run();

private:
  const ProgramPlan &plan;
  SymbolTable &symbols;
  PersistentEffects &effects;
  const llvm::StringMap<int64_t> &paramOffsets;
  Block &block;
  std::unique_ptr<FunctionPlan> functionPlan;
  FunctionPlan &fp;
  /// The block's ops in order.
  SmallVector<Operation *> blockOps;
  llvm::EquivalenceClasses<Value> classes;
  /// Where each class's data comes from, by its leader: the classes with
  /// none live in the frame.
  llvm::DenseMap<Value, Storage> leaderStorage;
  /// Where the ops of the block name and write persistent tensors, built
  /// when a set or a range asks.
  std::optional<TouchIndex> touchIndex;
  /// The ops reading a value stored in each parameter (braid.get_param's,
  /// through reshapes), and those other than braid.get_param defining one
  /// (a gather set into it): listed when first asked.
  std::optional<PositionLists> paramReaders, paramWriters;
  /// The last position each class is read at (storeInPlace).
  llvm::DenseMap<Value, unsigned> lastRead;
  /// The live ranges of the classes computed in the frame, by leader, and
  /// the first value of each in program order (the op result a reshape
  /// chain starts from).
  llvm::MapVector<Value, BufferInterval> frameClasses;
  llvm::DenseMap<Value, Value> definer;

  std::optional<int64_t> offsetOf(StringRef name) const {
    auto it = paramOffsets.find(name);
    return it == paramOffsets.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  /// The storage of `value`'s class when it is a parameter, or null.
  const Storage *paramStorageOf(Value value) const {
    auto storage = leaderStorage.find(classes.getLeaderValue(value));
    if (storage == leaderStorage.end() || storage->second.kind != Storage::Kind::Param)
      return nullptr;
    return &storage->second;
  }
  TouchIndex &touches() {
    if (!touchIndex)
      touchIndex.emplace(block, symbols, effects);
    return *touchIndex;
  }
  ArrayRef<unsigned> paramReadersOf(StringRef name);
  ArrayRef<unsigned> paramWritersOf(StringRef name);
  unsigned readsUntil(Operation &op);
  bool inFrame(Value value) const {
    return !leaderStorage.count(classes.getLeaderValue(value)) && !fp.fusion->isInner(value);
  }

  LogicalResult assignPositions();
  void groupReshapes();
  void storeArgumentsAndParams();
  void storeSetValuesInParams();
  LogicalResult storeResults();
  void viewParamRanges();
  bool isUnwrittenWhileRead(GetParamRangeOp range, ExecutionOrder &executionOrder);
  void storeInPlace();
  void reduceInPlace(dist::AllReduceOp reduce);
  void fuseInPlace(Operation &root);
  void shareBuffer(Value operand, Value result);
  void collectFrameClasses();
  void extendTransfersToWaits();
  FrameBuffers collectBuffers();
  void placeBuffers(FrameBuffers &buffers);
  void spreadStorageToMembers();
};
} // namespace

FailureOr<std::unique_ptr<FunctionPlan>> FramePlanner::run() {
  if (failed(assignPositions()))
    return failure();
  groupReshapes();
  storeArgumentsAndParams();
  storeSetValuesInParams();
  if (failed(storeResults()))
    return failure();
  viewParamRanges();
  storeInPlace();
  collectFrameClasses();
  extendTransfersToWaits();
  FrameBuffers buffers = collectBuffers();
  if (plan.detail == PlanDetail::PeakLiveBytes) {
    fp.frameBytes = peakLiveBytes(buffers.intervals);
    return std::move(functionPlan);
  }
  placeBuffers(buffers);
  spreadStorageToMembers();
  return std::move(functionPlan);
}

// Positions: fused members execute with their root.
LogicalResult FramePlanner::assignPositions() {
  unsigned index = 0;
  for (Operation &op : block) {
    if (op.getNumRegions() != 0)
      return op.emitError("ops with regions are not supported by the memory "
                          "plan");
    fp.position[&op] = index++;
    blockOps.push_back(&op);
  }
  for (Operation &op : block)
    fp.position[&op] = fp.position[fp.fusion->getExecutionPoint(&op)];
  return success();
}

// Values sharing storage: a reshape and its input; a cache write's result
// and the cache (or page pool) it updates in place, a Mamba step's new state
// and its state (a state, or the argument that carries one: their verifiers
// make it the operand's only use; braid.take_chunk_state's other users are
// the chunk steps it depends on).
void FramePlanner::groupReshapes() {
  for (BlockArgument arg : block.getArguments())
    classes.insert(arg);
  for (Operation &op : block)
    for (Value result : op.getResults()) {
      classes.insert(result);
      if (auto reshape = dyn_cast<ReshapeOp>(op))
        classes.unionSets(result, reshape.getInput());
      else if (auto write = dyn_cast<CacheWriteOp>(op))
        classes.unionSets(result, write.getCache());
      else if (auto paged = dyn_cast<PagedCacheWriteOp>(op))
        classes.unionSets(result, paged.getPool());
      else if (auto chunk = dyn_cast<CacheWriteChunkOp>(op))
        classes.unionSets(result, chunk.getCache());
      else if (auto conv = dyn_cast<ConvStepOp>(op);
               conv && result == conv.getNewState())
        classes.unionSets(result, conv.getState());
      else if (auto scan = dyn_cast<ScanStepOp>(op);
               scan && result == scan.getNewState())
        classes.unionSets(result, scan.getState());
      else if (auto take = dyn_cast<TakeChunkStateOp>(op))
        classes.unionSets(result, take.getState());
    }
}

void FramePlanner::storeArgumentsAndParams() {
  for (BlockArgument arg : block.getArguments())
    leaderStorage[classes.getLeaderValue(arg)] =
        indexedStorage(Storage::Kind::Argument, arg.getArgNumber());
  for (Operation &op : block)
    if (auto get = dyn_cast<GetParamOp>(op)) {
      StringRef name = get.getName();
      leaderStorage[classes.getLeaderValue(get.getResult())] =
          paramStorage(Storage::Kind::Param, name, *offsetOf(name));
    }
}

ArrayRef<unsigned> FramePlanner::paramReadersOf(StringRef name) {
  if (!paramReaders) {
    paramReaders.emplace();
    for (Operation &op : block)
      for (Value operand : op.getOperands())
        if (const Storage *stored = paramStorageOf(operand))
          addPosition(*paramReaders, stored->name, touches().positionOf(&op));
  }
  return positionsOf(*paramReaders, name);
}

ArrayRef<unsigned> FramePlanner::paramWritersOf(StringRef name) {
  if (!paramWriters) {
    paramWriters.emplace();
    for (auto [at, op] : llvm::enumerate(blockOps)) {
      if (isa<GetParamOp>(op))
        continue;
      for (Value result : op->getResults())
        if (const Storage *stored = paramStorageOf(result))
          addPosition(*paramWriters, stored->name, at);
    }
  }
  return positionsOf(*paramWriters, name);
}

// A value set into a parameter is stored in the parameter (a ZeRO
// all-gather then writes it in place) when it is the set's alone and
// nothing reads or writes the parameter between its definition and the
// set.
void FramePlanner::storeSetValuesInParams() {
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
    unsigned from = touches().positionOf(def), to = touches().positionOf(set);
    bool untouched = !touches().namedBetween(name, from, to) &&
                     TouchIndex::between(paramReadersOf(name), from, to).empty();
    if (untouched)
      leaderStorage[classes.getLeaderValue(value)] =
          paramStorage(Storage::Kind::Param, set.getParam(), *offsetOf(set.getParam()));
  }
}

LogicalResult FramePlanner::storeResults() {
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
    leaderStorage[leader] = indexedStorage(Storage::Kind::Result, k);
  }
  return success();
}

// Where an op reads its operands until: its own position, or a transfer's
// wait (a transfer may read its operands until then).
unsigned FramePlanner::readsUntil(Operation &op) {
  unsigned until = fp.position[&op];
  if (Value token = dist::getToken(&op))
    if (dist::WaitOp wait = dist::getWait(token))
      until = std::max(until, fp.position[wait]);
  return until;
}

// A range of a parameter read while nothing writes the parameter is a
// view of it, not a copy: ZeRO's all-gather of this rank's updated range
// then sends from the parameter itself, into which it gathers (its own
// block stays as it is: in place, as NCCL and MPI_IN_PLACE take it). The
// gather alone may write there, through the set its result is stored by.
void FramePlanner::viewParamRanges() {
  ExecutionOrder executionOrder(llvm::to_vector(
      llvm::map_range(blockOps, [&](Operation *op) { return fp.position[op]; })));
  for (Operation &op : block) {
    auto range = dyn_cast<GetParamRangeOp>(op);
    if (!range)
      continue;
    Value leader = classes.getLeaderValue(range.getResult());
    if (leaderStorage.count(leader) || !isUnwrittenWhileRead(range, executionOrder))
      continue;
    StringRef name = range.getParam();
    Storage view = paramStorage(Storage::Kind::ParamRange, name, *offsetOf(name));
    view.at = range.getOffset();
    view.elementBytes = range.getType().getElementTypeBitWidth() / 8;
    leaderStorage[leader] = view;
  }
}

bool FramePlanner::isUnwrittenWhileRead(GetParamRangeOp range,
                                        ExecutionOrder &executionOrder) {
  StringRef name = range.getParam();
  unsigned last = fp.position[range.getOperation()];
  SmallVector<Operation *> readers;
  for (auto m = classes.findLeader(range.getResult()); m != classes.member_end(); ++m)
    for (Operation *user : (*m).getUsers()) {
      last = std::max(last, readsUntil(*user));
      readers.push_back(user);
    }
  // The ops after the range up to the first one executing after `last`
  // (a fused member runs at its root, later than its own place).
  TouchIndex &index = touches();
  unsigned from = index.positionOf(range.getOperation());
  unsigned to = executionOrder.firstAbove(from, last);
  bool untouched = !index.writtenBetween(name, from, to);
  // Another value stored in the parameter is written while the view is
  // read: a gather that is not the view's reader.
  if (untouched)
    for (unsigned at : TouchIndex::between(paramWritersOf(name), from, to))
      untouched &= llvm::is_contained(readers, blockOps[at]);
  return untouched;
}

// A fused elementwise group writes its result in place of an operand of
// the result's type that is read for the last time there: element i is
// loaded before it is stored, and no other element reads it. Gradient
// accumulation over micro-batches then adds into one buffer per
// parameter instead of a new one per micro-batch.
void FramePlanner::storeInPlace() {
  for (Operation &op : block) {
    unsigned until = readsUntil(op);
    for (Value operand : op.getOperands()) {
      unsigned &last = lastRead[classes.getLeaderValue(operand)];
      last = std::max(last, until);
    }
  }
  for (Operation &op : block) {
    if (auto reduce = dyn_cast<dist::AllReduceOp>(op))
      reduceInPlace(reduce);
    else
      fuseInPlace(op);
  }
}

// `result` takes `operand`'s buffer: one class, read until the result's
// last read (the operand's ended where the result is written).
void FramePlanner::shareBuffer(Value operand, Value result) {
  unsigned resultLast = lastRead.lookup(classes.getLeaderValue(result));
  classes.unionSets(classes.getLeaderValue(operand), result);
  lastRead[classes.getLeaderValue(result)] = resultLast;
}

// An all-reduce likewise reduces in place an operand it reads last (the
// runtime reduces with the send buffer as the receive buffer: MPI_IN_PLACE,
// NCCL's in place): a gradient and its sum share a buffer, so a reduction
// started early costs no memory of its own. Every other read of the
// operand must come before the start: the buffer holds partial sums while
// the reduction is in flight.
void FramePlanner::reduceInPlace(dist::AllReduceOp reduce) {
  Operation &op = *reduce;
  Value input = reduce.getInput(), result = reduce.getResult();
  auto readBefore = [&] {
    for (auto m = classes.findLeader(input); m != classes.member_end(); ++m)
      for (Operation *user : (*m).getUsers())
        if (user != &op && readsUntil(*user) >= fp.position[&op])
          return false;
    return true;
  };
  // A reduction the function returns (a micro-batched gradient summed and
  // reduced in its last backward, OverlapRewrites.cpp) reduces in the
  // caller's buffer for it: the sum is computed there, not in a buffer of
  // this frame that would live until the wait.
  auto returned = leaderStorage.find(classes.getLeaderValue(result));
  bool intoResult = returned != leaderStorage.end() &&
                    returned->second.kind == Storage::Kind::Result &&
                    classes.getLeaderValue(result) == result;
  if (!(input.getType() == result.getType() && input.getDefiningOp() && inFrame(input) &&
        (inFrame(result) || intoResult) && readBefore() &&
        lastRead.lookup(classes.getLeaderValue(input)) == readsUntil(op)))
    return;
  if (!intoResult) {
    shareBuffer(input, result);
    return;
  }
  Storage storage = returned->second;
  leaderStorage.erase(returned);
  shareBuffer(input, result);
  leaderStorage[classes.getLeaderValue(result)] = storage;
}

void FramePlanner::fuseInPlace(Operation &root) {
  if (fp.fusion->getRoot(&root) != &root || root.getNumResults() != 1)
    return;
  Value result = root.getResult(0);
  if (!inFrame(result))
    return;
  ArrayRef<Operation *> members = fp.fusion->getMembers(&root);
  unsigned at = fp.position[&root];
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
    shareBuffer(*operand, result);
    break;
  }
}

// Live ranges of the classes computed in this frame.
void FramePlanner::collectFrameClasses() {
  for (Operation &op : block) {
    for (Value result : op.getResults()) {
      // A transfer's token, an index (a rank's coordinate), are no data.
      if (!isa<RankedTensorType>(result.getType()))
        continue;
      Value leader = classes.getLeaderValue(result);
      if (leaderStorage.count(leader) || fp.fusion->isInner(result))
        continue;
      unsigned at = fp.position[&op];
      if (frameClasses
              .try_emplace(leader, BufferInterval{alignBuffer(getTensorBytes(result.getType())),
                                                  at, at, at})
              .second)
        definer[leader] = result;
    }
  }
}

// A transfer may read its operands, and writes its results, until its
// dist.wait: both live until then (a result nothing reads would otherwise
// be freed at the start, and its buffer reused while the transfer still
// writes it).
void FramePlanner::extendTransfersToWaits() {
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
}

FrameBuffers FramePlanner::collectBuffers() {
  FrameBuffers buffers;
  for (auto &[leader, interval] : frameClasses) {
    if (interval.bytes == 0)
      continue;
    buffers.intervals.push_back(interval);
    buffers.leaders.push_back(leader);
    buffers.calls.push_back(nullptr);
  }
  for (Operation &op : block)
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      int64_t bytes = plan.get(callee).frameBytes;
      if (bytes == 0)
        continue;
      unsigned at = fp.position[&op];
      buffers.intervals.push_back({bytes, at, at, at});
      buffers.leaders.push_back(nullptr);
      buffers.calls.push_back(&op);
    }
  return buffers;
}

void FramePlanner::placeBuffers(FrameBuffers &buffers) {
  fp.frameBytes = placeFirstFit(buffers.intervals);
  for (auto [i, interval] : llvm::enumerate(buffers.intervals)) {
    if (Operation *call = buffers.calls[i]) {
      fp.calleeFrame[call] = interval.offset;
      continue;
    }
    Value leader = buffers.leaders[i];
    leaderStorage[leader] = frameStorage(interval.offset);
    fp.buffers.push_back({definer.lookup(leader), interval.offset,
                          interval.bytes, interval.firstOp, interval.lastOp});
  }
  for (auto &[leader, interval] : frameClasses)
    if (interval.bytes == 0)
      leaderStorage[leader] = frameStorage(0);
}

void FramePlanner::spreadStorageToMembers() {
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
}

FailureOr<std::unique_ptr<FunctionPlan>>
mlir::braid::planFrame(func::FuncOp func, const ProgramPlan &plan, SymbolTable &symbols,
                       PersistentEffects &effects,
                       const llvm::StringMap<int64_t> &paramOffsets) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("the memory plan needs a function of one block");
  return FramePlanner(func, plan, symbols, effects, paramOffsets).run();
}
