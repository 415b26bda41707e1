//===- BraidTrainingOps.cpp - backward, state and optimizer ops -----------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/ShapeErrors.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::braid;

using mlir::braid::detail::ShapeErrors;
using mlir::braid::detail::typeOf;

/// Emits "'<op>' op <message>" at `loc` when there is a location.
template <typename OpTy, typename... Args>
static LogicalResult shapeError(std::optional<Location> loc, Args &&...args) {
  return ShapeErrors<OpTy>{loc}(std::forward<Args>(args)...);
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

/// Norm gradients: [..., H] input, [H] scale, cotangent of the input's type.
template <typename OpTy>
static LogicalResult inferNormGrad(std::optional<Location> loc, Value x,
                                   Value gamma, Value grad, double epsilon,
                                   unsigned affine,
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
  if (scale.getElementType() != input.getElementType())
    return shapeError<OpTy>(loc, "scale element type ", scale.getElementType(),
                            " differs from the input's ",
                            input.getElementType());
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    return shapeError<OpTy>(loc, "epsilon must be positive and finite, found ",
                            epsilon);
  inferred.push_back(input);
  for (unsigned i = 0; i < affine; ++i)
    inferred.push_back(scale);
  return success();
}

LogicalResult RMSNormGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  return inferNormGrad<RMSNormGradOp>(
      loc, adaptor.getInput(), adaptor.getGamma(), adaptor.getGrad(),
      adaptor.getEpsilon().convertToDouble(), 1, inferred);
}

LogicalResult LayerNormGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferNormGrad<LayerNormGradOp>(
      loc, adaptor.getInput(), adaptor.getGamma(), adaptor.getGrad(),
      adaptor.getEpsilon().convertToDouble(), 2, inferred);
}

LogicalResult SoftmaxGradOp::verify() {
  if (getOutput().getType().getRank() < 1)
    return emitOpError("softmax's result must have at least one dimension, "
                       "found ")
           << getOutput().getType();
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  auto tokens = getTokens().getType();
  auto grad = getGrad().getType();
  auto table = getResult().getType();
  if (grad.getShape().drop_back() != tokens.getShape())
    return emitOpError("grad must be the tokens' shape plus a hidden "
                       "dimension, found ")
           << grad;
  if (table.getRank() != 2 || table.getDimSize(1) != grad.getShape().back() ||
      table.getDimSize(0) < 1)
    return emitOpError("result must be [vocab >= 1, ")
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
  if (w.getDimSize(1) < 1 || w.getElementType() != x.getElementType())
    return shapeError<Conv1dGradOp>(loc, "weight must be [C, K >= 1] of the "
                                         "input's element type, found ",
                                    w);
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
  if (idx.getDimSize(1) > logits.getDimSize(1) ||
      g.getElementType() != logits.getElementType())
    return shapeError<RouterGradOp>(loc, "grad must be [T, k <= E] of the "
                                         "logits' element type, found ",
                                    g);
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
  if (g.getRank() != 3 || idx.getRank() != 2 || g.getDimSize(0) < 1 ||
      g.getDimSize(1) < 1)
    return shapeError<DispatchGradOp>(loc, "expects grad [E >= 1, C >= 1, H] "
                                           "and indices [T, k], found ",
                                      g, " and ", idx);
  if (failed(ShapeErrors<DispatchGradOp>{loc}.expectMoeGroups(
          idx.getDimSize(0), g.getDimSize(1), adaptor.getGroupSize())))
    return failure();
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
  auto experts = typeOf(adaptor.getExpertOutput());
  if (failed(ShapeErrors<CombineGradOp>{loc}.expectMoeGroups(
          cast<RankedTensorType>(forward.front()).getDimSize(0),
          experts.getDimSize(1), adaptor.getGroupSize())))
    return failure();
  if (typeOf(adaptor.getGrad()) != forward.front())
    return shapeError<CombineGradOp>(loc, "grad must have the combined "
                                          "result's type ",
                                     forward.front());
  inferred.append({adaptor.getExpertOutput().getType(),
                   adaptor.getWeights().getType()});
  return success();
}

