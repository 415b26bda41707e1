//===- Partition.cpp - the --braid-partition pass (SPMD) ------------------===//
//
// Turns a model into the program one rank of a device grid runs (every
// entry point of the module: a training step, or the inference programs,
// propagated together so that a parameter or state has one layout):
//
// 1. Seeds. Weights get shardings from the user's `shard.shard`
//    annotations of parameter reads and, for the rest, from the plan
//    (`megatron`: column-parallel linears after norms and the LM head split
//    over tp, the embedding split by vocabulary over tp, expert weights over
//    ep and their FFN dimension over tp). The batch is split over dp and ep;
//    with sequence parallelism the sequence over tp.
// 2. Propagation (ShardingPropagation.cpp). Tensor dimensions that an op's
//    factor rule (ShardingRules) ties together, across calls and returns
//    too, form classes; a class takes the axes of its seeds. Two seeds of
//    one class that disagree are a conflict, reported at both. Axes are
//    unique within a tensor: where two classes claim one axis, weight
//    classes win over the sequence, the sequence over the batch.
// 3. Partitioning. Op by op, each factor is split over its class's axes
//    (none for factors the op needs whole); operands are resharded to that
//    (Sharding.cpp: all-reduce, reduce-scatter, all-to-all, all-gather,
//    all-slice), the op runs on local shapes, and results left partial by
//    split reductions are resolved where they are used. A row-parallel
//    linear's bias and a vocabulary-parallel embedding's positions are added
//    once, after the partial sums are reduced. Layer functions are
//    rewritten once for the shardings their first call passes.
// 4. ZeRO-3 stores each parameter split over dp on its first dimension
//    that dp divides; its reads gather it (the backward gathers it again).
//
// The result records the grid (`shard.grid @grid {braid.axes}`), each
// sharded parameter's and input's global shape and split (`braid.split`,
// `braid.global_shape`), and the ZeRO stage (`braid.zero`) for the
// optimizer.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Partitioner.h"
#include "dialects/braid/Transforms/Passes.h"

#include "braid/Support/Debug.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "llvm/ADT/StringExtras.h"

#define DEBUG_TYPE "braid-partition"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDPARTITIONPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::partition;

//===----------------------------------------------------------------------===//
// Debug output
//===----------------------------------------------------------------------===//

std::string mlir::braid::partition::describe(Value v) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto get = v.getDefiningOp<GetParamOp>()) {
    os << "@" << get.getName();
  } else if (auto arg = dyn_cast<BlockArgument>(v)) {
    os << "argument #" << arg.getArgNumber();
    if (auto f = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      os << " of @" << f.getSymName();
  } else {
    Operation *def = v.getDefiningOp();
    os << "'" << def->getName() << "'";
    if (def->getNumResults() > 1)
      os << " result #" << cast<OpResult>(v).getResultNumber();
    os << " at " << def->getLoc();
  }
  return text;
}

static StringRef kindName(FactorKind kind) {
  switch (kind) {
  case FactorKind::Parallel:
    return "parallel";
  case FactorKind::Reduction:
    return "reduction";
  case FactorKind::Vocab:
    return "vocabulary";
  case FactorKind::Sequence:
    return "sequence";
  case FactorKind::Whole:
    return "whole";
  }
  llvm_unreachable("a factor kind");
}

void Partitioner::logSplit(Operation *op, const ShardingRule &rule,
                           const OpSplit &split) {
  if (llvm::all_of(split.axes, [](const AxisList &a) { return a.empty(); }))
    return;
  llvm::dbgs() << "'" << op->getName() << "' at " << op->getLoc() << ":\n";
  for (auto [i, factor] : llvm::enumerate(rule.factors)) {
    if (split.axes[i].empty())
      continue;
    const TensorDim &td = factor.dims.front();
    llvm::dbgs() << "  factor #" << i << " (" << kindName(factor.kind)
                 << ", dimension " << td.dim << " of "
                 << describe(tensorAt(op, rule, td.tensor)) << ") over "
                 << grid.describe(split.axes[i]);
    if (const Seed *s = seedOf(tensorAt(op, rule, td.tensor), td.dim))
      llvm::dbgs() << " (its class seeded by " << s->source << ")";
    llvm::dbgs() << "\n";
  }
  if (!split.partial.empty())
    llvm::dbgs() << "  results partial over " << grid.describe(split.partial)
                 << ": a split reduction's terms are summed where they are "
                    "used\n";
}

