//===- ShardingPropagation.cpp - dimension classes and their seeds --------===//
//
// The propagation half of --braid-partition (Partitioner.h): tensor
// dimensions tied by the ops' factor rules, calls and returns form classes;
// a class takes the axes of its seeds (annotations, the plan, the sequence,
// the batch); disagreeing seeds are reported at both; a value's canonical
// sharding is its classes' axes, each axis used once per tensor by priority.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Partitioner.h"

#include "braid/Support/Debug.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "braid-partition"

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::partition;

//===----------------------------------------------------------------------===//
// Propagation
//===----------------------------------------------------------------------===//

LogicalResult Partitioner::collectFunctions() {
  // Every program of the module (a training step, or the inference
  // programs, which share the parameters and the cache): one set of classes
  // over all of them gives a persistent tensor one sharding in every program
  // that reads it.
  entries = getEntries(module);
  if (entries.empty()) {
    FailureOr<func::FuncOp> step =
        getUniqueEntry(module, EntryKind::TrainStep, "--braid-partition");
    if (failed(step))
      return failure();
    entries.push_back(*step);
  }
  llvm::SetVector<func::FuncOp> seen;
  // Each function with the entry whose program first reaches it.
  SmallVector<std::pair<func::FuncOp, func::FuncOp>> work;
  for (func::FuncOp entry : llvm::reverse(entries))
    work.push_back({entry, entry});
  while (!work.empty()) {
    auto [f, entry] = work.pop_back_val();
    if (!seen.insert(f))
      continue;
    programOf[f] = entry;
    WalkResult walk = f.walk([&, entry = entry](func::CallOp call) {
      auto callee = calleeOf(call);
      if (!callee || callee.isExternal()) {
        call.emitError("cannot partition a call to '")
            << call.getCallee() << "': no body";
        return WalkResult::interrupt();
      }
      work.push_back({callee, entry});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (!llvm::hasSingleElement(f.getBody()))
      return f.emitError("cannot partition a function with several blocks");
  }
  functions.assign(seen.begin(), seen.end());
  return success();
}

unsigned Partitioner::node(Value v, unsigned d) {
  auto [it, inserted] = nodes.try_emplace({v, d}, nodes.size());
  if (inserted)
    classes.insert(it->second);
  return it->second;
}

void Partitioner::unite() {
  auto join = [&](Value a, unsigned da, Value b, unsigned db) {
    classes.unionSets(node(a, da), node(b, db));
  };
  llvm::StringMap<Value> firstRead;
  for (func::FuncOp f : functions) {
    for (BlockArgument arg : f.getArguments())
      if (auto type = tensorTypeOf(arg)) {
        globalTypes[arg] = type;
        for (unsigned d = 0; d < type.getRank(); ++d)
          node(arg, d);
      }
    f.walk([&](Operation *op) {
      if (op == f.getOperation())
        return;
      for (Value result : op->getResults())
        if (auto type = tensorTypeOf(result)) {
          globalTypes[result] = type;
          for (unsigned d = 0; d < type.getRank(); ++d)
            node(result, d);
        }
      if (auto get = dyn_cast<GetParamOp>(op)) {
        auto [it, inserted] = firstRead.try_emplace(get.getName(), get.getResult());
        if (!inserted)
          for (unsigned d = 0; d < get.getType().getRank(); ++d)
            join(it->second, d, get.getResult(), d);
        return;
      }
      if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = calleeOf(call);
        for (auto [operand, arg] : llvm::zip(call.getOperands(), callee.getArguments()))
          if (auto type = tensorTypeOf(operand))
            for (unsigned d = 0; d < type.getRank(); ++d)
              join(operand, d, arg, d);
        auto ret = cast<func::ReturnOp>(callee.getBody().front().getTerminator());
        for (auto [result, returned] : llvm::zip(call.getResults(), ret.getOperands()))
          if (auto type = tensorTypeOf(result))
            for (unsigned d = 0; d < type.getRank(); ++d)
              join(result, d, returned, d);
        return;
      }
      if (isa<func::ReturnOp>(op))
        return;
      FailureOr<ShardingRule> rule = getShardingRule(op, /*report=*/false);
      if (failed(rule))
        return; // reported when partitioning
      auto tensorAt = [&](unsigned t) {
        return t < rule->numOperands ? op->getOperand(t)
                                     : op->getResult(t - rule->numOperands);
      };
      for (const Factor &factor : rule->factors) {
        if (factor.kind == FactorKind::Whole || factor.dims.empty())
          continue;
        for (const TensorDim &td : factor.dims)
          join(tensorAt(factor.dims.front().tensor), factor.dims.front().dim,
               tensorAt(td.tensor), td.dim);
        // Vocabularies may be padded to a multiple of the split.
        if ((isa<EmbeddingOp>(op) && factor.kind == FactorKind::Reduction) ||
            factor.kind == FactorKind::Vocab)
          paddable.insert(node(tensorAt(factor.dims.front().tensor),
                               factor.dims.front().dim));
      }
    });
  }
  // Leaders change as classes merge: re-key the paddable set.
  llvm::DenseSet<unsigned> leaders;
  for (unsigned n : paddable)
    leaders.insert(classes.getLeaderValue(n));
  paddable = std::move(leaders);
  // A vocabulary that a program returns (an inference program's logits)
  // is gathered at the return, and a padded split cannot be gathered: such
  // a class is split only where its size divides. Logits returned split
  // (gather-logits=false) may be padded.
  for (func::FuncOp entry : entries)
    if (!returnsSplitLogits(entry))
      for (Value v : entry.getBody().front().getTerminator()->getOperands())
        if (auto type = tensorTypeOf(v))
          for (unsigned d = 0; d < type.getRank(); ++d)
            if (paddable.erase(classes.getLeaderValue(node(v, d))))
              LLVM_DEBUG(llvm::dbgs()
                         << "dimension " << d << " of the result of @"
                         << entry.getSymName()
                         << " is a vocabulary: it is not padded\n");
}

bool Partitioner::classDivides(Value v, unsigned d, int64_t n) {
  unsigned leader = classes.getLeaderValue(node(v, d));
  if (paddable.contains(leader))
    return true;
  for (auto &[key, id] : nodes)
    if (classes.getLeaderValue(id) == leader &&
        globalType(key.first).getDimSize(key.second) % n != 0)
      return false;
  return true;
}

const Seed *Partitioner::seedOf(Value v, unsigned d) {
  auto it = nodes.find({v, d});
  if (it == nodes.end())
    return nullptr;
  auto found = seeds.find(classes.getLeaderValue(it->second));
  return found == seeds.end() ? nullptr : &found->second;
}

bool Partitioner::isPaddable(Value v, unsigned d) {
  auto it = nodes.find({v, d});
  return it != nodes.end() &&
         paddable.contains(classes.getLeaderValue(it->second));
}

LogicalResult Partitioner::seed(Value v, unsigned d, AxisList axes,
                                int priority, Location loc,
                                const std::string &source) {
  unsigned leader = classes.getLeaderValue(node(v, d));
  auto [it, inserted] =
      seeds.try_emplace(leader, Seed{axes, priority, loc, source});
  if (inserted || it->second.axes == axes) {
    it->second.priority = std::max(it->second.priority, priority);
    LLVM_DEBUG({
      auto members = classes.members(node(v, d));
      llvm::dbgs() << "seed: dimension " << d << " of " << describe(v)
                   << " (a class of "
                   << std::distance(members.begin(), members.end())
                   << " tied dimensions) ";
      if (inserted)
        llvm::dbgs() << (axes.empty() ? std::string("kept whole")
                                      : "split over " + grid.describe(axes))
                     << ": " << source << "\n";
      else
        llvm::dbgs() << "already has these axes (" << it->second.source
                     << "); " << source << " agrees\n";
    });
    return success();
  }
  auto how = [&](ArrayRef<int16_t> a) {
    return a.empty() ? std::string("keeps it whole")
                     : "splits it over " + grid.describe(a);
  };
  InFlightDiagnostic diag = emitError(loc, "conflicting shardings of dimension ")
                            << d << ": " << source << " " << how(axes);
  diag.attachNote(it->second.loc)
      << "but " << it->second.source << " " << how(it->second.axes)
      << " (the two dimensions are tied by the ops between them)";
  return failure();
}

LogicalResult Partitioner::checkAnnotationsAgree() {
  // A parameter or state has one layout, shared by every program of the
  // module (they run on one set of persistent tensors): two programs'
  // annotations of it must agree. (Within one program, disagreeing
  // annotations are a conflict of their classes, reported by seed.)
  llvm::DenseMap<std::pair<StringAttr, unsigned>, const Annotation *> first;
  for (const Annotation &a : annotations) {
    auto get = a.value.getDefiningOp<GetParamOp>();
    if (!get)
      continue;
    auto [it, inserted] = first.try_emplace(
        {get.getNameAttr().getAttr(), a.dim}, &a);
    const Annotation &other = *it->second;
    auto programOfRead = [&](Value read) {
      return programOf.lookup(
          read.getDefiningOp()->getParentOfType<func::FuncOp>());
    };
    func::FuncOp here = programOfRead(a.value);
    func::FuncOp there = programOfRead(other.value);
    if (inserted || a.axes == other.axes || here == there)
      continue;
    auto how = [&](ArrayRef<int16_t> axes) {
      return axes.empty() ? std::string("keeps it whole")
                          : "splits it over " + grid.describe(axes);
    };
    InFlightDiagnostic diag =
        emitError(a.loc, "@")
        << get.getName() << " is annotated differently in @"
        << here.getSymName() << " and @" << there.getSymName()
        << ": this annotation " << how(a.axes) << " on dimension " << a.dim
        << ", but a parameter or state has one layout, shared by every "
           "program of the module";
    diag.attachNote(other.loc)
        << "the annotation in @" << there.getSymName() << " "
        << how(other.axes);
    return failure();
  }
  return success();
}

LogicalResult Partitioner::seedAnnotations() {
  if (failed(checkAnnotationsAgree()))
    return failure();
  for (const Annotation &a : annotations)
    if (failed(seed(a.value, a.dim, a.axes, 2, a.loc, a.source)))
      return failure();
  return success();
}

LogicalResult Partitioner::readAnnotations() {
  // `%w = shard.shard %read to %sharding` on a parameter read: the user's
  // sharding of that parameter. The annotation is consumed.
  SmallVector<shard::ShardOp> ops;
  for (func::FuncOp f : functions)
    f.walk([&](shard::ShardOp op) { ops.push_back(op); });
  for (shard::ShardOp op : ops) {
    auto sharding = op.getSharding().getDefiningOp<shard::ShardingOp>();
    if (!sharding)
      return op.emitError("the sharding of this annotation must come from a "
                          "shard.sharding op");
    if (sharding.getGrid() != grid.symbol)
      return op.emitError("annotation on grid @")
             << sharding.getGrid() << ", but the program's grid is @"
             << grid.symbol;
    auto type = tensorTypeOf(op.getSrc());
    shard::GridAxesArrayAttr split = sharding.getSplitAxes();
    if (static_cast<int64_t>(split.size()) > type.getRank())
      return op.emitError("sharding has ")
             << split.size() << " split dimensions for a tensor of rank "
             << type.getRank();
    for (unsigned d = 0; d < type.getRank(); ++d) {
      AxisList axes;
      if (d < split.size())
        for (int16_t axis : split.getAxes()[d].asArrayRef())
          axes.push_back(axis);
      std::string what = "the annotation";
      if (auto get = op.getSrc().getDefiningOp<GetParamOp>())
        what += " of @" + get.getName().str();
      annotations.push_back({op.getSrc(), d, axes, op.getLoc(), what});
    }
    op.getResult().replaceAllUsesWith(op.getSrc());
    op.erase();
    if (sharding->use_empty())
      sharding.erase();
  }
  return success();
}

/// Whether `v` (a linear's input) comes out of a norm, directly or through
/// a call argument.
static bool isNormed(Value v) {
  return v.getDefiningOp<RMSNormOp>() || v.getDefiningOp<LayerNormOp>();
}

LogicalResult Partitioner::seedPlan() {
  if (plan == ShardPlan::Data)
    return success();
  std::optional<int16_t> tp = grid.find("tp"), ep = grid.find("ep");
  for (func::FuncOp f : functions) {
    WalkResult walk = f.walk([&](Operation *op) -> WalkResult {
      if (op == f.getOperation())
        return WalkResult::advance();
      std::string where;
      llvm::raw_string_ostream os(where);
      if (auto linear = dyn_cast<LinearOp>(op); linear && tp) {
        // Column-parallel: a linear reading a norm's output (q, k, v, the
        // MLP's up projections, Mamba's input projections, the LM head),
        // except a router's, whose experts the router needs whole.
        bool feedsRouter = llvm::any_of(linear->getUsers(), [](Operation *u) {
          return isa<RouterOp>(u);
        });
        if (!isNormed(linear.getInput()) || feedsRouter) {
          LLVM_DEBUG(llvm::dbgs()
                     << "the megatron plan leaves the linear at "
                     << linear.getLoc() << " to propagation: "
                     << (feedsRouter ? "it feeds a router, which needs its "
                                       "experts whole"
                                     : "its input is no norm's output; its "
                                       "weight is split as the dimensions "
                                       "tied to it are")
                     << "\n");
          return WalkResult::advance();
        }
        unsigned out = linear.getTransposeWeight() ? 0 : 1;
        // A split the shapes do not allow (fewer key/value heads than tp
        // ranks) leaves the weight whole: each rank then computes every
        // key/value head and takes its group's (Megatron's replication).
        if (!classDivides(linear.getWeight(), out, grid.sizes[*tp])) {
          linear.emitWarning("the megatron plan keeps this linear's weight "
                             "whole: tp=")
              << grid.sizes[*tp]
              << " does not divide every dimension its output is tied to "
                 "(e.g. fewer key/value heads), so each tp rank computes all "
                 "of it";
          return WalkResult::advance();
        }
        os << "the megatron plan (column-parallel weight of the linear at "
           << linear.getLoc() << ")";
        return mlir::failed(seed(linear.getWeight(), out, {*tp}, 2, linear.getLoc(),
                            where))
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      }
      if (auto e = dyn_cast<EmbeddingOp>(op); e && tp) {
        if (!classDivides(e.getTable(), 0, grid.sizes[*tp])) {
          e.emitWarning("the megatron plan keeps this embedding's table "
                        "whole: tp=")
              << grid.sizes[*tp]
              << " does not divide its vocabulary, which a program returns "
                 "(logits are gathered at the return, and a padded split "
                 "cannot be)";
          return WalkResult::advance();
        }
        os << "the megatron plan (vocabulary-parallel embedding)";
        return mlir::failed(seed(e.getTable(), 0, {*tp}, 2, e.getLoc(), where))
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      }
      if (auto ffn = dyn_cast<ExpertFFNOp>(op)) {
        os << "the megatron plan (expert weights)";
        if (ep && failed(seed(ffn.getWUp(), 0, {*ep}, 2, ffn.getLoc(), where)))
          return WalkResult::interrupt();
        if (tp && failed(seed(ffn.getWUp(), 2, {*tp}, 2, ffn.getLoc(), where)))
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return success();
}

LogicalResult Partitioner::seedBatchAndSequence() {
  for (func::FuncOp entry : entries)
    if (failed(seedBatchAndSequence(entry)))
      return failure();
  return success();
}

LogicalResult Partitioner::seedBatchAndSequence(func::FuncOp step) {
  AxisList batch;
  for (StringRef name : {"dp", "ep"})
    if (auto axis = grid.find(name))
      batch.push_back(*axis);
  llvm::sort(batch);
  for (BlockArgument arg : step.getArguments()) {
    auto type = tensorTypeOf(arg);
    if (!type || type.getRank() == 0)
      continue;
    if (!batch.empty() &&
        failed(seed(arg, 0, batch, 0, step.getLoc(),
                    "the batch split over " + grid.describe(batch))))
      return failure();
    // The sequence: over cp (context parallelism), then over tp between
    // the tensor-parallel regions (sequence parallelism).
    AxisList sequence;
    if (auto cp = grid.find("cp"); cp && splitsSequence(step))
      sequence.push_back(*cp);
    if (sequenceParallel)
      if (auto tp = grid.find("tp"))
        sequence.push_back(*tp);
    if (!sequence.empty() && type.getRank() >= 2 &&
        failed(seed(arg, 1, sequence, 1, step.getLoc(),
                    "the sequence split over " + grid.describe(sequence))))
      return failure();
  }
  return success();
}

FailureOr<ValueSharding> Partitioner::canonical(Value v) {
  auto type = globalType(v);
  ValueSharding s = ValueSharding::replicated(type.getRank());
  // Highest priority first; an axis goes to the first dimension claiming it.
  SmallVector<std::pair<int, unsigned>> order;
  for (unsigned d = 0; d < type.getRank(); ++d)
    if (const Seed *seed = seedOf(v, d))
      order.push_back({-seed->priority, d});
  llvm::sort(order);
  AxisList used;
  for (auto [negPriority, d] : order) {
    for (int16_t axis : seedOf(v, d)->axes)
      if (!llvm::is_contained(used, axis)) {
        s.split[d].push_back(axis);
        used.push_back(axis);
      }
    int64_t n = grid.size(s.split[d]);
    if (type.getDimSize(d) % n != 0 && !isPaddable(v, d)) {
      Location loc = v.getDefiningOp() ? v.getDefiningOp()->getLoc()
                                       : cast<BlockArgument>(v).getOwner()->getParentOp()->getLoc();
      return emitError(loc, "cannot split dimension ")
             << d << " of " << type << " over " << grid.describe(s.split[d])
             << " (" << n << " ranks): " << type.getDimSize(d)
             << " is not a multiple of " << n << " (only vocabularies are padded)";
    }
  }
  return s;
}