LogicalResult SumSquaresOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  return success();
}

LogicalResult ClipCoefficientOp::verify() {
  if (std::isnan(getMaxNorm().convertToDouble()))
    return emitOpError("max_norm must be a number");
  return success();
}

//===----------------------------------------------------------------------===//
// State and updates
//===----------------------------------------------------------------------===//

LogicalResult StateOp::verify() {
  if (getInit() != InitKind::Zeros && getInit() != InitKind::Ones)
    return emitOpError("state starts as zeros or ones, not ")
           << stringifyInitKind(getInit());
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
/// Elements of this rank's range of a ZeRO-sharded update: the length of a
/// 1-D `grad` that is a range of the parameter, else 0.
static int64_t zeroRange(RankedTensorType param, RankedTensorType grad) {
  if (grad.getRank() != 1 || grad.getShape() == param.getShape())
    return 0;
  int64_t n = grad.getDimSize(0);
  return n > 0 && param.getNumElements() % n == 0 ? n : 0;
}

static LogicalResult verifyUpdatedParam(Operation *op,
                                        SymbolTableCollection &symbols,
                                        FlatSymbolRefAttr symbol,
                                        RankedTensorType grad) {
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(op, symbol);
  if (!param)
    return op->emitOpError("'") << symbol
                                << "' does not reference a braid.param";
  // ZeRO-2 passes this rank's range of the flat gradient.
  if ((op->hasAttr("zero_axes") || op->hasAttr("range")) &&
      zeroRange(param.getTensorType(), grad))
    return success();
  if (param.getTensorType().getShape() != grad.getShape())
    return op->emitOpError("grad shape ")
           << grad << " differs from the parameter's "
           << param.getTensorType();
  return success();
}

/// Hyper-parameters every update needs: lr >= 0, weight decay >= 0.
static LogicalResult verifyRates(Operation *op, double lr, double decay) {
  if (!(lr >= 0.0) || !std::isfinite(lr))
    return op->emitOpError("lr must be finite and >= 0, found ") << lr;
  if (!(decay >= 0.0) || !std::isfinite(decay))
    return op->emitOpError("weight_decay must be finite and >= 0, found ")
           << decay;
  return success();
}

/// A range update names its range once: an offset and a size, not also the
/// axes whose protocol it is a piece of.
static LogicalResult verifyRange(Operation *op, Value offset,
                                 std::optional<int64_t> range) {
  if (bool(offset) != range.has_value())
    return op->emitOpError("takes an offset and a range together");
  if (range && *range <= 0)
    return op->emitOpError("range must be positive, found ") << *range;
  if (offset && op->hasAttr("zero_axes"))
    return op->emitOpError("takes zero_axes or an offset and a range, not both");
  return success();
}

LogicalResult SGDUpdateOp::verify() {
  if (failed(verifyRange(*this, getOffset(), getRange())))
    return failure();
  return verifyRates(*this, getLr().convertToDouble(),
                     getWeightDecay().convertToDouble());
}

LogicalResult AdamWUpdateOp::verify() {
  if (failed(verifyRange(*this, getOffset(), getRange())) ||
      failed(verifyRates(*this, getLr().convertToDouble(),
                         getWeightDecay().convertToDouble())))
    return failure();
  for (auto [beta, name] :
       {std::make_pair(getBeta1().convertToDouble(), "beta1"),
        std::make_pair(getBeta2().convertToDouble(), "beta2")})
    if (!(beta >= 0.0 && beta < 1.0))
      return emitOpError(name) << " must lie in [0, 1), found " << beta;
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError("eps must be positive, found ")
           << getEps().convertToDouble();
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
    if (getZeroAxes() || getOffset()) {
      auto param = symbols.lookupNearestSymbolFrom<ParamOp>(*this, getParamAttr());
      if (!zeroRange(param.getTensorType(), *type) ||
          !type->getElementType().isF32())
        return emitOpError("the ")
               << role
               << " of a ZeRO-sharded update must be a 1-D f32 range of the "
                  "flat parameter, found "
               << *type;
      continue;
    }
    if (type->getShape() != grad.getShape() || !type->getElementType().isF32())
      return emitOpError("the ")
             << role << " must be an f32 tensor of the parameter's shape, found "
             << *type;
  }
  if (getMAttr() == getVAttr())
    return emitOpError("the two moments must be distinct states, found '")
           << getMAttr() << "' twice";
  FailureOr<RankedTensorType> step =
      lookupState(*this, symbols, getStepAttr(), "step");
  if (failed(step))
    return failure();
  if (step->getRank() != 0 || !step->getElementType().isF32())
    return emitOpError("step must be a tensor<f32>, found ") << *step;
  return success();
}

