//===- PartitionOpSplits.cpp - how --braid-partition splits each op -------===//
//
// A part of --braid-partition (Partition.cpp): for one op, the grid axes
// each factor of its rule is split over (splitOf, with what attention, a
// KV cache's heads and a recurrence under context parallelism need to be
// told), its operands resharded to that split (mapOperands), and the op on
// local shapes: cloned (cloneLocal), or rewritten where a sum must be
// reduced before something is added once (a row-parallel linear's bias, a
// vocabulary-parallel embedding's positions).
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Partitioner.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "braid-partition"

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::partition;

FailureOr<Partitioner::OpSplit>
Partitioner::splitOf(Operation *op, const ShardingRule &rule) {
  FailureOr<SmallVector<AxisList>> axes = factorAxes(op, rule);
  if (failed(axes))
    return failure();
  OpSplit split;
  split.axes = std::move(*axes);
  if (auto attention = dyn_cast<AttentionOp>(op))
    if (failed(splitAttention(attention, rule, split)))
      return failure();
  // Attention over a cache or a page pool: each rank attends with its query
  // heads over its heads' cache (a whole cache, sliced, when kv heads are
  // fewer than ranks).
  if (isa<CacheAttentionOp, PagedCacheAttentionOp>(op))
    splitKeyValueHeads(op, rule, split);
  splitCacheSequence(op, rule, split);
  splitRecurrence(op, rule, split);
  for (auto [i, factor] : llvm::enumerate(rule.factors))
    if (factor.kind == FactorKind::Reduction)
      llvm::append_range(split.partial, split.axes[i]);
  llvm::sort(split.partial);
  return split;
}

/// Attention: key/value heads follow the query heads' split; with fewer
/// key/value heads than ranks, each rank takes its query heads' group. Under
/// context parallelism the queries' sequence is split over cp, and
/// `cp-attention` says how the op attends over the whole sequence.
LogicalResult Partitioner::splitAttention(AttentionOp attention,
                                          const ShardingRule &rule,
                                          OpSplit &split) {
  SmallVector<AxisList> &axes = split.axes;
  int hq = rule.factorOf(0, 2), hkv = rule.factorOf(1, 2);
  if (auto cp = grid.find("cp"))
    if (const Seed *s = seedOf(attention.getQuery(), 1);
        s && llvm::is_contained(s->axes, *cp)) {
      switch (cpAttention) {
      case CpAttention::Ulysses: {
        // All-to-all from the sequence to the heads: every rank attends
        // over the whole sequence with its share of the heads.
        // (Fewer key/value heads than ranks: replicated below.)
        if (!llvm::is_contained(axes[hq], *cp))
          axes[hq].push_back(*cp);
        int64_t n = grid.size(axes[hq]);
        if (globalType(attention.getQuery()).getDimSize(2) % n != 0)
          return attention.emitError("Ulysses attention over ")
                 << grid.describe(axes[hq]) << " (" << n
                 << " ranks) needs the query heads divisible by it, found "
                 << globalType(attention.getQuery());
        if (globalType(attention.getKey()).getDimSize(2) % n == 0)
          axes[hkv] = axes[hq];
        break;
      }
      case CpAttention::AllGather:
        // Keys and values gathered; the queries keep their chunk, whose
        // global positions the op is told.
        axes[rule.factorOf(0, 1)] = {*cp};
        split.contextAxes = {*cp};
        break;
      case CpAttention::Ring:
        // Queries, keys and values all keep their chunk; the op passes
        // the key/value chunks around the group.
        axes[rule.factorOf(0, 1)] = {*cp};
        axes[rule.factorOf(1, 1)] = {*cp};
        split.ringAxes = {*cp};
        break;
      }
      split.zigzagged = zigzag > 0;
      LLVM_DEBUG(llvm::dbgs()
                 << "attention at " << attention.getLoc()
                 << ": its query sequence is split over cp (" << s->source
                 << "), so it attends by cp-attention="
                 << stringifyEnum(cpAttention)
                 << (split.zigzagged ? ", in zigzag order" : "") << "\n");
    }
  splitKeyValueHeads(attention, rule, split);
  return success();
}

