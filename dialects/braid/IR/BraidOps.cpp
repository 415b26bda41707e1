//===- BraidOps.cpp - verifiers, folders and helpers of braid ops ---------===//
//
// Result-type inference (and the shape checks that come with it) lives in
// BraidShapeInference.cpp; canonicalization patterns in BraidCanonicalize.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/ShapeErrors.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::braid;

//===----------------------------------------------------------------------===//
// ParamOp / GetParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  std::optional<double> std;
  if (FloatAttr attr = getInitStdAttr())
    std = attr.getValueAsDouble();
  if (getInit() == InitKind::Normal) {
    if (!std)
      return emitOpError("'normal' initialization needs a standard deviation");
    if (!(*std > 0.0) || !std::isfinite(*std))
      return emitOpError("standard deviation must be positive and finite, found ")
             << *std;
  } else if (std) {
    return emitOpError("'") << stringifyInitKind(getInit())
                            << "' initialization takes no standard deviation";
  }
  if (getInit() == InitKind::S4DReal && getTensorType().getRank() == 0)
    return emitOpError("'s4d_real' initialization runs along the last "
                       "dimension: it needs a tensor of rank at least 1");
  return success();
}

LogicalResult
GetParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  // Parameters and program state are read alike.
  Operation *symbol = symbolTable.lookupNearestSymbolFrom(*this, getNameAttr());
  Type declared;
  if (auto param = dyn_cast_or_null<ParamOp>(symbol))
    declared = param.getType();
  else if (auto state = dyn_cast_or_null<StateOp>(symbol))
    declared = state.getType();
  else
    return emitOpError("'") << getNameAttr()
                            << "' does not reference a braid.param";
  if (declared != getResult().getType())
    return emitOpError("result type ")
           << getResult().getType() << " does not match the type "
           << declared << " declared by '" << getNameAttr() << "'";
  return success();
}

//===----------------------------------------------------------------------===//
// LinearOp / AttentionOp helpers
//===----------------------------------------------------------------------===//

int64_t LinearOp::getInFeatures() {
  auto shape = getWeight().getType().getShape();
  return getTransposeWeight() ? shape[1] : shape[0];
}

int64_t LinearOp::getOutFeatures() {
  auto shape = getWeight().getType().getShape();
  return getTransposeWeight() ? shape[0] : shape[1];
}

/// The softmax scale of attention and its backward: the attribute, or
/// 1/sqrt(head dim).
static double attentionScale(FloatAttr scale, Value query) {
  if (scale)
    return scale.getValueAsDouble();
  auto type = cast<ShapedType>(query.getType());
  return 1.0 / std::sqrt(static_cast<double>(type.getShape()[3]));
}

double AttentionOp::getScaleOrDefault() {
  return attentionScale(getScaleAttr(), getQuery());
}

double AttentionGradOp::getScaleOrDefault() {
  return attentionScale(getScaleAttr(), getQuery());
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType();
  auto out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type ")
           << out.getElementType() << " of the result differs from "
           << in.getElementType() << " of the input";
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("result has ")
           << out.getNumElements() << " elements but the input has "
           << in.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  if (getInput().getType().getRank() < 1)
    return emitOpError("input must have at least one dimension (softmax is "
                       "over the last), found ")
           << getInput().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// TransposeOp / NegOp
//===----------------------------------------------------------------------===//

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPermutation()))
    if (static_cast<int64_t>(i) != p)
      return {};
  return getInput();
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// DispatchOp
//===----------------------------------------------------------------------===//

LogicalResult DispatchOp::verify() {
  auto in = getInput().getType();
  auto idx = getIndices().getType();
  auto out = getResult().getType();
  if (in.getRank() != 2)
    return emitOpError("input must be [tokens, hidden], found ") << in;
  if (idx.getRank() != 2 || idx.getDimSize(0) != in.getDimSize(0))
    return emitOpError("indices must be [")
           << in.getDimSize(0) << ", k] to match the input, found " << idx;
  if (out.getRank() != 3)
    return emitOpError("result must be [experts, capacity, hidden], found ")
           << out;
  if (out.getDimSize(0) < 1 || out.getDimSize(1) < 1)
    return emitOpError("needs at least one expert and a capacity of at least "
                       "one, found ")
           << out;
  if (out.getDimSize(2) != in.getDimSize(1))
    return emitOpError("result hidden size ")
           << out.getDimSize(2) << " differs from the input's "
           << in.getDimSize(1);
  if (out.getElementType() != in.getElementType())
    return emitOpError("result element type ")
           << out.getElementType() << " differs from the input's "
           << in.getElementType();
  return detail::ShapeErrors<DispatchOp>{getLoc()}.expectMoeGroups(
      in.getDimSize(0), out.getDimSize(1), getGroupSize());
}

#define GET_OP_CLASSES
#include "dialects/braid/IR/BraidOps.cpp.inc"
