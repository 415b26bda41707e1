//===- ShardingInterfaceImpl.cpp - upstream ShardingInterface of braid ops ===//
//
// The upstream `shard` passes see an op as a loop nest: iterator types and
// one indexing map per operand and result. Here that view is derived from
// the op's factor rule (ShardingRules.cpp), so the rule stays the single
// source:
//
// - one loop per factor, in rule order: Parallel and Whole factors are
//   parallel loops, Reduction and Vocab factors reduction loops (kind sum
//   for Reduction; generic for Vocab, whose log-sum-exp no single
//   all-reduce completes);
// - then one loop of its own for every tensor dimension in no factor (the
//   minor dimensions of a merged reshape dimension, a position table longer
//   than the sequence). Upstream needs each result dimension to be a loop
//   (projected permutations) and rejects constants in operand maps, so a
//   constant-0 index is not an option;
// - a tensor dimension indexes the loop of its factor.
//
// Whole factors and the dimensions in no factor are loops the op cannot
// split. Upstream iterator types cannot say so; getShardingOption therefore
// ignores the axes annotations put on their dimensions before upstream's
// default inference runs. The op's annotations then ask for those
// dimensions replicated (the all-gather Braid's partitioner inserts) and
// its results come out replicated along them. Braid's own propagation
// instead carries axes across a Whole factor and re-slices after the op;
// in upstream's terms that is this sharding plus a reshard where a user
// asks for the split.
//
// Upstream `--shard-partition` is supported for what needs no op-specific
// rewrite: fully replicated ops, and elementwise ops whose operands and
// result share one sharding. Anything else fails with a pointer to
// `--braid-partition`, which is how Braid partitions its programs.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/ShardingInterfaceImpl.h"

#include "dialects/braid/IR/BraidDialect.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/Transforms/Sharding.h"

#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::braid;

using shard::GridAxesAttr;
using shard::ReductionKind;
using shard::Sharding;
using shard::ShardingOption;
using utils::IteratorType;

namespace {

/// An op's loop nest as the upstream interface describes it.
struct LoopNest {
  SmallVector<IteratorType> iteratorTypes;
  /// One per reduction loop, in loop order.
  SmallVector<ReductionKind> reductionKinds;
  /// Per loop: false for loops the op needs whole.
  SmallVector<bool> splittable;
  /// Operands, then results.
  SmallVector<AffineMap> indexingMaps;

  void addLoop(IteratorType type, bool canSplit) {
    iteratorTypes.push_back(type);
    splittable.push_back(canSplit);
  }
};

FailureOr<LoopNest> getLoopNest(Operation *op) {
  FailureOr<ShardingRule> rule = getShardingRule(op);
  if (failed(rule))
    return failure();
  MLIRContext *context = op->getContext();
  // Attention's query and key/value heads are separate factors for Braid's
  // partitioner, which replicates key/value heads when they are fewer than
  // the ranks; upstream maps are affine and cannot say that, so there they
  // are one loop and split alike.
  if (isa<AttentionOp>(op)) {
    int query = rule->factorOf(0, 2), keys = rule->factorOf(1, 2);
    if (query >= 0 && keys >= 0 && query != keys) {
      llvm::append_range(rule->factors[query].dims, rule->factors[keys].dims);
      rule->factors.erase(rule->factors.begin() + keys);
    }
  }

  LoopNest nest;
  for (const Factor &factor : rule->factors) {
    switch (factor.kind) {
    case FactorKind::Parallel:
      nest.addLoop(IteratorType::parallel, /*canSplit=*/true);
      break;
    case FactorKind::Sequence:
    case FactorKind::Whole:
      nest.addLoop(IteratorType::parallel, /*canSplit=*/false);
      break;
    case FactorKind::Reduction:
      nest.addLoop(IteratorType::reduction, /*canSplit=*/true);
      nest.reductionKinds.push_back(ReductionKind::Sum);
      break;
    case FactorKind::Vocab:
      nest.addLoop(IteratorType::reduction, /*canSplit=*/true);
      nest.reductionKinds.push_back(ReductionKind::Generic);
      break;
    }
  }

  SmallVector<Type> types(op->getOperandTypes());
  llvm::append_range(types, op->getResultTypes());
  SmallVector<SmallVector<AffineExpr>> exprs;
  for (Type type : types) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    exprs.emplace_back(tensor ? tensor.getRank() : 0);
  }
  for (auto [loop, factor] : llvm::enumerate(rule->factors)) {
    AffineExpr expr = getAffineDimExpr(loop, context);
    for (TensorDim dim : factor.dims) {
      if (dim.tensor >= exprs.size() || dim.dim >= exprs[dim.tensor].size())
        continue;
      SmallVector<AffineExpr> &tensor = exprs[dim.tensor];
      // A map must not name a loop twice; a dimension left over gets a loop
      // of its own below.
      if (tensor[dim.dim] || llvm::is_contained(tensor, expr))
        continue;
      tensor[dim.dim] = expr;
    }
  }
  for (SmallVector<AffineExpr> &tensor : exprs) {
    for (AffineExpr &expr : tensor) {
      if (expr)
        continue;
      expr = getAffineDimExpr(nest.iteratorTypes.size(), context);
      nest.addLoop(IteratorType::parallel, /*canSplit=*/false);
    }
  }
  unsigned numLoops = nest.iteratorTypes.size();
  for (ArrayRef<AffineExpr> tensor : exprs)
    nest.indexingMaps.push_back(AffineMap::get(numLoops, 0, tensor, context));
  return nest;
}

