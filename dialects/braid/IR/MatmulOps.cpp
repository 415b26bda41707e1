//===- MatmulOps.cpp - rules of linear and batch_matmul -------------------===//
//
// The matrix products: their sharding rules, vector-Jacobian products (the
// backward of a product is two products with transposed operands), costs
// and runtime calls.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

using namespace mlir;
using namespace mlir::braid;

using P = std::pair<Value, int64_t>;

/// `value` viewed as [rows, last].
static Value asMatrix(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t last = type.getShape().back();
  auto matrix = RankedTensorType::get({type.getNumElements() / last, last},
                                      type.getElementType());
  if (matrix == type)
    return value;
  return ReshapeOp::create(b, loc, matrix, value);
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

ShardingRule LinearOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  int64_t rank = ShardingRuleBuilder::rankOf(getInput());
  bool t = getTransposeWeight();
  r.leading(getInput(), getResult(), rank - 1);
  r.add(FactorKind::Reduction,
        {P{getInput(), rank - 1}, P{getWeight(), t ? 1 : 0}});
  r.add(FactorKind::Parallel, {P{getWeight(), t ? 0 : 1}, P{getBias(), 0},
                               P{getResult(), rank - 1}});
  return r.take();
}

FailureOr<SmallVector<Value>>
LinearOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  Value dy = cotangents[0];
  bool t = getTransposeWeight();
  // dx = dy W^T: the weight read the other way round.
  Value dx = LinearOp::create(b, loc, dy, getWeight(), Value(), !t);
  Value x2 = asMatrix(b, loc, getInput());
  Value dy2 = asMatrix(b, loc, dy);
  Value dw = t ? BatchMatmulOp::create(b, loc, dy2, x2, true, false)
               : BatchMatmulOp::create(b, loc, x2, dy2, true, false);
  SmallVector<Value> grads = {dx, dw};
  if (getBias())
    grads.push_back(SumRowsOp::create(b, loc, dy));
  return grads;
}

OpCost LinearOp::getCost() {
  OpCost cost;
  int64_t rows = getNumElements(getResult()) / getOutFeatures();
  cost.matmulFlops = 2 * rows * getInFeatures() * getOutFeatures();
  if (getBias())
    cost.otherFlops = getNumElements(getResult());
  return cost;
}

LogicalResult LinearOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t out = getOutFeatures();
  // braid_k_linear's flags (runtime.h): in a decode program the rows are the
  // step's sequences, whose results must not depend on the rows beside them.
  int64_t flags = getTransposeWeight() ? 1 : 0; // BRAID_LINEAR_TRANSPOSE_W
  auto func = (*this)->getParentOfType<func::FuncOp>();
  if (func && getProgramKind(func) == EntryKind::Decode)
    flags |= 2; // BRAID_LINEAR_ROWS_APART
  calls.push_back({"braid_k_linear",
                   {KernelArg::dtype(getType()), getInput(), getWeight(),
                    getBias(), getResult(), getNumElements(getResult()) / out,
                    getInFeatures(), out, flags}});
  return success();
}

//===----------------------------------------------------------------------===//
// BatchMatmulOp
//===----------------------------------------------------------------------===//

ShardingRule BatchMatmulOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  int64_t rank = ShardingRuleBuilder::rankOf(getLhs());
  bool ta = getTransposeA(), tb = getTransposeB();
  for (int64_t d = 0; d < rank - 2; ++d)
    r.add(FactorKind::Parallel,
          {P{getLhs(), d}, P{getRhs(), d}, P{getResult(), d}});
  r.add(FactorKind::Parallel, {P{getLhs(), ta ? rank - 1 : rank - 2},
                               P{getResult(), rank - 2}});
  r.add(FactorKind::Parallel, {P{getRhs(), tb ? rank - 2 : rank - 1},
                               P{getResult(), rank - 1}});
  r.add(FactorKind::Reduction, {P{getLhs(), ta ? rank - 2 : rank - 1},
                                P{getRhs(), tb ? rank - 1 : rank - 2}});
  return r.take();
}

FailureOr<SmallVector<Value>>
BatchMatmulOp::emitVJP(OpBuilder &b, Location loc,
                       ArrayRef<Value> cotangents) {
  // C = op(A) op(B), transposes as given.
  Value a = getLhs(), bm = getRhs(), dc = cotangents[0];
  bool ta = getTransposeA(), tb = getTransposeB();
  Value da = ta ? BatchMatmulOp::create(b, loc, bm, dc, tb, true).getResult()
                : BatchMatmulOp::create(b, loc, dc, bm, false, !tb).getResult();
  Value db = tb ? BatchMatmulOp::create(b, loc, dc, a, true, ta).getResult()
                : BatchMatmulOp::create(b, loc, a, dc, !ta, false).getResult();
  return SmallVector<Value>{da, db};
}

OpCost BatchMatmulOp::getCost() {
  OpCost cost;
  auto lhs = getLhs().getType();
  int64_t k = lhs.getShape()[lhs.getRank() - (getTransposeA() ? 2 : 1)];
  cost.matmulFlops = 2 * getNumElements(getResult()) * k;
  return cost;
}

LogicalResult
BatchMatmulOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> lhs = getLhs().getType().getShape();
  ArrayRef<int64_t> res = getResult().getType().getShape();
  int64_t rank = lhs.size();
  int64_t k = lhs[rank - (getTransposeA() ? 2 : 1)];
  int64_t batch =
      getNumElements(getResult()) / (res[rank - 2] * res[rank - 1]);
  calls.push_back({"braid_k_batch_matmul",
                   {KernelArg::dtype(getType()), getLhs(), getRhs(),
                    getResult(), batch, res[rank - 2], k, res[rank - 1],
                    getTransposeA(), getTransposeB()}});
  return success();
}
