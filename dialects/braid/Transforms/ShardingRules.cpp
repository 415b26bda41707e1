//===- ShardingRules.cpp - the factor rule of any op ----------------------===//
//
// Braid's ops give their rules through ShardingRuleOpInterface (next to each
// op family, dialects/braid/IR). An op Braid does not know gets one when it
// implements upstream MLIR's `shard::ShardingInterface`, the way a user's
// own op or an upstream one is partitioned.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Sharding.h"

#include "dialects/braid/IR/BraidInterfaces.h"

#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"

using namespace mlir;
using namespace mlir::braid;

/// The rule of an op that implements upstream's `shard::ShardingInterface`
/// (its loops' kinds and indexing maps): a parallel loop is a parallel
/// factor, a sum is a reduction, any other reduction must stay whole. A
/// tensor dimension indexed by anything but one loop belongs to no factor
/// (it is not split).
static std::optional<ShardingRule> ruleFromShardingInterface(Operation *op) {
  auto sharding = dyn_cast<shard::ShardingInterface>(op);
  if (!sharding)
    return std::nullopt;
  SmallVector<utils::IteratorType> loops = sharding.getLoopIteratorTypes();
  SmallVector<shard::ReductionKind> reductions =
      sharding.getReductionLoopIteratorKinds();
  SmallVector<AffineMap> maps = sharding.getIndexingMaps();
  unsigned numTensors = op->getNumOperands() + op->getNumResults();
  if (loops.empty() || maps.size() != numTensors)
    return std::nullopt;
  ShardingRule rule;
  rule.numOperands = op->getNumOperands();
  unsigned reduction = 0;
  for (auto [loop, type] : llvm::enumerate(loops)) {
    Factor factor{FactorKind::Parallel, {}};
    if (type == utils::IteratorType::reduction) {
      bool sum = reduction < reductions.size() &&
                 reductions[reduction] == shard::ReductionKind::Sum;
      factor.kind = sum ? FactorKind::Reduction : FactorKind::Whole;
      ++reduction;
    }
    for (auto [t, map] : llvm::enumerate(maps))
      for (auto [d, expr] : llvm::enumerate(map.getResults()))
        if (auto dim = dyn_cast<AffineDimExpr>(expr);
            dim && dim.getPosition() == loop)
          factor.dims.push_back(
              {static_cast<unsigned>(t), static_cast<unsigned>(d)});
    rule.factors.push_back(std::move(factor));
  }
  return rule;
}

FailureOr<ShardingRule> mlir::braid::getShardingRule(Operation *op,
                                                     bool report) {
  if (auto ruled = dyn_cast<ShardingRuleOpInterface>(op))
    return ruled.getShardingRule();
  if (std::optional<ShardingRule> rule = ruleFromShardingInterface(op))
    return std::move(*rule);
  if (report)
    op->emitError("no sharding rule for '") << op->getName() << "'";
  return failure();
}