//===----------------------------------------------------------------------===//
// Partitioning
//===----------------------------------------------------------------------===//

ValueSharding Partitioner::paramStorage(StringRef name) {
  return paramShardings.lookup(name);
}

/// Records where each result of `local` lies in its global tensor, so that
/// the emitted program dumps a split or partial activation as the global
/// tensor (the runtime sums a partial value's terms and assembles the
/// blocks, as it does parameters): `braid.result_layouts` holds per result
/// {braid.global_shape, braid.split} when it is split, with braid.partial
/// (the axes its terms are summed over) when it is partial, {} when it is
/// whole on every rank.
void mlir::braid::partition::recordLayouts(Operation *local,
                                           ArrayRef<ValueSharding> shardings,
                                           ArrayRef<RankedTensorType> globals,
                                           const Grid &grid) {
  MLIRContext *context = local->getContext();
  SmallVector<Attribute> layouts;
  bool any = false;
  for (auto [sharding, global] : llvm::zip_equal(shardings, globals)) {
    SmallVector<NamedAttribute> entries;
    if (global && !sharding.isReplicated()) {
      entries.emplace_back(StringAttr::get(context, kGlobalShapeAttrName),
                           DenseI64ArrayAttr::get(context, global.getShape()));
      entries.emplace_back(StringAttr::get(context, kSplitAttrName),
                           splitAttr(context, sharding, grid));
    }
    if (global && !sharding.partial.empty())
      entries.emplace_back(StringAttr::get(context, kPartialAttrName),
                           grid.nameAttr(context, sharding.partial));
    any |= !entries.empty();
    layouts.push_back(DictionaryAttr::get(context, entries));
  }
  if (any)
    local->setAttr(kResultLayoutsAttrName, ArrayAttr::get(context, layouts));
}

