//===- MoEOps.cpp - rules of the mixture-of-experts ops -------------------===//
//
// The router, the dispatch of tokens into per-expert buffers, the expert
// FFNs and the weighted combine back to tokens: their sharding rules (a
// shard of the tokens fills its own capacity slots), vector-Jacobian
// products (selections, the indices and slots, are held fixed), costs and
// runtime calls, and those of their gradient ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"

using namespace mlir;
using namespace mlir::braid;

using P = std::pair<Value, int64_t>;

/// The last two arguments of an MoE kernel: the capacity per group and the
/// number of groups of `tokens` (the op's group_size; one group without it)
/// over `slots`.
static void appendCapacityAndGroups(SmallVectorImpl<KernelArg> &args,
                                    std::optional<uint64_t> groupSize,
                                    int64_t tokens, int64_t slots) {
  int64_t groups = 1;
  if (groupSize)
    groups = tokens / static_cast<int64_t>(*groupSize);
  args.push_back(slots / groups);
  args.push_back(groups);
}

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<ShapedType>(value.getType()).getShape();
}

//===----------------------------------------------------------------------===//
// RouterOp
//===----------------------------------------------------------------------===//

ShardingRule RouterOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  r.add(FactorKind::Parallel,
        {P{getLogits(), 0}, P{getWeights(), 0}, P{getIndices(), 0}});
  // The softmax and the top-k need a token's every expert.
  r.add(FactorKind::Whole, {P{getLogits(), 1}});
  r.add(FactorKind::Whole, {P{getWeights(), 1}, P{getIndices(), 1}});
  return r.take();
}

FailureOr<SmallVector<Value>> RouterOp::emitVJP(OpBuilder &b, Location loc,
                                                ArrayRef<Value> cotangents) {
  // Only the weights carry a cotangent; the selection is held fixed.
  Value dweights = cotangents[0];
  if (!dweights)
    return SmallVector<Value>{Value()};
  return SmallVector<Value>{RouterGradOp::create(
      b, loc, getLogits(), getIndices(), dweights, getNormalize())};
}

OpCost RouterOp::getCost() {
  OpCost cost;
  // softmax (4 per logit) plus a top-k pass (1 per logit and choice).
  int64_t logits = getNumElements(getLogits());
  cost.otherFlops = (4 + static_cast<int64_t>(getTopK())) * logits;
  return cost;
}

LogicalResult RouterOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> logits = getLogits().getType().getShape();
  calls.push_back(
      {"braid_k_router",
       {KernelArg::dtype(getLogits().getType()), getLogits(), getWeights(),
        KernelArg::buffer(getIndices(), "int32_t *"), logits[0], logits[1],
        static_cast<int64_t>(getTopK()), getNormalize()}});
  return success();
}

//===----------------------------------------------------------------------===//
// DispatchOp
//===----------------------------------------------------------------------===//

ShardingRule DispatchOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  // Tokens map to capacity slots: a shard of the tokens fills its own
  // slots (capacity per shard, as GShard and Megatron do).
  r.add(FactorKind::Parallel,
        {P{getInput(), 0}, P{getIndices(), 0}, P{getResult(), 1}});
  r.add(FactorKind::Parallel, {P{getInput(), 1}, P{getResult(), 2}});
  r.add(FactorKind::Whole, {P{getResult(), 0}});
  r.add(FactorKind::Whole, {P{getIndices(), 1}});
  return r.take();
}

FailureOr<SmallVector<Value>> DispatchOp::emitVJP(OpBuilder &b, Location loc,
                                                  ArrayRef<Value> cotangents) {
  // The indices have no cotangent.
  return SmallVector<Value>{DispatchGradOp::create(b, loc, cotangents[0],
                                                   getIndices(),
                                                   getGroupSizeAttr()),
                            Value()};
}

LogicalResult DispatchOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> out = getResult().getType().getShape();
  ArrayRef<int64_t> idx = shapeOf(getIndices());
  SmallVector<KernelArg> args = {
      KernelArg::dtype(getType()),
      getInput(),
      KernelArg::buffer(getIndices(), "const int32_t *"),
      getResult(),
      idx[0],
      out[2],
      idx[1],
      out[0]};
  appendCapacityAndGroups(args, getGroupSize(), idx[0], out[1]);
  calls.push_back({"braid_k_dispatch", std::move(args)});
  return success();
}

//===----------------------------------------------------------------------===//
// ExpertFFNOp
//===----------------------------------------------------------------------===//

ShardingRule ExpertFFNOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value in = getInput(), up = getWUp(), down = getWDown(), gate = getWGate(),
        out = getResult();
  r.add(FactorKind::Parallel,
        {P{in, 0}, P{up, 0}, P{down, 0}, P{gate, 0}, P{out, 0}});
  r.add(FactorKind::Parallel, {P{in, 1}, P{out, 1}});
  r.add(FactorKind::Whole, {P{in, 2}, P{up, 1}, P{gate, 1}});
  r.add(FactorKind::Reduction, {P{up, 2}, P{gate, 2}, P{down, 1}});
  r.add(FactorKind::Parallel, {P{down, 2}, P{out, 2}});
  return r.take();
}

FailureOr<SmallVector<Value>> ExpertFFNOp::emitVJP(OpBuilder &, Location,
                                                   ArrayRef<Value>) {
  return emitError("autodiff needs expert FFNs expanded first "
                   "(--braid-expand-expert-ffn)");
}