void Partitioner::splitKeyValueHeads(Operation *attention,
                                     const ShardingRule &rule,
                                     OpSplit &split) {
  SmallVector<AxisList> &axes = split.axes;
  int hq = rule.factorOf(0, 2), hkv = rule.factorOf(1, 2);
  split.queryAxes = axes[hq];
  if (axes[hkv] == split.queryAxes)
    return;
  int64_t n = grid.size(split.queryAxes);
  int64_t kvHeads = globalType(attention->getOperand(1)).getDimSize(2);
  if (!split.queryAxes.empty() && kvHeads % n != 0 && n % kvHeads == 0) {
    axes[hkv].clear();
    split.kvReplicas = n / kvHeads;
    LLVM_DEBUG(llvm::dbgs()
               << "attention at " << attention->getLoc() << ": " << kvHeads
               << " key/value heads cannot be split over "
               << grid.describe(split.queryAxes) << " (" << n
               << " ranks): each rank takes the whole keys and values and "
                  "slices the group of its query heads (1 of "
               << kvHeads << ", shared by " << split.kvReplicas
               << " ranks)\n");
  } else {
    axes[hkv] = split.queryAxes;
  }
}

/// A recurrence's sequence under context parallelism stays split: the op
/// takes `context_axes` (Mamba: the convolution takes a halo from the
/// previous rank, the scan the state the previous ranks leave).
void Partitioner::splitRecurrence(Operation *op, const ShardingRule &rule,
                                  OpSplit &split) {
  std::optional<int16_t> cp = grid.find("cp");
  if (!cp)
    return;
  for (auto [f, factor] : llvm::enumerate(rule.factors)) {
    if (factor.kind != FactorKind::Sequence)
      continue;
    const TensorDim &td = factor.dims.front();
    if (const Seed *s = seedOf(tensorAt(op, rule, td.tensor), td.dim);
        s && llvm::is_contained(s->axes, *cp)) {
      split.axes[f] = {*cp};
      split.mixerContext = {*cp};
    }
  }
}

LogicalResult Partitioner::mapOperands(OpBuilder &b, Operation *op,
                                       const ShardingRule &rule,
                                       const OpSplit &split,
                                       IRMapping &mapping) {
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = globalType(operand.get());
    FailureOr<Value> v =
        use(b, op, operand.get(),
            shardingOf(rule, split.axes, operand.getOperandNumber(),
                       type.getRank()));
    if (failed(v))
      return failure();
    mapping.map(operand.get(), *v);
  }
  if (!split.kvReplicas)
    return success();
  for (Value kv : {op->getOperand(1), op->getOperand(2)}) {
    auto whole = cast<RankedTensorType>(mapping.lookup(kv).getType());
    SmallVector<int64_t> shape(whole.getShape());
    shape[2] = 1;
    mapping.map(kv, SliceOp::create(b, plain(op->getLoc()), whole.clone(shape),
                                    mapping.lookup(kv),
                                    grid.nameAttr(b.getContext(),
                                                  split.queryAxes),
                                    /*dim=*/2, split.kvReplicas)
                        .getResult());
  }
  return success();
}

/// Row-parallel with bias: the bias is added once, after the reduction.
LogicalResult
Partitioner::partitionRowParallelLinear(OpBuilder &b, LinearOp linear,
                                        const IRMapping &mapping,
                                        ArrayRef<ValueSharding> natural) {
  auto local = LinearOp::create(
      b, linear.getLoc(),
      localType(globalType(linear.getResult()), natural[0], grid),
      mapping.lookup(linear.getInput()), mapping.lookup(linear.getWeight()),
      Value(), linear.getTransposeWeight());
  locals[linear.getResult()] = {local.getResult(), natural[0]};
  FailureOr<ValueSharding> want = canonical(linear.getResult());
  if (failed(want))
    return failure();
  ValueSharding biasSharding = ValueSharding::replicated(1);
  biasSharding.split[0] = want->split.back();
  return addAfterSum(b, linear, *want, linear.getBias(), biasSharding);
}

LogicalResult Partitioner::addAfterSum(OpBuilder &b, Operation *op,
                                       const ValueSharding &want, Value addend,
                                       const ValueSharding &addendSharding) {
  Value result = op->getResult(0);
  FailureOr<Value> reduced = use(b, op, result, want);
  FailureOr<Value> local = use(b, op, addend, addendSharding);
  if (failed(reduced) || failed(local))
    return failure();
  auto added = BiasAddOp::create(b, op->getLoc(), *reduced, *local);
  locals[result] = {added.getResult(), want};
  if (recordingLayouts)
    recordLayouts(added, {want}, {globalType(result)}, grid);
  return success();
}