/// `sharding` with the dimensions indexed by loops the op cannot split
/// replicated. When a split is dropped, so are halo sizes and shard offsets
/// (they describe the splits; braid ops use none).
Sharding keepSplittable(const Sharding &sharding, AffineMap map,
                        ArrayRef<bool> splittable) {
  if (!sharding)
    return sharding;
  SmallVector<GridAxesAttr> split(sharding.getSplitAxes());
  bool changed = false;
  for (auto [dim, axes] : llvm::enumerate(split)) {
    if (dim >= map.getNumResults() || axes.empty())
      continue;
    unsigned loop = cast<AffineDimExpr>(map.getResult(dim)).getPosition();
    if (splittable[loop])
      continue;
    axes = GridAxesAttr::get(map.getContext(), ArrayRef<shard::GridAxis>{});
    changed = true;
  }
  if (!changed)
    return sharding;
  // Upstream reads an operand's empty split list as no sharding information;
  // keep at least `[[]]`.
  while (split.size() > 1 && split.back().empty())
    split.pop_back();
  return Sharding::get(sharding.getGridAttr(), split);
}

FailureOr<ShardingOption>
getRuleShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                      ArrayRef<Sharding> resultShardings) {
  FailureOr<LoopNest> nest = getLoopNest(op);
  if (failed(nest))
    return failure();
  unsigned numOperands = op->getNumOperands();
  std::vector<Sharding> operands, results;
  for (auto [i, sharding] : llvm::enumerate(operandShardings))
    operands.push_back(
        keepSplittable(sharding, nest->indexingMaps[i], nest->splittable));
  for (auto [i, sharding] : llvm::enumerate(resultShardings))
    results.push_back(keepSplittable(
        sharding, nest->indexingMaps[numOperands + i], nest->splittable));
  return shard::detail::defaultGetShardingOption(op, operands, results);
}

bool isReplicated(const Sharding &sharding) {
  return !sharding || shard::isFullReplication(sharding);
}

/// Upstream partitioning where it needs no op-specific rewrite.
LogicalResult partitionOp(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) {
  if (llvm::all_of(operandShardings, isReplicated) &&
      llvm::all_of(resultShardings, isReplicated)) {
    shard::partitionFullyReplicatedOperation(
        *op, partitionedOperands, operandShardings, resultShardings,
        partitionMap, symbolTable, builder);
    return success();
  }
  if (op->hasTrait<OpTrait::Elementwise>() && resultShardings.size() == 1 &&
      llvm::all_of(operandShardings, [&](const Sharding &sharding) {
        return sharding == resultShardings.front();
      })) {
    shard::partitionTriviallyShardableOperation(
        *op, partitionedOperands, operandShardings, resultShardings,
        partitionMap, symbolTable, builder);
    return success();
  }
  return op->emitOpError()
         << "with split operands or results is not partitioned by upstream "
            "--shard-partition; partition braid programs with "
            "--braid-partition";
}

/// A model of the upstream interface whose partitioning is partitionOp.
template <typename Model, typename ConcreteOp>
struct PartitionedModel
    : public shard::ShardingInterface::ExternalModel<Model, ConcreteOp> {
  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    return partitionOp(op, partitionedOperands, operandShardings,
                       resultShardings, partitionMap, symbolTable, builder);
  }
};

/// The model of any op with a factor rule (ShardingRuleOpInterface).
struct FactorRuleShardingModel
    : PartitionedModel<FactorRuleShardingModel, ShardingRuleOpInterface> {
  SmallVector<IteratorType> getLoopIteratorTypes(Operation *op) const {
    FailureOr<LoopNest> nest = getLoopNest(op);
    return succeeded(nest) ? nest->iteratorTypes : SmallVector<IteratorType>();
  }

  SmallVector<ReductionKind>
  getReductionLoopIteratorKinds(Operation *op) const {
    FailureOr<LoopNest> nest = getLoopNest(op);
    return succeeded(nest) ? nest->reductionKinds
                           : SmallVector<ReductionKind>();
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    FailureOr<LoopNest> nest = getLoopNest(op);
    return succeeded(nest) ? nest->indexingMaps : SmallVector<AffineMap>();
  }

  FailureOr<ShardingOption>
  getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                    ArrayRef<Sharding> resultShardings) const {
    return getRuleShardingOption(op, operandShardings, resultShardings);
  }
};

/// braid.get_param has no rule (it computes nothing) but starts the chains
/// weights propagate along: every dimension a parallel loop of its own, as
/// upstream models tensor.empty. Its result must keep the declared type, so
/// only a replicated read is partitioned upstream.
struct GetParamShardingModel
    : PartitionedModel<GetParamShardingModel, GetParamOp> {
  SmallVector<IteratorType> getLoopIteratorTypes(Operation *op) const {
    return SmallVector<IteratorType>(rank(op), IteratorType::parallel);
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    return {AffineMap::getMultiDimIdentityMap(rank(op), op->getContext())};
  }

private:
  static unsigned rank(Operation *op) {
    return cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  }
};

} // namespace

void mlir::braid::registerShardingInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, BraidDialect *braid) {
    // Every braid op with a factor rule, whatever its family: the rule is
    // the single source (sharding-interface.mlir propagates through each).
    for (RegisteredOperationName name : context->getRegisteredOperations())
      if (&name.getDialect() == braid &&
          name.hasInterface<ShardingRuleOpInterface>())
        name.attachInterface<FactorRuleShardingModel>();
    GetParamOp::attachInterface<GetParamShardingModel>(*context);
  });
}