OpCost ExpertFFNOp::getCost() {
  OpCost cost;
  ArrayRef<int64_t> x = getInput().getType().getShape();
  int64_t hidden = x[2];
  int64_t ffn = getWUp().getType().getShape()[2];
  // Every slot of every expert's buffer is computed, padding included: the
  // FLOPs the step executes (and what its expansion into batched matmuls
  // counts). At capacity factor 1 they equal the routed ones.
  int64_t rows = x[0] * x[1];
  int64_t mats = getWGate() ? 3 : 2;
  cost.matmulFlops = 2 * rows * hidden * ffn * mats;
  cost.otherFlops =
      rows * ffn * (getActivationFlops(getActivation()) + (getWGate() ? 1 : 0));
  return cost;
}

LogicalResult ExpertFFNOp::getKernelCalls(SmallVectorImpl<KernelCall> &) {
  return emitError("braid-translate needs expert FFNs expanded first "
                   "(--braid-expand-expert-ffn)");
}

//===----------------------------------------------------------------------===//
// CombineOp
//===----------------------------------------------------------------------===//

ShardingRule CombineOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value eo = getExpertOutput(), out = getResult();
  r.add(FactorKind::Whole, {P{eo, 0}});
  r.add(FactorKind::Parallel,
        {P{eo, 1}, P{getWeights(), 0}, P{getIndices(), 0}, P{out, 0}});
  r.add(FactorKind::Parallel, {P{eo, 2}, P{out, 1}});
  r.add(FactorKind::Whole, {P{getWeights(), 1}, P{getIndices(), 1}});
  return r.take();
}

FailureOr<SmallVector<Value>> CombineOp::emitVJP(OpBuilder &b, Location loc,
                                                 ArrayRef<Value> cotangents) {
  auto grad =
      CombineGradOp::create(b, loc, getExpertOutput(), getWeights(),
                            getIndices(), cotangents[0], getGroupSizeAttr());
  // The indices have no cotangent.
  return SmallVector<Value>{grad.getDexpertOutput(), grad.getDweights(),
                            Value()};
}

OpCost CombineOp::getCost() {
  OpCost cost;
  cost.otherFlops = 2 * getNumElements(getWeights()) *
                    getExpertOutput().getType().getShape()[2];
  return cost;
}

LogicalResult CombineOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> e = getExpertOutput().getType().getShape();
  ArrayRef<int64_t> idx = shapeOf(getIndices());
  SmallVector<KernelArg> args = {
      KernelArg::dtype(getType()),
      getExpertOutput(),
      getWeights(),
      KernelArg::buffer(getIndices(), "const int32_t *"),
      getResult(),
      idx[0],
      e[2],
      idx[1],
      e[0]};
  appendCapacityAndGroups(args, getGroupSize(), idx[0], e[1]);
  calls.push_back({"braid_k_combine", std::move(args)});
  return success();
}

//===----------------------------------------------------------------------===//
// RouterGradOp
//===----------------------------------------------------------------------===//

OpCost RouterGradOp::getCost() {
  OpCost cost;
  cost.otherFlops = 6 * getNumElements(getLogits());
  return cost;
}

LogicalResult RouterGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> logits = getLogits().getType().getShape();
  calls.push_back({"braid_k_router_grad",
                   {KernelArg::dtype(getType()), getLogits(),
                    KernelArg::buffer(getIndices(), "const int32_t *"),
                    getGrad(), getResult(), logits[0], logits[1],
                    shapeOf(getIndices())[1], getNormalize()}});
  return success();
}

//===----------------------------------------------------------------------===//
// DispatchGradOp
//===----------------------------------------------------------------------===//

OpCost DispatchGradOp::getCost() {
  // One FLOP per element of the floating-point operands.
  OpCost cost;
  for (Value operand : getOperation()->getOperands())
    if (isa<FloatType>(cast<ShapedType>(operand.getType()).getElementType()))
      cost.otherFlops += getNumElements(operand);
  return cost;
}

LogicalResult
DispatchGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> g = getGrad().getType().getShape();
  ArrayRef<int64_t> idx = shapeOf(getIndices());
  SmallVector<KernelArg> args = {
      KernelArg::dtype(getType()),
      getGrad(),
      KernelArg::buffer(getIndices(), "const int32_t *"),
      getResult(),
      idx[0],
      g[2],
      idx[1],
      g[0]};
  appendCapacityAndGroups(args, getGroupSize(), idx[0], g[1]);
  calls.push_back({"braid_k_dispatch_grad", std::move(args)});
  return success();
}

//===----------------------------------------------------------------------===//
// CombineGradOp
//===----------------------------------------------------------------------===//

OpCost CombineGradOp::getCost() {
  OpCost cost;
  cost.otherFlops = 4 * getNumElements(getWeights()) *
                    getExpertOutput().getType().getShape()[2];
  return cost;
}

LogicalResult
CombineGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> e = getExpertOutput().getType().getShape();
  ArrayRef<int64_t> idx = shapeOf(getIndices());
  SmallVector<KernelArg> args = {
      KernelArg::dtype(getExpertOutput().getType()),
      getExpertOutput(),
      getWeights(),
      KernelArg::buffer(getIndices(), "const int32_t *"),
      getGrad(),
      getDexpertOutput(),
      getDweights(),
      idx[0],
      e[2],
      idx[1],
      e[0]};
  appendCapacityAndGroups(args, getGroupSize(), idx[0], e[1]);
  calls.push_back({"braid_k_combine_grad", std::move(args)});
  return success();
}
