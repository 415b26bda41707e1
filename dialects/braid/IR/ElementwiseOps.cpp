//===- ElementwiseOps.cpp - rules of the elementwise ops ------------------===//
//
// The pointwise ops (add, mul, the activations, glu, exp, neg, fill,
// convert), the broadcast bias_add and the helpers of their backward
// (activation_grad, sum_rows): their sharding rules (one parallel factor
// per dimension), vector-Jacobian products (elementwise ops are
// elementwise, activations go through activation_grad), costs, runtime
// calls and the scalar expressions a fused elementwise kernel computes them
// with.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"

using namespace mlir;
using namespace mlir::braid;

using P = std::pair<Value, int64_t>;

/// Every operand and result has the same shape: one factor per dimension.
static ShardingRule elementwiseRule(Operation *op) {
  ShardingRuleBuilder r(op);
  r.elementwise();
  return r.take();
}

/// `act(x)` in a fused kernel, `x` the expression of the operand.
static std::string activationExpression(Activation activation,
                                        const std::string &x) {
  switch (activation) {
  case Activation::SiLU:
    return "braid::silu(" + x + ")";
  case Activation::GELU:
    return "braid::gelu(" + x + ")";
  case Activation::GELUTanh:
    return "braid::gelu_tanh(" + x + ")";
  case Activation::Sigmoid:
    return "braid::sigmoid(" + x + ")";
  case Activation::ReLU:
    return "braid::relu(" + x + ")";
  }
  llvm_unreachable("unknown activation");
}

/// The cotangent of `x` through `act(x)`, `dy` the result's.
static SmallVector<Value> activationVJP(OpBuilder &b, Location loc,
                                        Activation activation, Value x,
                                        Value dy) {
  return {ActivationGradOp::create(b, loc, activation, x, dy)};
}

/// The activation a gelu computes.
static Activation geluActivation(GeluOp op) {
  return op.getApproximate() ? Activation::GELUTanh : Activation::GELU;
}

//===----------------------------------------------------------------------===//
// AddOp
//===----------------------------------------------------------------------===//

ShardingRule AddOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
AddOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  return SmallVector<Value>{cotangents[0], cotangents[0]};
}

OpCost AddOp::getCost() {
  OpCost cost;
  cost.otherFlops = getNumElements(getResult());
  return cost;
}

std::string AddOp::getScalarExpression(ArrayRef<std::string> operands) {
  return operands[0] + " + " + operands[1];
}

//===----------------------------------------------------------------------===//
// MulOp
//===----------------------------------------------------------------------===//

ShardingRule MulOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
MulOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  Value dy = cotangents[0];
  return SmallVector<Value>{MulOp::create(b, loc, dy, getRhs()),
                            MulOp::create(b, loc, dy, getLhs())};
}

OpCost MulOp::getCost() {
  OpCost cost;
  cost.otherFlops = getNumElements(getResult());
  return cost;
}

std::string MulOp::getScalarExpression(ArrayRef<std::string> operands) {
  return operands[0] + " * " + operands[1];
}

//===----------------------------------------------------------------------===//
// GluOp
//===----------------------------------------------------------------------===//

ShardingRule GluOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
GluOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  Value dy = cotangents[0];
  // y = act(gate) * up: d up = dy act(gate), d gate = act'(gate) dy up.
  Value act = createActivation(b, loc, getActivation(), getGate());
  Value dup = MulOp::create(b, loc, dy, act);
  Value dgate = ActivationGradOp::create(b, loc, getActivation(), getGate(),
                                         MulOp::create(b, loc, dy, getUp()));
  return SmallVector<Value>{dgate, dup};
}

OpCost GluOp::getCost() {
  OpCost cost;
  // The activation, then the product.
  cost.otherFlops = (getActivationFlops(getActivation()) + 1) *
                    getNumElements(getResult());
  return cost;
}

