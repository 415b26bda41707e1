//===- MemoryPlan.cpp - static arena layout of a braid program ------------===//

#include "dialects/braid/Analysis/MemoryPlan.h"

#include "llvm/ADT/StringSet.h"

#include "dialects/braid/Analysis/OpCost.h"
#include "dialects/braid/IR/BraidOps.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::braid;

int64_t mlir::braid::getTensorBytes(Type type) {
  auto shaped = cast<ShapedType>(type);
  return shaped.getNumElements() * getElementBytes(shaped.getElementType());
}

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<ShapedType>(value.getType()).getShape();
}

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

/// First fit by decreasing size: each buffer goes to the lowest offset where
/// it overlaps no already placed buffer live at the same time. Returns the
/// extent of the placement.
int64_t placeIntervals(MutableArrayRef<Interval> intervals) {
  SmallVector<Interval *> bySize;
  for (Interval &interval : intervals)
    bySize.push_back(&interval);
  llvm::stable_sort(bySize, [](Interval *a, Interval *b) {
    if (a->bytes != b->bytes)
      return a->bytes > b->bytes;
    return a->order < b->order;
  });
  SmallVector<Interval *> placed;
  int64_t extent = 0;
  for (Interval *interval : bySize) {
    SmallVector<Interval *> conflicts;
    for (Interval *other : placed)
      if (other->firstOp <= interval->lastOp &&
          interval->firstOp <= other->lastOp)
        conflicts.push_back(other);
    llvm::sort(conflicts, [](Interval *a, Interval *b) {
      return a->offset < b->offset;
    });
    int64_t offset = 0;
    for (Interval *other : conflicts) {
      if (offset + interval->bytes <= other->offset)
        break;
      offset = std::max(offset, other->offset + other->bytes);
    }
    interval->offset = offset;
    extent = std::max(extent, offset + interval->bytes);
    placed.push_back(interval);
  }
  return extent;
}

class Planner {
public:
  Planner(ModuleOp module, ProgramPlan &plan) : symbols(module), plan(plan) {}

  /// Plans `func` after every function it calls.
  LogicalResult planRecursively(func::FuncOp func);

private:
  SymbolTable symbols;
  ProgramPlan &plan;
  llvm::DenseSet<Operation *> onStack;

  LogicalResult planFunction(func::FuncOp func);
};
} // namespace

