//===- ShardingRule.cpp - factor rules and their builder ------------------===//

#include "dialects/braid/IR/ShardingRule.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::braid;

int ShardingRule::factorOf(unsigned tensor, unsigned dim) const {
  for (auto [i, factor] : llvm::enumerate(factors))
    for (const TensorDim &td : factor.dims)
      if (td.tensor == tensor && td.dim == dim)
        return i;
  return -1;
}

ShardingRuleBuilder::ShardingRuleBuilder(Operation *op) : op(op) {
  rule.numOperands = op->getNumOperands();
}

SmallVector<unsigned> ShardingRuleBuilder::tensorsOf(Value v) const {
  SmallVector<unsigned> positions;
  for (OpOperand &operand : op->getOpOperands())
    if (operand.get() == v)
      positions.push_back(operand.getOperandNumber());
  for (OpResult result : op->getResults())
    if (result == v)
      positions.push_back(rule.numOperands + result.getResultNumber());
  assert(!positions.empty() && "not a tensor of the op");
  return positions;
}

int64_t ShardingRuleBuilder::rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

void ShardingRuleBuilder::add(FactorKind kind,
                              ArrayRef<std::pair<Value, int64_t>> dims) {
  Factor factor{kind, {}};
  for (auto [v, d] : dims)
    if (v)
      for (unsigned t : tensorsOf(v))
        factor.dims.push_back({t, static_cast<unsigned>(d)});
  rule.factors.push_back(std::move(factor));
}

void ShardingRuleBuilder::elementwise() {
  int64_t rank = rankOf(op->getResult(0));
  for (int64_t d = 0; d < rank; ++d) {
    Factor factor{FactorKind::Parallel, {}};
    for (unsigned t = 0; t < op->getNumOperands() + op->getNumResults(); ++t)
      factor.dims.push_back({t, static_cast<unsigned>(d)});
    rule.factors.push_back(std::move(factor));
  }
}

void ShardingRuleBuilder::leading(Value a, Value b, int64_t n,
                                  FactorKind kind) {
  for (int64_t d = 0; d < n; ++d)
    add(kind, {{a, d}, {b, d}});
}

void ShardingRuleBuilder::attention(Value q, Value k, Value v, Value o,
                                    Value perSequence) {
  using P = std::pair<Value, int64_t>;
  add(FactorKind::Parallel,
      {P{q, 0}, P{k, 0}, P{v, 0}, P{perSequence, 0}, P{o, 0}});
  add(FactorKind::Whole, {P{q, 1}, P{o, 1}});
  add(FactorKind::Whole, {P{k, 1}, P{v, 1}});
  // Query heads and key/value heads are factors of their own: split alike
  // when tp divides both, but with fewer key/value heads than ranks each
  // rank takes its query heads' group.
  add(FactorKind::Parallel, {P{q, 2}, P{o, 2}});
  add(FactorKind::Parallel, {P{k, 2}, P{v, 2}});
  add(FactorKind::Whole, {P{q, 3}, P{k, 3}});
  add(FactorKind::Whole, {P{v, 3}, P{o, 3}});
}