std::string GluOp::getScalarExpression(ArrayRef<std::string> operands) {
  return activationExpression(getActivation(), operands[0]) + " * " +
         operands[1];
}

//===----------------------------------------------------------------------===//
// SiluOp
//===----------------------------------------------------------------------===//

ShardingRule SiluOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
SiluOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  return activationVJP(b, loc, Activation::SiLU, getInput(), cotangents[0]);
}

OpCost SiluOp::getCost() {
  OpCost cost;
  cost.otherFlops =
      getActivationFlops(Activation::SiLU) * getNumElements(getResult());
  return cost;
}

std::string SiluOp::getScalarExpression(ArrayRef<std::string> operands) {
  return activationExpression(Activation::SiLU, operands[0]);
}

//===----------------------------------------------------------------------===//
// GeluOp
//===----------------------------------------------------------------------===//

ShardingRule GeluOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
GeluOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  return activationVJP(b, loc, geluActivation(*this), getInput(),
                       cotangents[0]);
}

OpCost GeluOp::getCost() {
  OpCost cost;
  cost.otherFlops =
      getActivationFlops(geluActivation(*this)) * getNumElements(getResult());
  return cost;
}

std::string GeluOp::getScalarExpression(ArrayRef<std::string> operands) {
  return activationExpression(geluActivation(*this), operands[0]);
}

//===----------------------------------------------------------------------===//
// SigmoidOp
//===----------------------------------------------------------------------===//

ShardingRule SigmoidOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
SigmoidOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  return activationVJP(b, loc, Activation::Sigmoid, getInput(),
                       cotangents[0]);
}

OpCost SigmoidOp::getCost() {
  OpCost cost;
  cost.otherFlops =
      getActivationFlops(Activation::Sigmoid) * getNumElements(getResult());
  return cost;
}

std::string SigmoidOp::getScalarExpression(ArrayRef<std::string> operands) {
  return activationExpression(Activation::Sigmoid, operands[0]);
}

//===----------------------------------------------------------------------===//
// ReluOp
//===----------------------------------------------------------------------===//

ShardingRule ReluOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
ReluOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  return activationVJP(b, loc, Activation::ReLU, getInput(), cotangents[0]);
}

OpCost ReluOp::getCost() {
  OpCost cost;
  cost.otherFlops = getNumElements(getResult());
  return cost;
}

std::string ReluOp::getScalarExpression(ArrayRef<std::string> operands) {
  return activationExpression(Activation::ReLU, operands[0]);
}

//===----------------------------------------------------------------------===//
// ReluSquaredOp
//===----------------------------------------------------------------------===//

ShardingRule ReluSquaredOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
ReluSquaredOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  // d/dx max(x, 0)^2 = 2 max(x, 0), as r + r (exact): three fusible ops, one
  // generated kernel with the multiplication by dy.
  Value r = ReluOp::create(b, loc, getInput());
  Value twice = AddOp::create(b, loc, r, r);
  return SmallVector<Value>{MulOp::create(b, loc, cotangents[0], twice)};
}

OpCost ReluSquaredOp::getCost() {
  OpCost cost;
  cost.otherFlops = 2 * getNumElements(getResult()); // max, multiply
  return cost;
}

std::string
ReluSquaredOp::getScalarExpression(ArrayRef<std::string> operands) {
  return "braid::relu(" + operands[0] + ") * braid::relu(" + operands[0] + ")";
}

//===----------------------------------------------------------------------===//
// ExpOp
//===----------------------------------------------------------------------===//

ShardingRule ExpOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
ExpOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  // exp' = exp: dy times the result.
  return SmallVector<Value>{MulOp::create(b, loc, cotangents[0], getResult())};
}

OpCost ExpOp::getCost() {
  OpCost cost;
  cost.otherFlops = getNumElements(getResult());
  return cost;
}

std::string ExpOp::getScalarExpression(ArrayRef<std::string> operands) {
  return "braid::exp(" + operands[0] + ")";
}

