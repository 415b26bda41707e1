//===- BraidTrainingOps.cpp - backward, state and optimizer ops -----------===//

#include "dialects/braid/IR/BraidOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::braid;

/// The ranked type of a value, or null.
static RankedTensorType typeOf(Value value) {
  return value ? dyn_cast<RankedTensorType>(value.getType()) : nullptr;
}

template <typename OpTy, typename... Args>
static LogicalResult shapeError(std::optional<Location> loc, Args &&...args) {
  return emitOptionalError(loc, "'", OpTy::getOperationName(), "' op ",
                           std::forward<Args>(args)...);
}

//===----------------------------------------------------------------------===//
// Vector-Jacobian products: the operands' types, checked through the forward
// op's own inference where one exists.
//===----------------------------------------------------------------------===//

LogicalResult SumRowsOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto input = typeOf(adaptor.getInput());
  if (!input)
    return failure();
  if (input.getRank() < 1)
    return shapeError<SumRowsOp>(loc, "input must have at least one "
                                      "dimension, found ",
                                 input);
  inferred.push_back(
      RankedTensorType::get(input.getShape().back(), input.getElementType()));
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  SmallVector<Type> forward;
  AttentionOp::Adaptor fwd(
      ValueRange{adaptor.getQuery(), adaptor.getKey(), adaptor.getValue()});
  (void)fwd;
  auto q = typeOf(adaptor.getQuery()), k = typeOf(adaptor.getKey()),
       v = typeOf(adaptor.getValue()), g = typeOf(adaptor.getGrad());
  if (!q || !k || !v || !g)
    return failure();
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return shapeError<AttentionGradOp>(loc, "query, key and value must be "
                                            "[batch, seq, heads, head_dim]");
  if (q.getDimSize(2) % std::max<int64_t>(k.getDimSize(2), 1) != 0 ||
      k.getShape().take_front(3) != v.getShape().take_front(3) ||
      k.getDimSize(3) != q.getDimSize(3))
    return shapeError<AttentionGradOp>(loc, "operands do not form a valid "
                                            "attention: ",
                                       q, ", ", k, ", ", v);
  SmallVector<int64_t> out = {q.getDimSize(0), q.getDimSize(1),
                              q.getDimSize(2), v.getDimSize(3)};
  if (g.getShape() != ArrayRef<int64_t>(out))
    return shapeError<AttentionGradOp>(loc, "grad must have the attention "
                                            "result's shape, found ",
                                       g);
  inferred.append({q, k, v});
  return success();
}

/// Norm gradients: [..., H] input, [H] scale, cotangent of the input's type.
template <typename OpTy>
static LogicalResult inferNormGrad(std::optional<Location> loc, Value x,
                                   Value gamma, Value grad, unsigned affine,
                                   SmallVectorImpl<Type> &inferred) {
  auto input = typeOf(x), scale = typeOf(gamma), g = typeOf(grad);
  if (!input || !scale || !g)
    return failure();
  if (input.getRank() < 1 || scale.getRank() != 1 ||
      scale.getDimSize(0) != input.getShape().back())
    return shapeError<OpTy>(loc, "scale must be [", input.getShape().back(),
                            "], found ", scale);
  if (g != input)
    return shapeError<OpTy>(loc, "grad must have the input's type ", input,
                            ", found ", g);
  inferred.push_back(input);
  for (unsigned i = 0; i < affine; ++i)
    inferred.push_back(scale);
  return success();
}

LogicalResult RMSNormGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  return inferNormGrad<RMSNormGradOp>(loc, adaptor.getInput(),
                                      adaptor.getGamma(), adaptor.getGrad(), 1,
                                      inferred);
}

LogicalResult LayerNormGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferNormGrad<LayerNormGradOp>(loc, adaptor.getInput(),
                                        adaptor.getGamma(), adaptor.getGrad(),
                                        2, inferred);
}