LogicalResult Planner::planRecursively(func::FuncOp func) {
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

LogicalResult Planner::planFunction(func::FuncOp func) {
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
          Storage::Kind::Param, *plan.offsetOf(name), 0, name};
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

  // Live ranges of the classes computed in this frame.
  // Keyed by class leader; `definer` is the class's first value in program
  // order (the op result a reshape chain starts from).
  llvm::MapVector<Value, Interval> frameClasses;
  llvm::DenseMap<Value, Value> definer;
  for (Operation &op : block) {
    for (Value result : op.getResults()) {
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
  for (Operation &op : block)
    for (Value operand : op.getOperands()) {
      auto it = frameClasses.find(classes.getLeaderValue(operand));
      if (it != frameClasses.end())
        it->second.lastOp = std::max(it->second.lastOp, fp.position[&op]);
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
  SmallVector<Operation *> intervalScratch(intervals.size(), nullptr);
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
      intervalScratch.push_back(nullptr);
    }
  // Scratch overlaps nothing live at its op: operands and results included.
  for (Operation &op : block)
    if (int64_t bytes = scratchBytes(&op)) {
      unsigned at = fp.position[&op];
      intervals.push_back({align(bytes), at, at, at});
      intervalValue.push_back(nullptr);
      intervalCall.push_back(nullptr);
      intervalScratch.push_back(&op);
    }
  fp.frameBytes = placeIntervals(intervals);

  for (auto [i, interval] : llvm::enumerate(intervals)) {
    if (Operation *call = intervalCall[i]) {
      fp.calleeFrame[call] = interval.offset;
      continue;
    }
    if (Operation *op = intervalScratch[i]) {
      fp.scratch[op] = {interval.offset, interval.bytes};
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
                                                StringRef entry) {
  ProgramPlan plan;
  plan.entry = module.lookupSymbol<func::FuncOp>(entry);
  if (!plan.entry || plan.entry.isExternal())
    return module.emitError("no step function '@")
           << entry << "' with a body in this module";
  FunctionType type = plan.entry.getFunctionType();
  auto lossType = type.getNumResults() == 1
                      ? dyn_cast<RankedTensorType>(type.getResult(0))
                      : RankedTensorType();
  if (!lossType || lossType.getRank() != 0 || !lossType.getElementType().isF32())
    return plan.entry.emitError("the step function must return one "
                                "tensor<f32> (the loss), found ")
           << type;

  // The parameters and state the entry uses: a pipeline rank's program
  // holds only its own stages' (the module holds every rank's).
  llvm::StringSet<> used;
  {
    SmallVector<func::FuncOp> work = {plan.entry};
    llvm::SmallPtrSet<Operation *, 16> seen;
    while (!work.empty()) {
      func::FuncOp f = work.pop_back_val();
      if (!seen.insert(f).second)
        continue;
      f.walk([&](Operation *op) {
        if (auto call = dyn_cast<func::CallOp>(op))
          if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
            work.push_back(callee);
        if (std::optional<SymbolTable::UseRange> uses =
                SymbolTable::getSymbolUses(op))
          for (const SymbolTable::SymbolUse &use : *uses)
            used.insert(use.getSymbolRef().getLeafReference().getValue());
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
  plan.lossOffset = offset;
  offset += align(getTensorBytes(lossType));
  plan.persistentBytes = offset;

  Planner planner(module, plan);
  if (failed(planner.planRecursively(plan.entry)))
    return failure();
  plan.arenaBytes = plan.persistentBytes + plan.get(plan.entry).frameBytes;
  return plan;
}

//===----------------------------------------------------------------------===//
// SPMD programs
//===----------------------------------------------------------------------===//

int64_t GridGroup::size() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

bool GridGroup::inGridOrder() const { return llvm::is_sorted(positions); }

std::string GridGroup::spec() const { return llvm::join(names, ","); }

shard::GridOp mlir::braid::getProgramGrid(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op)
                                  : op->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  auto grids = module.getOps<shard::GridOp>();
  return grids.empty() ? shard::GridOp() : *grids.begin();
}

FailureOr<SmallVector<std::string>>
mlir::braid::getGridAxisNames(shard::GridOp grid) {
  auto names = grid->getAttrOfType<ArrayAttr>("braid.axes");
  SmallVector<std::string> out;
  if (names && static_cast<int64_t>(names.size()) == grid.getRank())
    for (Attribute name : names)
      if (auto str = dyn_cast<StringAttr>(name); str && !str.empty())
        out.push_back(str.str());
  if (static_cast<int64_t>(out.size()) != grid.getRank())
    return grid.emitError("the runtime needs the grid's axes named: "
                          "braid.axes = [...] with ")
           << grid.getRank() << " non-empty strings";
  for (int64_t size : grid.getShape())
    if (ShapedType::isDynamic(size))
      return grid.emitError("the runtime needs a grid of static shape");
  return out;
}

/// The group of `positions` (grid axis indices) of `grid`.
static FailureOr<GridGroup>
groupOf(shard::GridOp grid, ArrayRef<int64_t> positions,
        function_ref<InFlightDiagnostic()> emitError) {
  auto fail = [&](const Twine &message) -> FailureOr<GridGroup> {
    if (emitError)
      emitError() << message;
    return failure();
  };
  auto names = grid->getAttrOfType<ArrayAttr>("braid.axes");
  if (!names || static_cast<int64_t>(names.size()) != grid.getRank())
    return fail("grid @" + grid.getSymName() +
                " does not name its axes (braid.axes)");
  if (positions.empty())
    return fail("names no grid axes");
  GridGroup group;
  for (int64_t p : positions) {
    if (p < 0 || p >= grid.getRank() ||
        llvm::is_contained(group.positions, static_cast<unsigned>(p)))
      return fail("grid axis " + Twine(p) + " is not a distinct axis of @" +
                  grid.getSymName());
    int64_t size = grid.getShape()[p];
    if (ShapedType::isDynamic(size))
      return fail("grid @" + grid.getSymName() + " has a dynamic axis");
    group.names.push_back(cast<StringAttr>(names[p]).str());
    group.sizes.push_back(size);
    group.positions.push_back(p);
  }
  return group;
}

FailureOr<GridGroup>
mlir::braid::getGridGroup(Operation *op, FlatSymbolRefAttr grid,
                          ArrayRef<int16_t> axes,
                          function_ref<InFlightDiagnostic()> emitError) {
  auto gridOp = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, grid);
  if (!gridOp) {
    if (emitError)
      emitError() << "no shard.grid " << grid;
    return failure();
  }
  return groupOf(gridOp, llvm::to_vector(llvm::map_range(
                             axes, [](int16_t a) { return int64_t(a); })),
                 emitError);
}

FailureOr<GridGroup>
mlir::braid::getGridGroup(Operation *op, ArrayAttr names,
                          function_ref<InFlightDiagnostic()> emitError) {
  shard::GridOp grid = getProgramGrid(op);
  if (!grid) {
    if (emitError)
      emitError() << "names grid axes but the module has no shard.grid";
    return failure();
  }
  auto gridNames = grid->getAttrOfType<ArrayAttr>("braid.axes");
  SmallVector<int64_t> positions;
  for (Attribute name : names) {
    auto it = gridNames ? llvm::find(gridNames, name) : nullptr;
    if (!gridNames || it == gridNames.end()) {
      if (emitError)
        emitError() << name << " is not an axis of grid @"
                    << grid.getSymName();
      return failure();
    }
    positions.push_back(it - gridNames.begin());
  }
  return groupOf(grid, positions, emitError);
}

/// Drops the unit dimensions of a transpose (they move nothing).
static Transpose squeeze(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> index(shape.size(), -1);
  Transpose out;
  for (auto [d, size] : llvm::enumerate(shape))
    if (size != 1) {
      index[d] = out.shape.size();
      out.shape.push_back(size);
    }
  for (int64_t p : perm)
    if (index[p] >= 0)
      out.perm.push_back(index[p]);
  return out;
}

std::optional<BlockRelayout>
mlir::braid::getBlockRelayout(ArrayRef<int64_t> shape, int64_t dim,
                              const GridGroup &group) {
  // The tensor as [outer, a_1 .. a_k, L, inner] (listed axes, major to
  // minor); the rank blocks as [g_1 .. g_k, outer, L, inner] (the same axes
  // in grid order).
  int64_t k = group.sizes.size();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (int64_t d = dim + 1, e = shape.size(); d < e; ++d)
    inner *= shape[d];
  SmallVector<int64_t> tensorShape = {outer};
  llvm::append_range(tensorShape, group.sizes);
  tensorShape.append({shape[dim] / group.size(), inner});

  SmallVector<int64_t> byGrid = llvm::to_vector(llvm::seq<int64_t>(0, k));
  llvm::stable_sort(byGrid, [&](int64_t a, int64_t b) {
    return group.positions[a] < group.positions[b];
  });
  SmallVector<int64_t> perm;
  for (int64_t listed : byGrid)
    perm.push_back(1 + listed);
  perm.append({0, k + 1, k + 2});

  BlockRelayout relayout;
  relayout.toBlocks = squeeze(tensorShape, perm);
  if (llvm::is_sorted(relayout.toBlocks.perm))
    return std::nullopt;
  SmallVector<int64_t> blockShape, inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm)) {
    blockShape.push_back(tensorShape[p]);
    inverse[p] = i;
  }
  relayout.fromBlocks = squeeze(blockShape, inverse);
  return relayout;
}

bool mlir::braid::isShardedCrossEntropy(Operation *op) {
  if (auto c = dyn_cast<CrossEntropyOp>(op))
    return c.getVocabAxes() || c.getVocabSize() || c.getDenominator();
  if (auto c = dyn_cast<CrossEntropyGradOp>(op))
    return c.getVocabAxes() || c.getVocabSize() || c.getDenominator();
  return false;
}

int64_t mlir::braid::getCrossEntropyStatsOffset(int64_t rows) {
  return align(4 * rows);
}

int64_t mlir::braid::getConvHaloBytes(Operation *op) {
  auto x = cast<ShapedType>(op->getOperand(0).getType());
  int64_t rows = shapeOf(op->getOperand(1))[1] - 1;
  int64_t bytes = getTensorBytes(x) / x.getShape()[1] * rows;
  return align(bytes);
}

bool mlir::braid::runsByKeyBlocks(Operation *op) {
  if (auto a = dyn_cast<AttentionOp>(op))
    return a.getRingAxes() || a.getSequenceZigzag();
  if (auto a = dyn_cast<AttentionGradOp>(op))
    return a.getRingAxes() || a.getSequenceZigzag();
  return false;
}

BlockAttentionScratch mlir::braid::getBlockAttentionScratch(Operation *op) {
  BlockAttentionScratch s;
  auto q = shapeOf(op->getOperand(0)), k = shapeOf(op->getOperand(1)),
       v = shapeOf(op->getOperand(2));
  bool grad = isa<AttentionGradOp>(op);
  bool ring = op->hasAttr("ring_axes");
  int64_t rows = q[0] * q[1] * q[2];
  int64_t kElems = k[0] * k[1] * k[2] * k[3], vElems = v[0] * v[1] * v[2] * v[3];
  int64_t elem = getTensorBytes(op->getOperand(1).getType()) / std::max<int64_t>(1, kElems);
  int64_t at = 0;
  auto take = [&](int64_t bytes) {
    int64_t offset = at;
    at += align(bytes);
    return offset;
  };
  s.qPos = take(8 * q[1]);
  s.kPos = take(8 * k[1]);
  s.out = take(4 * rows * v[3]);
  s.lse = take(4 * rows);
  s.blockOut = take(4 * rows * v[3]);
  s.blockLse = take(4 * rows);
  if (grad) {
    s.delta = take(4 * rows);
    s.dq = take(4 * rows * q[3]);
  }
  if (ring)
    for (int slot = 0; slot < 2; ++slot) {
      s.k[slot] = take(elem * kElems);
      s.v[slot] = take(elem * vElems);
    }
  if (grad)
    for (int slot = 0; slot < (ring ? 2 : 1); ++slot) {
      s.dk[slot] = take(4 * kElems);
      s.dv[slot] = take(4 * vElems);
    }
  s.bytes = at;
  return s;
}

int64_t mlir::braid::scratchBytes(Operation *op) {
  auto relayoutBytes = [&](auto collective, Value blocked, int64_t dim,
                           Value other = {}, int64_t otherDim = 0) {
    FailureOr<GridGroup> group = getGridGroup(
        op, collective.getGridAttr(), collective.getGridAxes());
    if (failed(group))
      return int64_t(0);
    bool needed = getBlockRelayout(shapeOf(blocked), dim, *group).has_value();
    if (other)
      needed |= getBlockRelayout(shapeOf(other), otherDim, *group).has_value();
    return needed ? getTensorBytes(blocked.getType()) : 0;
  };
  if (auto g = dyn_cast<shard::AllGatherOp>(op))
    return relayoutBytes(g, g.getResult(), g.getGatherAxis().getSExtValue());
  if (auto r = dyn_cast<shard::ReduceScatterOp>(op))
    return relayoutBytes(r, r.getInput(), r.getScatterAxis().getSExtValue());
  if (auto a = dyn_cast<shard::AllToAllOp>(op))
    return relayoutBytes(a, a.getInput(), a.getSplitAxis().getSExtValue(),
                         a.getResult(), a.getConcatAxis().getSExtValue());
  // Context-parallel Mamba mixer: the convolution's halo buffers (received
  // and sent; the gradient also the halo's cotangent and the next rank's),
  // the scan's f32 states (final state, decay, their gathers over the ranks,
  // the entering state; the gradient also its cotangent, gathered, and the
  // cotangents of final state and decay).
  if (isa<Conv1dOp, Conv1dGradOp>(op) && op->hasAttr("context_axes"))
    return (isa<Conv1dGradOp>(op) ? 4 : 2) * getConvHaloBytes(op);
  if (isa<SelectiveScanOp, SelectiveScanGradOp>(op) &&
      op->hasAttr("context_axes")) {
    FailureOr<GridGroup> group =
        getGridGroup(op, op->getAttrOfType<ArrayAttr>("context_axes"));
    if (failed(group))
      return 0;
    auto x = shapeOf(op->getOperand(0));
    int64_t count = x[0] * x[2] * shapeOf(op->getOperand(2))[1];
    int64_t ranks = group->size();
    int64_t slots = 3 + 2 * ranks;
    if (isa<SelectiveScanGradOp>(op))
      slots += 3 + ranks;
    return 4 * count * slots;
  }
  if (runsByKeyBlocks(op))
    return getBlockAttentionScratch(op).bytes;
  if (isShardedCrossEntropy(op)) {
    Value logits = op->getOperand(0);
    int64_t rows = cast<ShapedType>(logits.getType()).getNumElements() /
                   std::max<int64_t>(1, shapeOf(logits).back());
    return getCrossEntropyStatsOffset(rows) + 8 * rows;
  }
  return 0;
}