//===----------------------------------------------------------------------===//
// NegOp
//===----------------------------------------------------------------------===//

ShardingRule NegOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
NegOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  return SmallVector<Value>{NegOp::create(b, loc, cotangents[0])};
}

OpCost NegOp::getCost() {
  OpCost cost;
  cost.otherFlops = getNumElements(getResult());
  return cost;
}

std::string NegOp::getScalarExpression(ArrayRef<std::string> operands) {
  return "-" + operands[0];
}

//===----------------------------------------------------------------------===//
// FillOp
//===----------------------------------------------------------------------===//

std::string FillOp::getScalarExpression(ArrayRef<std::string> operands) {
  return "static_cast<float>(" + formatReal(getValue().convertToDouble()) +
         ")";
}

//===----------------------------------------------------------------------===//
// ConvertOp
//===----------------------------------------------------------------------===//

ShardingRule ConvertOp::getShardingRule() { return elementwiseRule(*this); }

FailureOr<SmallVector<Value>>
ConvertOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  // The cotangent converted back to the input's element type.
  return SmallVector<Value>{
      ConvertOp::create(b, loc, getInput().getType(), cotangents[0])};
}

LogicalResult ConvertOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back({"braid_k_convert",
                   {KernelArg::dtype(getInput().getType()),
                    KernelArg::dtype(getType()), getInput(), getResult(),
                    getNumElements(getResult())}});
  return success();
}

//===----------------------------------------------------------------------===//
// BiasAddOp
//===----------------------------------------------------------------------===//

ShardingRule BiasAddOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value bias = getBias();
  int64_t rank = ShardingRuleBuilder::rankOf(getInput());
  // The bias's dimensions are the trailing ones of the input's.
  int64_t offset = rank - ShardingRuleBuilder::rankOf(bias);
  for (int64_t d = 0; d < rank; ++d)
    r.add(FactorKind::Parallel,
          {P{getInput(), d}, P{getResult(), d},
           P{d >= offset ? bias : Value(), d - offset}});
  return r.take();
}

FailureOr<SmallVector<Value>>
BiasAddOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  Value dy = cotangents[0];
  // The bias's cotangent sums dy over the leading dimensions.
  RankedTensorType bias = getBias().getType();
  int64_t n = bias.getNumElements();
  auto matrix = RankedTensorType::get(
      {cast<RankedTensorType>(dy.getType()).getNumElements() / n, n},
      bias.getElementType());
  Value rows = ReshapeOp::create(b, loc, matrix, dy);
  Value db = SumRowsOp::create(b, loc, rows);
  if (db.getType() != bias)
    db = ReshapeOp::create(b, loc, bias, db);
  return SmallVector<Value>{dy, db};
}

//===----------------------------------------------------------------------===//
// ActivationGradOp
//===----------------------------------------------------------------------===//

OpCost ActivationGradOp::getCost() {
  OpCost cost;
  cost.otherFlops = (getActivationFlops(getActivation()) + 3) *
                    getNumElements(getResult());
  return cost;
}

LogicalResult
ActivationGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back(
      {"braid_k_activation_grad",
       {KernelArg::dtype(getType()),
        KernelArg::enumerator("braid_act",
                              static_cast<int64_t>(getActivation())),
        getInput(), getGrad(), getResult(), getNumElements(getResult())}});
  return success();
}

//===----------------------------------------------------------------------===//
// SumRowsOp
//===----------------------------------------------------------------------===//

OpCost SumRowsOp::getCost() {
  OpCost cost;
  // One addition per element of its (float) input.
  cost.otherFlops = getNumElements(getInput());
  return cost;
}

LogicalResult SumRowsOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t cols = getResult().getType().getShape()[0];
  calls.push_back({"braid_k_sum_rows",
                   {KernelArg::dtype(getType()), getInput(), getResult(),
                    getNumElements(getInput()) / cols, cols}});
  return success();
}
