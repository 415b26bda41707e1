//===- AttentionOps.cpp - rules of attention and attention_grad -----------===//
//
// Scaled dot-product attention and its gradient: the sharding rule (batch
// and heads split, the sequences whole), the vector-Jacobian product (one
// attention_grad), costs counted over the full score matrix, and the runtime
// calls, which share their params struct. (A chunk of the queries,
// context parallelism, is attention by key blocks after
// --convert-braid-to-dist: BraidBlockAttentionOps.cpp.)
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/AttentionKernelArgs.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/Grid.h"

using namespace mlir;
using namespace mlir::braid;

using P = std::pair<Value, int64_t>;

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

ShardingRule AttentionOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  r.attention(getQuery(), getKey(), getValue(), getResult());
  return r.take();
}

FailureOr<SmallVector<Value>>
AttentionOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  auto grad = AttentionGradOp::create(
      b, loc, getQuery(), getKey(), getValue(), cotangents[0], getCausal(),
      getScaleAttr(), getRopeThetaAttr(), getQueryOffsetAxesAttr(),
      getRingAxesAttr(), getSequenceZigzagAttr());
  return SmallVector<Value>{grad.getDquery(), grad.getDkey(),
                            grad.getDvalue()};
}

OpCost AttentionOp::getCost() {
  OpCost cost;
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  ArrayRef<int64_t> v = getValue().getType().getShape();
  // Ring attention: the queries meet every rank's key chunk in turn.
  int64_t keys = k[1];
  if (ArrayAttr ring = getRingAxesAttr())
    if (FailureOr<GridGroup> group = getGridGroup(*this, ring);
        succeeded(group))
      keys *= group->size();
  int64_t scores = q[0] * q[2] * q[1] * keys; // B * Hq * S * Skv
  cost.matmulFlops = 2 * scores * q[3] + 2 * scores * v[3];
  // scale, mask, max, subtract, exp, sum, divide: ~5 per score.
  cost.otherFlops = 5 * scores;
  if (getRopeThetaAttr()) // 3 per element of q and k (2 mul, 1 add)
    cost.otherFlops +=
        3 * (getNumElements(getQuery()) + getNumElements(getKey()));
  // Backward keeps the log-sum-exp of every query row, in f32.
  cost.savedBytes = 4 * q[0] * q[1] * q[2];
  return cost;
}

LogicalResult AttentionOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back({"braid_k_attention",
                   {KernelArg::dtype(getType()), getQuery(), getKey(), getValue(),
                    getResult(), attentionParams(*this, getScaleOrDefault())}});
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

// Backward: matrix-product FLOPs counted as in the forward accounting
// (Megatron-LM): the backward of a product is two products of its size.
// attention_grad is the four products dQ, dK, dV, dP; its kernel's
// recomputation of the scores is an implementation choice, not model FLOPs.
OpCost AttentionGradOp::getCost() {
  OpCost cost;
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  ArrayRef<int64_t> v = getValue().getType().getShape();
  int64_t scores = q[0] * q[2] * q[1] * k[1];
  cost.matmulFlops = 2 * (2 * scores * q[3] + 2 * scores * v[3]);
  cost.otherFlops = 8 * scores;
  return cost;
}

LogicalResult
AttentionGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back({"braid_k_attention_grad",
                   {KernelArg::dtype(getQuery().getType()), getQuery(), getKey(),
                    getValue(), getGrad(), getDquery(), getDkey(), getDvalue(),
                    attentionParams(*this, getScaleOrDefault())}});
  return success();
}
