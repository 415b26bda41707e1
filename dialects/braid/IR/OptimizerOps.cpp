//===- OptimizerOps.cpp - rules of gradient clipping and the updates ------===//
//
// The optimizer's ops: the global norm of the gradients and the clipping
// factor it gives, the step counter, and the in-place SGD and AdamW updates
// of a parameter (whole, or a ZeRO range of it): their costs and runtime
// calls.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"

using namespace mlir;
using namespace mlir::braid;

namespace {
/// The parameter and gradient an update reads and the elements it updates.
struct UpdateRange {
  KernelArg param;
  KernelArg grad;
  int64_t count;
};
} // namespace

/// The whole parameter `param`, or (ZeRO, an `offset` and a `range`) the
/// range [offset, offset + range) of its flat elements, from the gradient's
/// same range when the gradient is whole.
static UpdateRange getUpdateRange(StringRef param, Value grad, Value offset,
                                  std::optional<uint64_t> range) {
  UpdateRange update{KernelArg::symbol(param), grad, getNumElements(grad)};
  if (!offset)
    return update;
  // The parameter advances by its declared element type's bytes.
  update.param = update.param.advancedBy(offset);
  int64_t count = *range;
  if (update.count != count)
    update.grad = update.grad.advancedBy(
        offset, getElementBytes(getElementTypeOrSelf(grad.getType())));
  update.count = count;
  return update;
}

//===----------------------------------------------------------------------===//
// SumSquaresOp
//===----------------------------------------------------------------------===//

OpCost SumSquaresOp::getCost() {
  OpCost cost;
  // One per element of its (float) inputs.
  for (Value input : getInputs())
    cost.otherFlops += getNumElements(input);
  return cost;
}

LogicalResult
SumSquaresOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  // The f32 accumulator is zeroed, then each input adds to it.
  Type f32 = Builder(getContext()).getF32Type();
  calls.push_back({"braid_k_zero", {KernelArg::dtype(f32), getResult(), 1}});
  for (Value input : getInputs())
    calls.push_back({"braid_k_sum_squares",
                     {KernelArg::dtype(input.getType()), input,
                      KernelArg::buffer(getResult(), "float *"),
                      getNumElements(input)}});
  return success();
}

//===----------------------------------------------------------------------===//
// ClipCoefficientOp
//===----------------------------------------------------------------------===//

LogicalResult
ClipCoefficientOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back({"braid_k_clip_coefficient",
                   {KernelArg::buffer(getSumsq(), "const float *"),
                    KernelArg::buffer(getResult(), "float *"),
                    KernelArg::real(getMaxNorm().convertToDouble())}});
  return success();
}

//===----------------------------------------------------------------------===//
// IncrementOp
//===----------------------------------------------------------------------===//

LogicalResult IncrementOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back(
      {"braid_k_increment", {KernelArg::symbol(getCounter(), "float *")}});
  return success();
}

//===----------------------------------------------------------------------===//
// SGDUpdateOp
//===----------------------------------------------------------------------===//

OpCost SGDUpdateOp::getCost() {
  OpCost cost;
  cost.otherFlops = 4 * getNumElements(getGrad());
  return cost;
}

LogicalResult SGDUpdateOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  UpdateRange u =
      getUpdateRange(getParam(), getGrad(), getOffset(), getRange());
  calls.push_back({"braid_k_sgd_update",
                   {KernelArg::dtype(getGrad().getType()), u.param, u.grad,
                    KernelArg::buffer(getCoef(), "const float *"), u.count,
                    KernelArg::real(getLr().convertToDouble()),
                    KernelArg::real(getWeightDecay().convertToDouble())}});
  return success();
}

//===----------------------------------------------------------------------===//
// AdamWUpdateOp
//===----------------------------------------------------------------------===//

OpCost AdamWUpdateOp::getCost() {
  OpCost cost;
  cost.otherFlops = 12 * getNumElements(getGrad());
  return cost;
}

LogicalResult
AdamWUpdateOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  UpdateRange u =
      getUpdateRange(getParam(), getGrad(), getOffset(), getRange());
  calls.push_back({"braid_k_adamw_update",
                   {KernelArg::dtype(getGrad().getType()), u.param, u.grad,
                    KernelArg::symbol(getM(), "float *"),
                    KernelArg::symbol(getV(), "float *"),
                    KernelArg::buffer(getCoef(), "const float *"),
                    KernelArg::symbol(getStep(), "const float *"), u.count,
                    KernelArg::params(
                        "braid_adamw_params",
                        {{"lr", KernelArg::real(getLr().convertToDouble())},
                         {"beta1", KernelArg::real(getBeta1().convertToDouble())},
                         {"beta2", KernelArg::real(getBeta2().convertToDouble())},
                         {"eps", KernelArg::real(getEps().convertToDouble())},
                         {"weight_decay",
                          KernelArg::real(getWeightDecay().convertToDouble())}})}});
  return success();
}