/// Debug output: the collectives that moved a value, from `moved` back to
/// `from` (each reads the previous as its operand #0).
static std::string describeCollectives(Value moved, Value from,
                                       const Grid &grid) {
  SmallVector<std::string> steps;
  for (Value v = moved; v != from && v.getDefiningOp();
       v = v.getDefiningOp()->getOperand(0)) {
    Operation *op = v.getDefiningOp();
    std::string step = op->getName().getStringRef().str();
    if (auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes"))
      step += " over " + grid.describe(axes.asArrayRef());
    steps.push_back(step);
  }
  return llvm::join(llvm::reverse(steps), ", then ");
}

FailureOr<Value> Partitioner::use(OpBuilder &b, Operation *user, Value global,
                                  const ValueSharding &to) {
  Location loc = user->getLoc();
  auto it = locals.find(global);
  if (it == locals.end())
    return emitError(loc, "internal: value used before it was partitioned");
  if (it->second.sharding == to)
    return it->second.value;
  // One reshard per value and target: every later use (in the same block,
  // after it) shares it, and the backward pass then sums the uses'
  // cotangents before the one transposed collective.
  for (auto &[sharding, value] : resharded[global])
    if (sharding == to)
      return value;
  FailureOr<Value> moved = reshard(b, plain(loc), it->second.value,
                                   globalType(global), it->second.sharding,
                                   to, grid);
  if (succeeded(moved)) {
    LLVM_DEBUG(llvm::dbgs()
               << "reshard " << describe(global) << " for '"
               << user->getName() << "' at " << loc << ": it is "
               << it->second.sharding.describe(grid) << ", the op needs "
               << to.describe(grid) << ": "
               << describeCollectives(*moved, it->second.value, grid)
               << "\n");
    resharded[global].push_back({to, *moved});
    if (auto result = dyn_cast<OpResult>(*moved))
      if (result.getOwner()->getNumResults() == 1)
        if (recordingLayouts)
          recordLayouts(result.getOwner(), {to}, {globalType(global)}, grid);
  }
  return moved;
}

FailureOr<SmallVector<AxisList>>
Partitioner::factorAxes(Operation *op, const ShardingRule &rule) {
  SmallVector<AxisList> axes(rule.factors.size());
  // Weight factors first, then reductions, then the rest: an axis goes to
  // the first factor claiming it.
  SmallVector<std::tuple<int, int, unsigned>> order;
  for (auto [i, factor] : llvm::enumerate(rule.factors)) {
    // The op needs these whole (a sequence, unless context parallelism
    // splits it below).
    if (factor.kind == FactorKind::Whole ||
        factor.kind == FactorKind::Sequence || factor.dims.empty())
      continue;
    const TensorDim &td = factor.dims.front();
    const Seed *s = seedOf(tensorAt(op, rule, td.tensor), td.dim);
    if (!s)
      continue;
    order.push_back({-s->priority,
                     factor.kind == FactorKind::Parallel ? 1 : 0,
                     static_cast<unsigned>(i)});
  }
  llvm::sort(order);
  AxisList used;
  for (auto [p, k, i] : order) {
    const TensorDim &td = rule.factors[i].dims.front();
    for (int16_t axis : seedOf(tensorAt(op, rule, td.tensor), td.dim)->axes)
      if (!llvm::is_contained(used, axis)) {
        axes[i].push_back(axis);
        used.push_back(axis);
      } else {
        LLVM_DEBUG(llvm::dbgs()
                   << "'" << op->getName() << "' at " << op->getLoc()
                   << ": factor #" << i << " is not split over "
                   << grid.describe(axis)
                   << ": another factor took it first (a weight's before "
                      "the sequence's before the batch's, reductions "
                      "before parallel loops)\n");
      }
  }
  return axes;
}

LogicalResult Partitioner::partitionCall(OpBuilder &b, func::CallOp call) {
  auto callee = calleeOf(call);
  if (!argShardingsOf.count(callee)) {
    SmallVector<ValueSharding> args;
    // Arguments come as the first call passes them (parameters as stored),
    // partial sums resolved first.
    for (Value operand : call.getOperands()) {
      ValueSharding s = locals.lookup(operand).sharding;
      if (!s.partial.empty()) {
        FailureOr<ValueSharding> c = canonical(operand);
        if (failed(c))
          return failure();
        s = *c;
      }
      args.push_back(s);
    }
    OpBuilder::InsertionGuard guard(b);
    if (failed(partitionFunction(callee, args)))
      return failure();
  }
  SmallVector<Value> operands;
  for (auto [operand, sharding] :
       llvm::zip(call.getOperands(), argShardingsOf[callee])) {
    FailureOr<Value> v = use(b, call, operand, sharding);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  auto local = func::CallOp::create(b, call.getLoc(), callee, operands);
  // The model's own annotations of the call (a layer's pipeline stage).
  local->setDiscardableAttrs(call->getDiscardableAttrDictionary());
  for (auto [result, newResult, sharding] :
       llvm::zip(call.getResults(), local.getResults(),
                 resultShardingsOf[callee]))
    locals[result] = {newResult, sharding};
  return success();
}

/// MoE capacity is per group of tokens (braid.dispatch): a shard of a
/// dispatch's or combine's `global` tokens (its local indices: `local`) must
/// hold whole groups, or N ranks would drop other tokens than one rank does.
static LogicalResult checkCapacityGroups(Operation *op, int64_t global,
                                         Value local) {
  int64_t localTokens = cast<RankedTensorType>(local.getType()).getDimSize(0);
  auto groupSize = op->getAttrOfType<IntegerAttr>("group_size");
  if (localTokens != global && !groupSize)
    return op->emitError("splitting ")
           << global << " tokens into shards of " << localTokens
           << " would cut its one capacity group (no group_size): N ranks "
              "would drop other tokens than one rank";
  if (groupSize && localTokens % groupSize.getInt() != 0)
    return op->emitError("shards of ")
           << localTokens << " tokens cut its capacity groups of "
           << groupSize.getInt() << " tokens";
  return success();
}

ValueSharding mlir::braid::partition::shardingOf(const ShardingRule &rule,
                                                ArrayRef<AxisList> axes,
                                                unsigned t, int64_t rank) {
  ValueSharding s = ValueSharding::replicated(rank);
  for (int64_t d = 0; d < rank; ++d) {
    int f = rule.factorOf(t, d);
    if (f >= 0)
      s.split[d] = axes[f];
  }
  return s;
}

LogicalResult Partitioner::partitionOp(OpBuilder &b, Operation *op) {
  if (auto call = dyn_cast<func::CallOp>(op))
    return partitionCall(b, call);
  if (auto get = dyn_cast<GetParamOp>(op)) {
    ValueSharding storage = paramStorage(get.getName());
    get.getResult().setType(localType(get.getType(), storage, grid));
    locals[get.getResult()] = {get.getResult(), storage};
    return success();
  }
  FailureOr<ShardingRule> rule = getShardingRule(op);
  if (failed(rule))
    return failure();
  FailureOr<OpSplit> split = splitOf(op, *rule);
  if (failed(split))
    return failure();
  LLVM_DEBUG(logSplit(op, *rule, *split));

  // Operands in the op's compute sharding.
  IRMapping mapping;
  if (failed(mapOperands(b, op, *rule, *split, mapping)))
    return failure();
  // Results: split like their factors, partial over split reductions.
  SmallVector<ValueSharding> natural;
  for (OpResult result : op->getResults()) {
    ValueSharding s =
        shardingOf(*rule, split->axes,
                   op->getNumOperands() + result.getResultNumber(),
                   globalType(result).getRank());
    s.partial = split->partial;
    natural.push_back(s);
  }

  // Ops that change form when split.
  if (auto linear = dyn_cast<LinearOp>(op);
      linear && linear.getBias() && !split->partial.empty())
    return partitionRowParallelLinear(b, linear, mapping, natural);
  if (auto e = dyn_cast<EmbeddingOp>(op); e && !split->partial.empty())
    return partitionVocabEmbedding(b, e, mapping, *split, natural);
  if (isa<DispatchOp, CombineOp>(op)) {
    Value indices = op->getOperand(isa<DispatchOp>(op) ? 1 : 2);
    if (failed(checkCapacityGroups(op, globalType(indices).getDimSize(0),
                                   mapping.lookup(indices))))
      return failure();
  }
  return cloneLocal(b, op, *rule, *split, mapping, natural);
}

LogicalResult
Partitioner::partitionFunction(func::FuncOp func,
                               ArrayRef<ValueSharding> argShardings) {
  Block &body = func.getBody().front();
  argShardingsOf[func] = SmallVector<ValueSharding>(argShardings);
  MLIRContext *context = func.getContext();
  for (auto [arg, sharding] : llvm::zip(body.getArguments(), argShardings)) {
    auto global = globalType(arg);
    locals[arg] = {arg, sharding};
    arg.setType(localType(global, sharding, grid));
    if (!sharding.isReplicated()) {
      func.setArgAttr(arg.getArgNumber(), kSplitAttrName,
                      splitAttr(context, sharding, grid));
      func.setArgAttr(arg.getArgNumber(), kGlobalShapeAttrName,
                      DenseI64ArrayAttr::get(context, global.getShape()));
    }
  }
  // Types of block arguments now are local; `locals` maps the global values
  // (the same arguments) to themselves with their shardings. Keep the
  // global types for resharding.
  llvm::DenseMap<Value, RankedTensorType> argGlobal;

  OpBuilder b(context);
  SmallVector<Operation *> old;
  for (Operation &op : body.without_terminator())
    old.push_back(&op);
  for (Operation *op : old) {
    b.setInsertionPoint(op);
    if (failed(partitionOp(b, op)))
      return failure();
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  SmallVector<ValueSharding> resultShardings;
  SmallVector<Value> results;
  bool isEntry = llvm::is_contained(entries, func);
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    RankedTensorType global = globalType(operand);
    ValueSharding want = ValueSharding::replicated(global.getRank());
    if (!isEntry || (returnsSplitLogits(func) && global.getRank() > 0)) {
      FailureOr<ValueSharding> c = canonical(operand);
      if (failed(c))
        return failure();
      // An entry's logits keep only their vocabulary's split (the last
      // dimension): every rank of the vocabulary group holds every row.
      if (isEntry)
        want.split.back() = c->split.back();
      else
        want = *c;
    }
    FailureOr<Value> v = use(b, ret, operand, want);
    if (failed(v))
      return failure();
    if (isEntry && !want.isReplicated()) {
      func.setResultAttr(i, kSplitAttrName, splitAttr(context, want, grid));
      func.setResultAttr(i, kGlobalShapeAttrName,
                         DenseI64ArrayAttr::get(context, global.getShape()));
      LLVM_DEBUG(llvm::dbgs() << "result #" << i << " of @" << func.getSymName()
                              << ": logits returned " << want.describe(grid)
                              << " (gather-logits=false)\n");
    }
    results.push_back(*v);
    resultShardings.push_back(want);
  }
  resultShardingsOf[func] = resultShardings;
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  for (Operation *op : llvm::reverse(old))
    if (!isa<GetParamOp>(op)) {
      op->dropAllUses();
      op->erase();
    }
  func.setType(FunctionType::get(context, body.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  return success();
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

bool Partitioner::returnsSplitLogits(func::FuncOp entry) const {
  std::optional<EntryKind> kind = getEntryKind(entry);
  return !gatheringLogits && (kind == EntryKind::Prefill || kind == EntryKind::Decode ||
                              kind == EntryKind::Forward);
}

LogicalResult Partitioner::run() {
  if (zero < 0 || zero > 3)
    return emitError(module.getLoc(), "--braid-partition: zero must be 0, 1, 2 or 3, "
                            "found ")
           << zero;
  if (sequenceParallel && !grid.find("tp"))
    return emitError(module.getLoc(), "--braid-partition: sequence parallelism needs "
                            "a tp axis");
  if (failed(collectFunctions()) || failed(checkInferenceGrid()) ||
      failed(chooseSequenceLayout()))
    return failure();
  if (failed(readAnnotations()))
    return failure();
  unite();
  // Global types, before any retyping.
  for (ParamOp param : module.getOps<ParamOp>())
    paramGlobal[param.getSymName()] = param.getTensorType();
  for (StateOp state : module.getOps<StateOp>())
    paramGlobal[state.getSymName()] = state.getTensorType();
  // Annotations first: a plan's seeds then only fill the classes they left.
  if (failed(seedAnnotations()) || failed(seedPlan()) ||
      failed(seedCacheSequence()) || failed(seedBatchAndSequence()))
    return failure();
  if (failed(chooseParamShardings()))
    return failure();
  for (func::FuncOp entry : entries) {
    FailureOr<SmallVector<ValueSharding>> inputs = inputShardings(entry);
    if (failed(inputs) || failed(partitionFunction(entry, *inputs)))
      return failure();
  }
  recordGlobalLayouts();
  return success();
}

LogicalResult Partitioner::chooseParamShardings() {
  // From their reads' classes.
  for (func::FuncOp f : functions) {
    WalkResult walk = f.walk([&](GetParamOp get) {
      if (paramShardings.count(get.getName()))
        return WalkResult::advance();
      FailureOr<ValueSharding> s = canonical(get.getResult());
      if (failed(s))
        return WalkResult::interrupt();
      paramShardings[get.getName()] = *s;
      LLVM_DEBUG({
        if (!s->isReplicated()) {
          llvm::dbgs() << "parameter @" << get.getName() << ": stored "
                       << s->describe(grid) << "\n";
          for (auto [d, axes] : llvm::enumerate(s->split))
            if (!axes.empty())
              llvm::dbgs() << "  dimension " << d << " over "
                           << grid.describe(axes) << ": its class seeded by "
                           << seedOf(get.getResult(), d)->source << "\n";
        }
      });
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  // ZeRO-3 adds dp to storage, on the first dimension it divides.
  std::optional<int16_t> dp = grid.find("dp");
  if (zero != 3 || !dp)
    return success();
  for (auto &entry : paramShardings) {
    ValueSharding &s = entry.second;
    if (llvm::is_contained(s.usedAxes(), *dp))
      continue;
    RankedTensorType local = localType(paramGlobal[entry.first()], s, grid);
    bool stored = false;
    for (int64_t d = 0; d < local.getRank() && !stored; ++d) {
      bool padded = paramGlobal[entry.first()].getDimSize(d) % grid.size(s.split[d]) != 0;
      if (!padded && local.getDimSize(d) % grid.sizes[*dp] == 0) {
        s.split[d].push_back(*dp);
        stored = true;
        LLVM_DEBUG(llvm::dbgs()
                   << "ZeRO-3: parameter @" << entry.first()
                   << " stored split over dp on dimension " << d
                   << ", the first whose local size (" << local.getDimSize(d)
                   << ") dp=" << grid.sizes[*dp] << " divides\n");
      }
    }
    LLVM_DEBUG(if (!stored) llvm::dbgs()
               << "ZeRO-3: parameter @" << entry.first()
               << " stays whole over dp: dp=" << grid.sizes[*dp]
               << " divides no unpadded dimension of its local " << local
               << "\n");
  }
  return success();
}

FailureOr<SmallVector<ValueSharding>>
Partitioner::inputShardings(func::FuncOp step) {
  // Inputs: their seeds (the batch split), nothing else.
  SmallVector<ValueSharding> inputs;
  for (BlockArgument arg : step.getArguments()) {
    auto type = globalType(arg);
    ValueSharding s = ValueSharding::replicated(type.getRank());
    if (type.getRank() > 0)
      if (const Seed *seed = seedOf(arg, 0); seed && seed->priority == 0) {
        s.split[0] = seed->axes;
        if (type.getDimSize(0) % grid.size(seed->axes) != 0) {
          // After --braid-microbatch the step's batch is one micro-batch.
          auto microbatches = step->getAttrOfType<IntegerAttr>(kMicrobatchesAttrName);
          if (microbatches && microbatches.getInt() > 1)
            return step.emitError("the micro-batch (")
                   << type.getDimSize(0) << " = the batch "
                   << type.getDimSize(0) * microbatches.getInt() << " / "
                   << microbatches.getInt() << " micro-batches) of input #"
                   << arg.getArgNumber() << " is not a multiple of "
                   << grid.describe(seed->axes) << " (" << grid.size(seed->axes)
                   << " ranks): use fewer micro-batches or a batch of a "
                      "multiple of "
                   << microbatches.getInt() * grid.size(seed->axes);
          return step.emitError("the batch (")
                 << type.getDimSize(0) << ") of input #" << arg.getArgNumber()
                 << " is not a multiple of " << grid.describe(seed->axes)
                 << " (" << grid.size(seed->axes) << " ranks)";
        }
      }
    // Context parallelism: each rank reads its chunk of the sequence (two
    // chunks under zigzag balancing).
    if (auto cp = grid.find("cp");
        cp && type.getRank() >= 2 && splitsSequence(step)) {
      int64_t chunks = zigzag ? 2 * grid.sizes[*cp] : grid.sizes[*cp];
      if (type.getDimSize(1) % chunks != 0)
        return step.emitError("the sequence (")
               << type.getDimSize(1) << ") of input #" << arg.getArgNumber()
               << " is not a multiple of "
               << (zigzag ? "2 x cp=" : "cp=") << grid.sizes[*cp]
               << (zigzag ? " (zigzag balancing cuts it into 2 x cp chunks; "
                            "pad it to a multiple or use cp-layout=contiguous)"
                          : " (pad it to a multiple)");
      s.split[1] = {*cp};
    }
    LLVM_DEBUG(llvm::dbgs() << "input #" << arg.getArgNumber() << " of @"
                            << step.getSymName() << ": " << s.describe(grid)
                            << "\n");
    inputs.push_back(s);
  }
  return inputs;
}

void Partitioner::recordGlobalLayouts() {
  // Parameters and states (an inference program's cache): local types and
  // where they lie in the global tensor.
  MLIRContext *context = module.getContext();
  auto record = [&](auto op) {
    ValueSharding s = paramShardings.lookup(op.getSymName());
    if (s.split.empty() || s.isReplicated())
      return;
    RankedTensorType global = op.getTensorType();
    op.setTypeAttr(TypeAttr::get(localType(global, s, grid)));
    op->setAttr(kSplitAttrName, splitAttr(context, s, grid));
    op->setAttr(kGlobalShapeAttrName,
                DenseI64ArrayAttr::get(context, global.getShape()));
  };
  for (ParamOp param : module.getOps<ParamOp>())
    record(param);
  for (StateOp state : module.getOps<StateOp>())
    record(state);
  OpBuilder b(context);
  b.setInsertionPointToStart(module.getBody());
  grid.declare(b, module.getLoc());
  if (zero > 0)
    module->setAttr(kZeroAttrName, b.getI64IntegerAttr(zero));
  if (zigzag)
    module->setAttr(kZigzagAxisAttrName, b.getStringAttr("cp"));
}

LogicalResult Partitioner::chooseSequenceLayout() {
  std::optional<int16_t> cp = grid.find("cp");
  if (!cp || grid.sizes[*cp] == 1 || cpLayout == CpLayout::Contiguous)
    return success();
  // Zigzag order is invisible to every op but those that read token
  // positions: attention is told them; a learned position table and
  // Mamba's convolution and scan (a chain over the sequence's order) assume
  // contiguous chunks.
  Operation *orderDependent = nullptr;
  bool causal = false;
  for (func::FuncOp f : functions)
    f.walk([&](Operation *op) {
      if (auto a = dyn_cast<AttentionOp>(op))
        causal |= a.getCausal();
      auto e = dyn_cast<EmbeddingOp>(op);
      // The inference programs' cache is split in contiguous chunks.
      if ((e && e.getPositionTable()) ||
          isa<Conv1dOp, SelectiveScanOp, CacheWriteOp>(op))
        if (!orderDependent)
          orderDependent = op;
    });
  if (cpLayout == CpLayout::Auto) {
    // Zigzag also needs the sequence to cut into 2 x cp chunks; auto falls
    // back to contiguous chunks where it does not.
    bool cuts = llvm::all_of(entries, [&](func::FuncOp entry) {
      return llvm::all_of(entry.getArgumentTypes(), [&](Type t) {
        auto type = dyn_cast<RankedTensorType>(t);
        return !type || type.getRank() < 2 ||
               type.getDimSize(1) % (2 * grid.sizes[*cp]) == 0;
      });
    });
    if (causal && !orderDependent && cuts)
      zigzag = grid.sizes[*cp];
    LLVM_DEBUG({
      llvm::dbgs() << "cp-layout=auto: ";
      if (zigzag)
        llvm::dbgs() << "zigzag (causal attention, no op depends on the "
                        "chunks' order, the sequence cuts into 2 x cp="
                     << grid.sizes[*cp] << " chunks)\n";
      else if (!causal)
        llvm::dbgs() << "contiguous chunks: no causal attention to balance\n";
      else if (orderDependent)
        llvm::dbgs() << "contiguous chunks: '" << orderDependent->getName()
                     << "' at " << orderDependent->getLoc()
                     << " depends on the chunks' order\n";
      else
        llvm::dbgs() << "contiguous chunks: an input's sequence does not cut "
                        "into 2 x cp="
                     << grid.sizes[*cp] << " chunks\n";
    });
    return success();
  }
  if (orderDependent)
    return orderDependent->emitError("cp-layout=zigzag: '")
           << orderDependent->getName()
           << "' depends on the order of the sequence's chunks (only "
              "attention is told zigzag positions); use cp-layout=contiguous";
  zigzag = grid.sizes[*cp];
  return success();
}

namespace {
struct BraidPartitionPass
    : braid::impl::BraidPartitionPassBase<BraidPartitionPass> {
  using Base::Base;

  /// On one rank, the unpartitioned program: a user's annotations (which
  /// say how a grid of several ranks would split it, as in --verify's
  /// reference run of an annotated model) go, with the user's grid.
  static void dropAnnotations(ModuleOp module) {
    module.walk([](shard::ShardOp op) {
      op.getResult().replaceAllUsesWith(op.getSrc());
      op.erase();
    });
    module.walk([](shard::ShardingOp op) {
      if (op->use_empty())
        op.erase();
    });
    for (auto grid : llvm::make_early_inc_range(module.getOps<shard::GridOp>()))
      if (SymbolTable::symbolKnownUseEmpty(grid, module))
        grid.erase();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The options' ranges hold on one rank too (a bad value is a user's
    // mistake whichever grid it comes with). Option errors are located at
    // the module without it attached: they say nothing about its IR, which
    // braid-opt would otherwise print whole.
    if (zero < 0 || zero > 3) {
      emitError(module.getLoc(), "--braid-partition: zero must be 0, 1, 2 or 3, found ")
          << static_cast<int64_t>(zero);
      return signalPassFailure();
    }
    if (gridOption.empty()) {
      if (zero != 0 || sequenceParallel)
        emitWarning(module.getLoc(), "--braid-partition: no grid; zero and "
                           "sequence-parallel have no effect");
      dropAnnotations(module);
      return;
    }
    FailureOr<std::optional<Grid>> existing = Grid::of(module);
    if (failed(existing))
      return signalPassFailure();
    if (*existing) {
      module.emitError("--braid-partition: the module is already partitioned");
      return signalPassFailure();
    }
    std::string error;
    FailureOr<Grid> grid = Grid::parse(gridOption, error);
    if (failed(grid)) {
      emitError(module.getLoc(), "--braid-partition: ") << error;
      return signalPassFailure();
    }
    // A grid of one rank partitions nothing.
    if (grid->numRanks() == 1)
      return dropAnnotations(module);
    // The user's own grid (for annotations) must be this one.
    auto grids = llvm::to_vector(module.getOps<shard::GridOp>());
    if (grids.size() > 1) {
      grids[1].emitError("a second grid: Braid partitions a program over one "
                         "grid (@")
          << grids[0].getSymName() << ")";
      return signalPassFailure();
    }
    for (auto existing : grids) {
      if (existing.getShape() != ArrayRef<int64_t>(grid->sizes)) {
        existing.emitError("grid @")
            << existing.getSymName() << " does not have the shape of --grid "
            << gridOption;
        return signalPassFailure();
      }
      grid->symbol = existing.getSymName().str();
      existing.erase();
    }
    Partitioner partitioner(module, *grid, plan, zero, sequenceParallel,
                            cpAttention, cpLayout);
    partitioner.recordingLayouts = recordLayouts;
    partitioner.gatheringLogits = gatherLogits;
    if (failed(partitioner.run()))
      signalPassFailure();
  }
};
} // namespace
