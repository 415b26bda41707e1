//===- NormOps.cpp - rules of rms_norm, layer_norm, softmax ---------------===//
//
// The ops that normalize over the last dimension and their gradients: the
// sharding rule they share (rows split freely, the normalized dimension
// whole), vector-Jacobian products through the dedicated *_grad ops, costs
// and runtime calls.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"

using namespace mlir;
using namespace mlir::braid;

using P = std::pair<Value, int64_t>;

/// Rows split freely; the normalized (last) dimension stays whole, with the
/// affine operands (gamma, beta: every operand after the input) over it.
static ShardingRule getRowwiseRule(Operation *norm) {
  ShardingRuleBuilder r(norm);
  Value x = norm->getOperand(0), y = norm->getResult(0);
  int64_t rank = ShardingRuleBuilder::rankOf(x);
  r.leading(x, y, rank - 1);
  SmallVector<P> features = {P{x, rank - 1}, P{y, rank - 1}};
  for (Value affine : norm->getOperands().drop_front())
    features.push_back(P{affine, 0});
  r.add(FactorKind::Whole, features);
  return r.take();
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

ShardingRule RMSNormOp::getShardingRule() { return getRowwiseRule(*this); }

FailureOr<SmallVector<Value>>
RMSNormOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  auto grad = RMSNormGradOp::create(b, loc, getInput(), getGamma(),
                                    cotangents[0], getEpsilonAttr());
  return SmallVector<Value>{grad.getDinput(), grad.getDgamma()};
}

OpCost RMSNormOp::getCost() {
  OpCost cost;
  cost.otherFlops = 4 * getNumElements(getResult());
  return cost;
}

LogicalResult RMSNormOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t h = getInput().getType().getShape().back();
  calls.push_back({"braid_k_rms_norm",
                   {KernelArg::dtype(getType()), getInput(), getGamma(),
                    getResult(), getNumElements(getInput()) / h, h,
                    KernelArg::real(getEpsilon().convertToDouble())}});
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

ShardingRule LayerNormOp::getShardingRule() { return getRowwiseRule(*this); }

FailureOr<SmallVector<Value>>
LayerNormOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  auto grad = LayerNormGradOp::create(b, loc, getInput(), getGamma(),
                                      cotangents[0], getEpsilonAttr());
  return SmallVector<Value>{grad.getDinput(), grad.getDgamma(),
                            grad.getDbeta()};
}

OpCost LayerNormOp::getCost() {
  OpCost cost;
  cost.otherFlops = 7 * getNumElements(getResult());
  return cost;
}

LogicalResult LayerNormOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t h = getInput().getType().getShape().back();
  calls.push_back({"braid_k_layer_norm",
                   {KernelArg::dtype(getType()), getInput(), getGamma(),
                    getBeta(), getResult(), getNumElements(getInput()) / h, h,
                    KernelArg::real(getEpsilon().convertToDouble())}});
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

ShardingRule SoftmaxOp::getShardingRule() { return getRowwiseRule(*this); }

FailureOr<SmallVector<Value>>
SoftmaxOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  // From the result, which the forward keeps: no recomputed exp.
  return SmallVector<Value>{
      SoftmaxGradOp::create(b, loc, getResult(), cotangents[0])};
}

OpCost SoftmaxOp::getCost() {
  OpCost cost;
  // max, subtract, exp, sum, divide.
  cost.otherFlops = 5 * getNumElements(getResult());
  return cost;
}

LogicalResult SoftmaxOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t cols = getInput().getType().getShape().back();
  calls.push_back({"braid_k_softmax",
                   {KernelArg::dtype(getType()), getInput(), getResult(),
                    getNumElements(getInput()) / cols, cols}});
  return success();
}

//===----------------------------------------------------------------------===//
// RMSNormGradOp
//===----------------------------------------------------------------------===//

OpCost RMSNormGradOp::getCost() {
  OpCost cost;
  cost.otherFlops = 10 * getNumElements(getInput());
  return cost;
}

LogicalResult
RMSNormGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t h = getInput().getType().getShape().back();
  calls.push_back({"braid_k_rms_norm_grad",
                   {KernelArg::dtype(getInput().getType()), getInput(),
                    getGamma(), getGrad(), getDinput(), getDgamma(),
                    getNumElements(getInput()) / h, h,
                    KernelArg::real(getEpsilon().convertToDouble())}});
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormGradOp
//===----------------------------------------------------------------------===//

OpCost LayerNormGradOp::getCost() {
  OpCost cost;
  cost.otherFlops = 10 * getNumElements(getInput());
  return cost;
}

LogicalResult
LayerNormGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t h = getInput().getType().getShape().back();
  calls.push_back({"braid_k_layer_norm_grad",
                   {KernelArg::dtype(getInput().getType()), getInput(),
                    getGamma(), getGrad(), getDinput(), getDgamma(),
                    getDbeta(), getNumElements(getInput()) / h, h,
                    KernelArg::real(getEpsilon().convertToDouble())}});
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxGradOp
//===----------------------------------------------------------------------===//

OpCost SoftmaxGradOp::getCost() {
  OpCost cost;
  // dy * y, the row's sum, subtract, multiply.
  cost.otherFlops = 4 * getNumElements(getResult());
  return cost;
}

LogicalResult
SoftmaxGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t cols = getOutput().getType().getShape().back();
  calls.push_back({"braid_k_softmax_grad",
                   {KernelArg::dtype(getType()), getOutput(), getGrad(),
                    getResult(), getNumElements(getOutput()) / cols, cols}});
  return success();
}