LogicalResult EmbeddingGradOp::verify() {
  auto tokens = getTokens().getType();
  auto grad = getGrad().getType();
  auto table = getResult().getType();
  if (grad.getShape().drop_back() != tokens.getShape())
    return emitOpError("grad must be the tokens' shape plus a hidden "
                       "dimension, found ")
           << grad;
  if (table.getRank() != 2 || table.getDimSize(1) != grad.getShape().back())
    return emitOpError("result must be [vocab, ")
           << grad.getShape().back() << "], found " << table;
  if (table.getElementType() != grad.getElementType())
    return emitOpError("result element type differs from the grad's");
  return success();
}

LogicalResult PositionGradOp::verify() {
  auto grad = getGrad().getType();
  auto table = getResult().getType();
  if (grad.getRank() < 2)
    return emitOpError("grad must be [..., seq, hidden], found ") << grad;
  int64_t seq = grad.getShape()[grad.getRank() - 2];
  if (table.getRank() != 2 || table.getDimSize(1) != grad.getShape().back() ||
      table.getDimSize(0) < seq)
    return emitOpError("result must be [positions >= ")
           << seq << ", " << grad.getShape().back() << "], found " << table;
  if (table.getElementType() != grad.getElementType())
    return emitOpError("result element type differs from the grad's");
  return success();
}

LogicalResult CrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto logits = typeOf(adaptor.getLogits()), labels = typeOf(adaptor.getLabels());
  if (!logits || !labels)
    return failure();
  if (logits.getRank() < 1 || logits.getShape().drop_back() != labels.getShape())
    return shapeError<CrossEntropyGradOp>(
        loc, "labels must have the logits' shape without the vocabulary "
             "dimension, found ",
        logits, " and ", labels);
  inferred.push_back(logits);
  return success();
}

LogicalResult Conv1dGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  auto x = typeOf(adaptor.getInput()), w = typeOf(adaptor.getWeight()),
       g = typeOf(adaptor.getGrad());
  if (!x || !w || !g)
    return failure();
  if (x.getRank() != 3 || w.getRank() != 2 ||
      w.getDimSize(0) != x.getDimSize(2) || g != x)
    return shapeError<Conv1dGradOp>(loc, "expects input [B, S, C], weight "
                                         "[C, K] and grad of the input's "
                                         "type, found ",
                                    x, ", ", w, ", ", g);
  inferred.append({x, w,
                   RankedTensorType::get({x.getDimSize(2)},
                                         x.getElementType())});
  return success();
}

LogicalResult SelectiveScanGradOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  SmallVector<Type> forward;
  SelectiveScanOp::Adaptor fwd(
      ValueRange{adaptor.getInput(), adaptor.getDelta(), adaptor.getA(),
                 adaptor.getB(), adaptor.getC(), adaptor.getD()});
  if (failed(SelectiveScanOp::inferReturnTypes(context, loc, fwd, forward)))
    return failure();
  if (typeOf(adaptor.getGrad()) != forward.front())
    return shapeError<SelectiveScanGradOp>(loc, "grad must have the input's "
                                                "type ",
                                           forward.front());
  for (Value v : {adaptor.getInput(), adaptor.getDelta(), adaptor.getA(),
                  adaptor.getB(), adaptor.getC(), adaptor.getD()})
    inferred.push_back(v.getType());
  return success();
}

LogicalResult RouterGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  auto logits = typeOf(adaptor.getLogits()), idx = typeOf(adaptor.getIndices()),
       g = typeOf(adaptor.getGrad());
  if (!logits || !idx || !g)
    return failure();
  if (logits.getRank() != 2 || idx.getRank() != 2 ||
      idx.getDimSize(0) != logits.getDimSize(0) ||
      g.getShape() != idx.getShape())
    return shapeError<RouterGradOp>(loc, "expects logits [T, E], indices "
                                         "[T, k] and grad [T, k], found ",
                                    logits, ", ", idx, ", ", g);
  inferred.push_back(logits);
  return success();
}

