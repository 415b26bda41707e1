//===- EmbeddingOps.cpp - rules of the embedding and the loss -------------===//
//
// The token embedding (with its optional position table) and the
// cross-entropy loss: their sharding rules (a split vocabulary leaves the
// embedding partial and is reduced inside the loss), vector-Jacobian
// products (the dedicated *_grad ops), costs and runtime calls, and those of
// their gradient ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/Grid.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace mlir::braid;

using P = std::pair<Value, int64_t>;

/// The elements of the op's floating-point operands: one FLOP each for the
/// gradient ops that scatter or sum them.
static OpCost floatOperandsCost(Operation *op) {
  OpCost cost;
  for (Value operand : op->getOperands())
    if (isa<FloatType>(cast<ShapedType>(operand.getType()).getElementType()))
      cost.otherFlops += getNumElements(operand);
  return cost;
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

ShardingRule EmbeddingOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value tok = getTokens(), y = getResult(), pos = getPositionTable();
  int64_t rank = ShardingRuleBuilder::rankOf(tok);
  int64_t seq = cast<RankedTensorType>(tok.getType()).getShape().back();
  for (int64_t d = 0; d < rank; ++d) {
    // The position table's rows follow the sequence when it has one row
    // per position.
    bool positions = d == rank - 1 && pos &&
                     cast<RankedTensorType>(pos.getType()).getDimSize(0) == seq;
    r.add(FactorKind::Parallel,
          {P{tok, d}, P{y, d}, P{positions ? pos : Value(), 0}});
  }
  // A split vocabulary: each rank looks up its own rows, the result is
  // partial.
  r.add(FactorKind::Reduction, {P{getTable(), 0}});
  r.add(FactorKind::Parallel, {P{getTable(), 1}, P{pos, 1}, P{y, rank}});
  return r.take();
}

FailureOr<SmallVector<Value>> EmbeddingOp::emitVJP(OpBuilder &b, Location loc,
                                                   ArrayRef<Value> cotangents) {
  Value dy = cotangents[0];
  // The tokens have no cotangent.
  SmallVector<Value> grads = {
      Value(), EmbeddingGradOp::create(b, loc, getTable().getType(),
                                       getTokens(), dy, getVocabAxesAttr())};
  if (getPositionTable())
    grads.push_back(
        PositionGradOp::create(b, loc, getPositionTable().getType(), dy));
  return grads;
}

OpCost EmbeddingOp::getCost() {
  OpCost cost;
  // The lookup itself moves data; adding positions is one FLOP an element.
  if (getPositionTable())
    cost.otherFlops = getNumElements(getResult());
  return cost;
}

LogicalResult EmbeddingOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> table = getTable().getType().getShape();
  calls.push_back(
      {"braid_k_embedding",
       {KernelArg::dtype(getType()), KernelArg::dtype(getTokens().getType()),
        getTokens(), getTable(), getPositionTable(), getResult(),
        getNumElements(getTokens()), getTokens().getType().getShape().back(),
        table[0], table[1]}});
  return success();
}

//===----------------------------------------------------------------------===//
// EmbeddingGradOp
//===----------------------------------------------------------------------===//

OpCost EmbeddingGradOp::getCost() { return floatOperandsCost(*this); }

LogicalResult
EmbeddingGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> table = getResult().getType().getShape();
  calls.push_back(
      {"braid_k_embedding_grad",
       {KernelArg::dtype(getType()), KernelArg::dtype(getTokens().getType()),
        getTokens(), getGrad(), getResult(), getNumElements(getTokens()),
        table[0], table[1]}});
  return success();
}

//===----------------------------------------------------------------------===//
// PositionGradOp
//===----------------------------------------------------------------------===//

OpCost PositionGradOp::getCost() { return floatOperandsCost(*this); }

LogicalResult
PositionGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> g = getGrad().getType().getShape();
  ArrayRef<int64_t> table = getResult().getType().getShape();
  calls.push_back({"braid_k_position_grad",
                   {KernelArg::dtype(getType()), getGrad(), getResult(),
                    getNumElements(getGrad()) / g.back(), g[g.size() - 2],
                    table[0], table[1]}});
  return success();
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

ShardingRule CrossEntropyOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  int64_t rank = ShardingRuleBuilder::rankOf(getLabels());
  // Rows are summed into the 0-d loss: a split batch leaves the loss
  // partial. The vocabulary is reduced inside the op.
  r.leading(getLogits(), getLabels(), rank, FactorKind::Reduction);
  r.add(FactorKind::Vocab, {P{getLogits(), rank}});
  return r.take();
}

FailureOr<SmallVector<Value>>
CrossEntropyOp::emitVJP(OpBuilder &b, Location loc,
                        ArrayRef<Value> cotangents) {
  Value dy = cotangents[0];
  // Split over a vocabulary, every rank's loss depends on every shard of
  // the logits (through the op's internal reductions): the cotangent of
  // this shard sums the ranks' loss cotangents.
  if (ArrayAttr axes = getVocabAxesAttr()) {
    FailureOr<Grid> grid = Grid::required(*this);
    if (failed(grid))
      return failure();
    AxisList group;
    for (Attribute axis : axes) {
      std::optional<int16_t> index =
          grid->find(cast<StringAttr>(axis).getValue());
      if (!index)
        return emitError("grid @") << grid->symbol << " has no axis " << axis;
      group.push_back(*index);
    }
    llvm::sort(group);
    dy = shard::AllReduceOp::create(b, loc, dy.getType(), grid->symbol, group,
                                    dy);
  }
  // The labels have no cotangent.
  return SmallVector<Value>{
      CrossEntropyGradOp::create(b, loc, getLogits(), getLabels(), dy,
                                 getVocabAxesAttr(), getVocabSizeAttr(),
                                 getDenominatorAttr()),
      Value()};
}

OpCost CrossEntropyOp::getCost() {
  OpCost cost;
  // max, subtract, exp, sum per logit; log and pick per row.
  cost.otherFlops = 4 * getNumElements(getLogits());
  return cost;
}

LogicalResult
CrossEntropyOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t vocab = getLogits().getType().getShape().back();
  calls.push_back({"braid_k_cross_entropy",
                   {KernelArg::dtype(getLogits().getType()),
                    KernelArg::dtype(getLabels().getType()), getLogits(),
                    getLabels(), KernelArg::buffer(getResult(), "float *"),
                    getNumElements(getLogits()) / vocab, vocab}});
  return success();
}

//===----------------------------------------------------------------------===//
// CrossEntropyGradOp
//===----------------------------------------------------------------------===//

OpCost CrossEntropyGradOp::getCost() {
  OpCost cost;
  cost.otherFlops = 5 * getNumElements(getLogits());
  return cost;
}

LogicalResult
CrossEntropyGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t vocab = getLogits().getType().getShape().back();
  calls.push_back({"braid_k_cross_entropy_grad",
                   {KernelArg::dtype(getLogits().getType()),
                    KernelArg::dtype(getLabels().getType()), getLogits(),
                    getLabels(), KernelArg::buffer(getGrad(), "const float *"),
                    getResult(), getNumElements(getLogits()) / vocab, vocab}});
  return success();
}