/// Vocabulary-parallel: each rank looks up its rows; positions are added
/// once, after the partial lookups are summed.
LogicalResult
Partitioner::partitionVocabEmbedding(OpBuilder &b, EmbeddingOp e,
                                     const IRMapping &mapping,
                                     const OpSplit &split,
                                     ArrayRef<ValueSharding> natural) {
  auto local = EmbeddingOp::create(
      b, e.getLoc(), localType(globalType(e.getResult()), natural[0], grid),
      mapping.lookup(e.getTokens()), mapping.lookup(e.getTable()), Value(),
      grid.nameAttr(b.getContext(), split.partial));
  locals[e.getResult()] = {local.getResult(), natural[0]};
  if (!e.getPositionTable()) {
    if (recordingLayouts)
      recordLayouts(local, natural, {globalType(e.getResult())}, grid);
    return success();
  }
  FailureOr<ValueSharding> want = canonical(e.getResult());
  if (failed(want))
    return failure();
  auto pos = globalType(e.getPositionTable());
  int64_t seq = globalType(e.getTokens()).getShape().back();
  if (pos.getDimSize(0) != seq)
    return e.emitError("a vocabulary-parallel embedding needs a position "
                       "table of exactly the sequence length (")
           << seq << "), found " << pos;
  ValueSharding posSharding = ValueSharding::replicated(2);
  posSharding.split[0] = want->split[want->split.size() - 2];
  posSharding.split[1] = want->split.back();
  return addAfterSum(b, e, *want, e.getPositionTable(), posSharding);
}

/// The op itself on local shapes, told what its split needs it to know.
LogicalResult Partitioner::cloneLocal(OpBuilder &b, Operation *op,
                                      const ShardingRule &rule,
                                      const OpSplit &split, IRMapping &mapping,
                                      ArrayRef<ValueSharding> natural) {
  Operation *local = b.clone(*op, mapping);
  for (auto [i, result] : llvm::enumerate(local->getResults()))
    result.setType(localType(globalType(op->getResult(i)), natural[i], grid));
  MLIRContext *context = b.getContext();
  if (!split.contextAxes.empty())
    cast<AttentionOp>(local).setQueryOffsetAxesAttr(
        grid.nameAttr(context, split.contextAxes));
  if (!split.ringAxes.empty())
    cast<AttentionOp>(local).setRingAxesAttr(
        grid.nameAttr(context, split.ringAxes));
  if (split.zigzagged)
    cast<AttentionOp>(local).setSequenceZigzagAttr(b.getI64IntegerAttr(zigzag));
  if (!split.mixerContext.empty())
    local->setAttr("context_axes", grid.nameAttr(context, split.mixerContext));
  if (!split.cacheAxes.empty())
    local->setAttr("cache_axes", grid.nameAttr(context, split.cacheAxes));
  if (auto ce = dyn_cast<CrossEntropyOp>(local)) {
    auto logits = globalType(cast<CrossEntropyOp>(op).getLogits());
    int f = rule.factorOf(0, logits.getRank() - 1);
    if (!split.axes[f].empty()) {
      ce.setVocabAxesAttr(grid.nameAttr(context, split.axes[f]));
      ce.setVocabSizeAttr(b.getI64IntegerAttr(logits.getShape().back()));
    }
    // A micro-batched loss already divides by the global batch's tokens.
    if (!split.partial.empty() && !ce.getDenominator())
      ce.setDenominatorAttr(b.getI64IntegerAttr(
          globalType(cast<CrossEntropyOp>(op).getLabels()).getNumElements()));
  }
  if (auto sample = dyn_cast<SampleOp>(local)) {
    int f = rule.factorOf(0, 1);
    if (!split.axes[f].empty())
      sample.setVocabAxesAttr(grid.nameAttr(context, split.axes[f]));
  }
  for (auto [result, localResult, s] :
       llvm::zip(op->getResults(), local->getResults(), natural))
    locals[result] = {localResult, s};
  SmallVector<RankedTensorType> globals;
  for (OpResult result : op->getResults())
    globals.push_back(dyn_cast<RankedTensorType>(result.getType())
                          ? globalType(result)
                          : RankedTensorType());
  if (recordingLayouts)
    recordLayouts(local, natural, globals, grid);
  return success();
}