LogicalResult DispatchGradOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  auto g = typeOf(adaptor.getGrad()), idx = typeOf(adaptor.getIndices());
  if (!g || !idx)
    return failure();
  if (g.getRank() != 3 || idx.getRank() != 2)
    return shapeError<DispatchGradOp>(loc, "expects grad [E, C, H] and "
                                           "indices [T, k], found ",
                                      g, " and ", idx);
  inferred.push_back(RankedTensorType::get(
      {idx.getDimSize(0), g.getDimSize(2)}, g.getElementType()));
  return success();
}

LogicalResult CombineGradOp::inferReturnTypes(MLIRContext *context,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  SmallVector<Type> forward;
  CombineOp::Adaptor fwd(ValueRange{adaptor.getExpertOutput(),
                                    adaptor.getWeights(),
                                    adaptor.getIndices()});
  if (failed(CombineOp::inferReturnTypes(context, loc, fwd, forward)))
    return failure();
  if (typeOf(adaptor.getGrad()) != forward.front())
    return shapeError<CombineGradOp>(loc, "grad must have the combined "
                                          "result's type ",
                                     forward.front());
  inferred.append({adaptor.getExpertOutput().getType(),
                   adaptor.getWeights().getType()});
  return success();
}

LogicalResult ConvertOp::verify() {
  if (getInput().getType().getShape() != getResult().getType().getShape())
    return emitOpError("converts element types only; shapes differ: ")
           << getInput().getType() << " and " << getResult().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// State and updates
//===----------------------------------------------------------------------===//

LogicalResult StateOp::verify() {
  if (getInit() == InitKind::Normal)
    return emitOpError("state starts as zeros or ones, not random");
  return success();
}

/// The declared type of `symbol` when it names a state of `op`'s module.
static FailureOr<RankedTensorType>
lookupState(Operation *op, SymbolTableCollection &symbols,
            FlatSymbolRefAttr symbol, StringRef role) {
  auto state = symbols.lookupNearestSymbolFrom<StateOp>(op, symbol);
  if (!state)
    return op->emitOpError("'") << symbol << "' (" << role
                                << ") does not reference a braid.state";
  return state.getTensorType();
}

LogicalResult IncrementOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<RankedTensorType> type =
      lookupState(*this, symbols, getCounterAttr(), "counter");
  if (failed(type))
    return failure();
  if (type->getRank() != 0 || !type->getElementType().isF32())
    return emitOpError("counter must be a tensor<f32>, found ") << *type;
  return success();
}

/// The update's parameter exists and has the gradient's shape.
static LogicalResult verifyUpdatedParam(Operation *op,
                                        SymbolTableCollection &symbols,
                                        FlatSymbolRefAttr symbol,
                                        RankedTensorType grad) {
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(op, symbol);
  if (!param)
    return op->emitOpError("'") << symbol
                                << "' does not reference a braid.param";
  if (param.getTensorType().getShape() != grad.getShape())
    return op->emitOpError("grad shape ")
           << grad << " differs from the parameter's "
           << param.getTensorType();
  return success();
}

LogicalResult SGDUpdateOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyUpdatedParam(*this, symbols, getParamAttr(),
                            cast<RankedTensorType>(getGrad().getType()));
}

LogicalResult AdamWUpdateOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto grad = cast<RankedTensorType>(getGrad().getType());
  if (failed(verifyUpdatedParam(*this, symbols, getParamAttr(), grad)))
    return failure();
  for (auto [symbol, role] : {std::make_pair(getMAttr(), "first moment"),
                              std::make_pair(getVAttr(), "second moment")}) {
    FailureOr<RankedTensorType> type = lookupState(*this, symbols, symbol, role);
    if (failed(type))
      return failure();
    if (type->getShape() != grad.getShape() || !type->getElementType().isF32())
      return emitOpError("the ")
             << role << " must be an f32 tensor of the parameter's shape, found "
             << *type;
  }
  FailureOr<RankedTensorType> step =
      lookupState(*this, symbols, getStepAttr(), "step");
  if (failed(step))
    return failure();
  if (step->getRank() != 0 || !step->getElementType().isF32())
    return emitOpError("step must be a tensor<f32>, found ") << *step;
  return success();
}