/// A slice (`part`) of `whole` along `dim` over `axes`: the shapes agree but
/// along dim, where the part is no larger.
template <typename OpTy>
static LogicalResult verifyBlock(OpTy op, RankedTensorType part,
                                 RankedTensorType whole) {
  int64_t dim = op.getDim();
  if (part.getRank() != whole.getRank() || dim < 0 || dim >= part.getRank())
    return op.emitOpError("dim ") << dim << " must index both " << part
                                  << " and " << whole;
  for (int64_t d = 0; d < part.getRank(); ++d)
    if (d != dim && part.getDimSize(d) != whole.getDimSize(d))
      return op.emitOpError("the block ")
             << part << " and the whole " << whole
             << " may differ only along dim " << dim;
  if (part.getDimSize(dim) > whole.getDimSize(dim))
    return op.emitOpError("the block (") << part.getDimSize(dim)
                                         << ") is larger than the whole ("
                                         << whole.getDimSize(dim) << ")";
  if (part.getElementType() != whole.getElementType())
    return op.emitOpError("input and result element types differ");
  if (op.getAxes().empty())
    return op.emitOpError("needs at least one grid axis");
  if (op.getReplicas() < 1)
    return op.emitOpError("replicas must be at least 1, found ")
           << op.getReplicas();
  return success();
}

LogicalResult SliceOp::verify() {
  return verifyBlock(*this, cast<RankedTensorType>(getResult().getType()),
                     cast<RankedTensorType>(getInput().getType()));
}

LogicalResult UnsliceOp::verify() {
  return verifyBlock(*this, cast<RankedTensorType>(getInput().getType()),
                     cast<RankedTensorType>(getResult().getType()));
}

/// The parameter `symbol` of a range read or a write, whose flat element
/// count `elements` must be at most (a range) or exactly (a write) the
/// parameter's, in its element type.
static LogicalResult verifyParamAccess(Operation *op,
                                       SymbolTableCollection &symbols,
                                       FlatSymbolRefAttr symbol,
                                       RankedTensorType type, bool whole) {
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(op, symbol);
  if (!param)
    return op->emitOpError("'") << symbol
                                << "' does not reference a braid.param";
  RankedTensorType p = param.getTensorType();
  if (type.getElementType() != p.getElementType())
    return op->emitOpError("element type ")
           << type.getElementType() << " differs from the parameter's "
           << p.getElementType();
  if (whole ? (type.getNumElements() != p.getNumElements() ||
               (type.getRank() != 1 && type.getShape() != p.getShape()))
            : (type.getRank() != 1 || type.getNumElements() > p.getNumElements()))
    return op->emitOpError(whole ? "writes " : "reads ")
           << type << ", not " << (whole ? "all of " : "a 1-D range of ")
           << p;
  return success();
}

LogicalResult GetParamRangeOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyParamAccess(*this, symbols, getParamAttr(),
                           cast<RankedTensorType>(getResult().getType()),
                           /*whole=*/false);
}

LogicalResult SetParamOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyParamAccess(*this, symbols, getParamAttr(),
                           cast<RankedTensorType>(getValue().getType()),
                           /*whole=*/true);
}
