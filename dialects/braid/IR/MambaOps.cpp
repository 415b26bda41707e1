//===- MambaOps.cpp - rules of conv1d and selective_scan ------------------===//
//
// Mamba's mixer: the causal depthwise convolution and the selective scan,
// their sharding rules (the sequence is a recurrence, split only by context
// parallelism), vector-Jacobian products (dedicated *_grad ops), costs and
// runtime calls, and those of their gradients.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/ScanKernelArgs.h"

using namespace mlir;
using namespace mlir::braid;

using P = std::pair<Value, int64_t>;

//===----------------------------------------------------------------------===//
// Conv1dOp
//===----------------------------------------------------------------------===//

ShardingRule Conv1dOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value x = getInput(), y = getResult();
  r.add(FactorKind::Parallel, {P{x, 0}, P{y, 0}});
  r.add(FactorKind::Sequence, {P{x, 1}, P{y, 1}});
  r.add(FactorKind::Parallel,
        {P{x, 2}, P{getWeight(), 0}, P{getBias(), 0}, P{y, 2}});
  r.add(FactorKind::Whole, {P{getWeight(), 1}});
  return r.take();
}

FailureOr<SmallVector<Value>>
Conv1dOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  auto grad = Conv1dGradOp::create(b, loc, getInput(), getWeight(),
                                   cotangents[0], getContextAxesAttr());
  SmallVector<Value> grads = {grad.getDinput(), grad.getDweight()};
  if (getBias())
    grads.push_back(grad.getDbias());
  return grads;
}

OpCost Conv1dOp::getCost() {
  OpCost cost;
  // K multiply-adds per output, plus the bias.
  int64_t kernel = getWeight().getType().getShape()[1];
  cost.otherFlops =
      (2 * kernel + (getBias() ? 1 : 0)) * getNumElements(getResult());
  return cost;
}

LogicalResult Conv1dOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> x = getInput().getType().getShape();
  calls.push_back({"braid_k_conv1d",
                   {KernelArg::dtype(getType()), getInput(), getWeight(),
                    getBias(), getResult(), x[0], x[1], x[2],
                    getWeight().getType().getShape()[1]}});
  return success();
}

//===----------------------------------------------------------------------===//
// SelectiveScanOp
//===----------------------------------------------------------------------===//

ShardingRule SelectiveScanOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value x = getInput(), dt = getDelta(), B = getB(), C = getC(),
        y = getResult();
  r.add(FactorKind::Parallel, {P{x, 0}, P{dt, 0}, P{B, 0}, P{C, 0}, P{y, 0}});
  r.add(FactorKind::Sequence, {P{x, 1}, P{dt, 1}, P{B, 1}, P{C, 1}, P{y, 1}});
  r.add(FactorKind::Parallel,
        {P{x, 2}, P{dt, 2}, P{getA(), 0}, P{getD(), 0}, P{y, 2}});
  r.add(FactorKind::Whole, {P{getA(), 1}, P{B, 2}, P{C, 2}});
  return r.take();
}

FailureOr<SmallVector<Value>>
SelectiveScanOp::emitVJP(OpBuilder &b, Location loc,
                         ArrayRef<Value> cotangents) {
  auto grad = SelectiveScanGradOp::create(
      b, loc, getInput(), getDelta(), getA(), getB(), getC(), getD(),
      cotangents[0], getDeltaSoftplus(), getContextAxesAttr());
  return SmallVector<Value>{grad.getDinput(), grad.getDdelta(), grad.getDA(),
                            grad.getDB(),     grad.getDC(),     grad.getDD()};
}

OpCost SelectiveScanOp::getCost() {
  OpCost cost;
  int64_t state = getA().getType().getShape()[1];
  // Per (b, t, d, n): dt*A, exp, decay*h, dt*B*x (2), add, C*h, sum = 8.
  // Per (b, t, d): D*x + add = 2, softplus = 3 when applied.
  cost.otherFlops = getNumElements(getResult()) *
                    (8 * state + 2 + (getDeltaSoftplus() ? 3 : 0));
  return cost;
}

LogicalResult
SelectiveScanOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back({"braid_k_selective_scan",
                   {KernelArg::dtype(getType()), getInput(), getDelta(),
                    getA(), getB(), getC(), getD(), getResult(),
                    scanParams(getInput(), getA(), getDeltaSoftplus())}});
  return success();
}

//===----------------------------------------------------------------------===//
// Conv1dGradOp
//===----------------------------------------------------------------------===//

OpCost Conv1dGradOp::getCost() {
  OpCost cost;
  // K multiply-adds per element for the input's cotangent, K for the
  // weight's.
  int64_t kernel = getWeight().getType().getShape()[1];
  cost.otherFlops = 4 * kernel * getNumElements(getInput());
  return cost;
}

LogicalResult
Conv1dGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> x = getInput().getType().getShape();
  calls.push_back({"braid_k_conv1d_grad",
                   {KernelArg::dtype(getInput().getType()), getInput(),
                    getWeight(), getGrad(), getDinput(), getDweight(),
                    getDbias(), x[0], x[1], x[2],
                    getWeight().getType().getShape()[1]}});
  return success();
}

//===----------------------------------------------------------------------===//
// SelectiveScanGradOp
//===----------------------------------------------------------------------===//

OpCost SelectiveScanGradOp::getCost() {
  OpCost cost;
  // Twice the forward's count with the softplus: 2 (8 N + 2 + 3) per
  // (b, t, d).
  int64_t state = getA().getType().getShape()[1];
  cost.otherFlops = 2 * getNumElements(getInput()) * (8 * state + 5);
  return cost;
}

LogicalResult
SelectiveScanGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back(
      {"braid_k_selective_scan_grad",
       {KernelArg::dtype(getInput().getType()), getInput(), getDelta(),
        getA(), getB(), getC(), getD(), getGrad(), getDinput(), getDdelta(),
        getDA(), getDB(), getDC(), getDD(),
        scanParams(getInput(), getA(), getDeltaSoftplus())}});
  return success();
}
