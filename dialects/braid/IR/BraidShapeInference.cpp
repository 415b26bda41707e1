//===- BraidShapeInference.cpp - result types of braid ops ----------------===//
//
// inferReturnTypes runs twice: from builders (no location: failures are
// silent) and from the verifier, which passes the op's location. The checks
// below are therefore the op's shape verifier; their messages are prefixed
// like emitOpError so that every diagnostic names the op it comes from.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/ShapeErrors.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::braid;

using mlir::braid::detail::ShapeErrors;
using mlir::braid::detail::typeOf;

/// `shape` with `last` appended.
static SmallVector<int64_t> withTrailing(ArrayRef<int64_t> shape,
                                         ArrayRef<int64_t> last) {
  SmallVector<int64_t> result(shape);
  result.append(last.begin(), last.end());
  return result;
}

//===----------------------------------------------------------------------===//
// Transformer
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  ShapeErrors<EmbeddingOp> error{loc};
  auto tokens = typeOf(adaptor.getTokens());
  auto table = typeOf(adaptor.getTable());
  auto positions = typeOf(adaptor.getPositionTable());
  if (!tokens || !table)
    return failure();
  if (tokens.getRank() < 1)
    return error("tokens must have at least one dimension, found ", tokens);
  if (failed(error.expectRank(table, 2, "table", "[vocab, hidden]")))
    return failure();
  if (positions) {
    if (failed(error.expectRank(positions, 2, "position table",
                                "[positions, hidden]")) ||
        failed(error.expectSameElementType({table, positions})))
      return failure();
    if (positions.getDimSize(1) != table.getDimSize(1))
      return error("position table hidden size ", positions.getDimSize(1),
                   " differs from the table's ", table.getDimSize(1));
    if (positions.getDimSize(0) < tokens.getShape().back())
      return error("position table has ", positions.getDimSize(0),
                   " positions but the sequence has ",
                   tokens.getShape().back());
  }
  inferred.push_back(RankedTensorType::get(
      withTrailing(tokens.getShape(), table.getDimSize(1)),
      table.getElementType()));
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ShapeErrors<LinearOp> error{loc};
  auto input = typeOf(adaptor.getInput());
  auto weight = typeOf(adaptor.getWeight());
  auto bias = typeOf(adaptor.getBias());
  if (!input || !weight)
    return failure();
  if (input.getRank() < 1)
    return error("input must have at least one dimension, found ", input);
  bool transposed = adaptor.getTransposeWeight();
  if (failed(error.expectRank(weight, 2, "weight",
                              transposed ? "[out, in]" : "[in, out]")) ||
      failed(error.expectSameElementType({input, weight, bias})))
    return failure();
  int64_t in = weight.getDimSize(transposed ? 1 : 0);
  int64_t out = weight.getDimSize(transposed ? 0 : 1);
  if (input.getShape().back() != in)
    return error("input feature size ", input.getShape().back(),
                 " differs from the weight's ", in,
                 transposed ? " (weight is transposed)" : "");
  if (bias && (bias.getRank() != 1 || bias.getDimSize(0) != out))
    return error("bias must be [", out, "], found ", bias);
  inferred.push_back(RankedTensorType::get(
      withTrailing(input.getShape().drop_back(), out),
      input.getElementType()));
  return success();
}

LogicalResult BatchMatmulOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  ShapeErrors<BatchMatmulOp> error{loc};
  auto lhs = typeOf(adaptor.getLhs());
  auto rhs = typeOf(adaptor.getRhs());
  if (!lhs || !rhs)
    return failure();
  if (lhs.getRank() < 2 || lhs.getRank() != rhs.getRank())
    return error("operands must have one rank of at least 2, found ", lhs,
                 " and ", rhs);
  if (failed(error.expectSameElementType({lhs, rhs})))
    return failure();
  int64_t rank = lhs.getRank();
  if (lhs.getShape().drop_back(2) != rhs.getShape().drop_back(2))
    return error("batch dimensions differ: ", lhs, " and ", rhs);
  bool ta = adaptor.getTransposeA(), tb = adaptor.getTransposeB();
  int64_t m = lhs.getDimSize(rank - (ta ? 1 : 2));
  int64_t kl = lhs.getDimSize(rank - (ta ? 2 : 1));
  int64_t kr = rhs.getDimSize(rank - (tb ? 1 : 2));
  int64_t n = rhs.getDimSize(rank - (tb ? 2 : 1));
  if (kl != kr)
    return error("contraction sizes differ: ", kl, " (lhs) and ", kr, " (rhs)");
  inferred.push_back(RankedTensorType::get(
      withTrailing(lhs.getShape().drop_back(2), {m, n}),
      lhs.getElementType()));
  return success();
}

/// The attention checks, shared by braid.attention and braid.attention_grad
/// (whose diagnostics name the op they come from).
template <typename OpTy, typename AdaptorTy>
static LogicalResult inferAttention(std::optional<Location> loc,
                                    AdaptorTy adaptor,
                                    SmallVectorImpl<Type> &inferred) {
  ShapeErrors<OpTy> error{loc};
  auto q = typeOf(adaptor.getQuery());
  auto k = typeOf(adaptor.getKey());
  auto v = typeOf(adaptor.getValue());
  if (!q || !k || !v)
    return failure();
  if (failed(error.expectRank(q, 4, "query", "[batch, seq, heads, head_dim]")) ||
      failed(error.expectRank(k, 4, "key", "[batch, seq, kv_heads, head_dim]")) ||
      failed(error.expectRank(v, 4, "value", "[batch, seq, kv_heads, head_dim]")) ||
      failed(error.expectSameElementType({q, k, v})))
    return failure();
  if (k.getDimSize(0) != q.getDimSize(0) || v.getDimSize(0) != q.getDimSize(0))
    return error("batch sizes differ: ", q, ", ", k, ", ", v);
  if (k.getShape().take_front(3) != v.getShape().take_front(3))
    return error("key and value must agree on batch, sequence and heads, "
                 "found ", k, " and ", v);
  if (k.getDimSize(3) != q.getDimSize(3))
    return error("key head dim ", k.getDimSize(3),
                 " differs from the query's ", q.getDimSize(3));
  int64_t heads = q.getDimSize(2), kvHeads = k.getDimSize(2);
  if (kvHeads < 1 || heads % kvHeads != 0)
    return error("query heads (", heads,
                 ") must be a multiple of key/value heads (", kvHeads, ")");
  // A chunk of the queries (context parallelism) sees every key up to its
  // global position.
  if (adaptor.getCausal() && !adaptor.getQueryOffsetAxes() &&
      q.getDimSize(1) != k.getDimSize(1))
    return error("causal attention needs equal query and key lengths, found ",
                 q.getDimSize(1), " and ", k.getDimSize(1));
  if (adaptor.getRingAxes() && adaptor.getQueryOffsetAxes())
    return error("ring_axes and query_offset_axes exclude each other: a ring "
                 "passes the key chunks, an offset chunk sees every key");
  if (IntegerAttr zigzag = adaptor.getSequenceZigzagAttr();
      zigzag && zigzag.getInt() < 1)
    return error("sequence_zigzag must be at least 1, found ", zigzag.getInt());
  if (FloatAttr attr = adaptor.getScaleAttr()) {
    double scale = attr.getValueAsDouble();
    if (!(scale > 0.0) || !std::isfinite(scale))
      return error("scale must be positive and finite, found ", scale);
  }
  if (FloatAttr attr = adaptor.getRopeThetaAttr()) {
    double theta = attr.getValueAsDouble();
    if (!(theta > 0.0) || !std::isfinite(theta))
      return error("rope_theta must be positive and finite, found ", theta);
    if (q.getDimSize(3) % 2 != 0)
      return error("rotary embedding needs an even head dim, found ",
                   q.getDimSize(3));
  }
  inferred.push_back(RankedTensorType::get(
      {q.getDimSize(0), q.getDimSize(1), heads, v.getDimSize(3)},
      q.getElementType()));
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferAttention<AttentionOp>(loc, adaptor, inferred);
}

LogicalResult AttentionGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  SmallVector<Type> forward;
  if (failed(inferAttention<AttentionGradOp>(loc, adaptor, forward)))
    return failure();
  auto grad = typeOf(adaptor.getGrad());
  if (!grad)
    return failure();
  if (grad != forward.front())
    return ShapeErrors<AttentionGradOp>{loc}(
        "grad must have the attention result's type ", forward.front(),
        ", found ", grad);
  inferred.append({adaptor.getQuery().getType(), adaptor.getKey().getType(),
                   adaptor.getValue().getType()});
  return success();
}

/// Shared checks of the norms: [..., H] input, [H] affine parameters.
template <typename OpTy>
static LogicalResult inferNorm(std::optional<Location> loc, Value inputValue,
                               ArrayRef<Value> affine, double epsilon,
                               SmallVectorImpl<Type> &inferred) {
  ShapeErrors<OpTy> error{loc};
  auto input = typeOf(inputValue);
  if (!input)
    return failure();
  if (input.getRank() < 1)
    return error("input must have at least one dimension, found ", input);
  int64_t hidden = input.getShape().back();
  for (Value value : affine) {
    auto type = typeOf(value);
    if (!type)
      return failure();
    if (type.getRank() != 1 || type.getDimSize(0) != hidden)
      return error("scale and shift must be [", hidden, "], found ", type);
    if (failed(error.expectSameElementType({input, type})))
      return failure();
  }
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    return error("epsilon must be positive and finite, found ", epsilon);
  inferred.push_back(input);
  return success();
}

LogicalResult RMSNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferNorm<RMSNormOp>(loc, adaptor.getInput(), {adaptor.getGamma()},
                              adaptor.getEpsilon().convertToDouble(), inferred);
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferNorm<LayerNormOp>(loc, adaptor.getInput(),
                                {adaptor.getGamma(), adaptor.getBeta()},
                                adaptor.getEpsilon().convertToDouble(),
                                inferred);
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  ShapeErrors<TransposeOp> error{loc};
  auto input = typeOf(adaptor.getInput());
  if (!input)
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (static_cast<int64_t>(perm.size()) != input.getRank())
    return error("permutation has ", perm.size(), " entries but the input has "
                 "rank ", input.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= input.getRank() || seen[p])
      return error("[", perm,
                   "] is not a permutation of the input's dimensions");
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  ShapeErrors<CrossEntropyOp> error{loc};
  auto logits = typeOf(adaptor.getLogits());
  auto labels = typeOf(adaptor.getLabels());
  if (!logits || !labels)
    return failure();
  if (logits.getRank() < 1 || logits.getShape().drop_back() != labels.getShape())
    return error("labels must have the logits' shape without the vocabulary "
                 "dimension, found ", logits, " and ", labels);
  inferred.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

//===----------------------------------------------------------------------===//
// Mamba
//===----------------------------------------------------------------------===//

LogicalResult Conv1dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ShapeErrors<Conv1dOp> error{loc};
  auto input = typeOf(adaptor.getInput());
  auto weight = typeOf(adaptor.getWeight());
  auto bias = typeOf(adaptor.getBias());
  if (!input || !weight)
    return failure();
  if (failed(error.expectRank(input, 3, "input", "[batch, seq, channels]")) ||
      failed(error.expectRank(weight, 2, "weight", "[channels, kernel]")) ||
      failed(error.expectSameElementType({input, weight, bias})))
    return failure();
  int64_t channels = input.getDimSize(2);
  if (weight.getDimSize(0) != channels)
    return error("weight has ", weight.getDimSize(0),
                 " channels but the input has ", channels);
  if (weight.getDimSize(1) < 1)
    return error("kernel size must be at least 1, found ", weight.getDimSize(1));
  if (bias && (bias.getRank() != 1 || bias.getDimSize(0) != channels))
    return error("bias must be [", channels, "], found ", bias);
  inferred.push_back(input);
  return success();
}

LogicalResult SelectiveScanOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  ShapeErrors<SelectiveScanOp> error{loc};
  auto x = typeOf(adaptor.getInput());
  auto delta = typeOf(adaptor.getDelta());
  auto a = typeOf(adaptor.getA());
  auto b = typeOf(adaptor.getB());
  auto c = typeOf(adaptor.getC());
  auto d = typeOf(adaptor.getD());
  if (!x || !delta || !a || !b || !c || !d)
    return failure();
  if (failed(error.expectRank(x, 3, "input", "[batch, seq, channels]")) ||
      failed(error.expectSameElementType({x, delta, a, b, c, d})))
    return failure();
  int64_t batch = x.getDimSize(0), seq = x.getDimSize(1),
          channels = x.getDimSize(2);
  if (delta.getShape() != x.getShape())
    return error("delta must have the input's shape ", x, ", found ", delta);
  if (a.getRank() != 2 || a.getDimSize(0) != channels)
    return error("A must be [", channels, ", state], found ", a);
  int64_t state = a.getDimSize(1);
  SmallVector<int64_t> bcShape = {batch, seq, state};
  if (b.getShape() != ArrayRef<int64_t>(bcShape))
    return error("B must be [", batch, ", ", seq, ", ", state, "], found ", b);
  if (c.getShape() != ArrayRef<int64_t>(bcShape))
    return error("C must be [", batch, ", ", seq, ", ", state, "], found ", c);
  if (d.getRank() != 1 || d.getDimSize(0) != channels)
    return error("D must be [", channels, "], found ", d);
  inferred.push_back(x);
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult RouterOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ShapeErrors<RouterOp> error{loc};
  auto logits = typeOf(adaptor.getLogits());
  if (!logits)
    return failure();
  if (failed(error.expectRank(logits, 2, "logits", "[tokens, experts]")))
    return failure();
  int64_t k = adaptor.getTopK();
  if (k < 1 || k > logits.getDimSize(1))
    return error("top_k must lie in [1, ", logits.getDimSize(1),
                 "] (the number of experts), found ", k);
  SmallVector<int64_t> shape = {logits.getDimSize(0), k};
  inferred.push_back(RankedTensorType::get(shape, logits.getElementType()));
  inferred.push_back(
      RankedTensorType::get(shape, IntegerType::get(context, 32)));
  return success();
}

LogicalResult ExpertFFNOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  ShapeErrors<ExpertFFNOp> error{loc};
  auto x = typeOf(adaptor.getInput());
  auto up = typeOf(adaptor.getWUp());
  auto down = typeOf(adaptor.getWDown());
  auto gate = typeOf(adaptor.getWGate());
  if (!x || !up || !down)
    return failure();
  if (failed(error.expectRank(x, 3, "input", "[experts, capacity, hidden]")) ||
      failed(error.expectRank(up, 3, "w_up", "[experts, hidden, ffn]")) ||
      failed(error.expectSameElementType({x, up, down, gate})))
    return failure();
  int64_t experts = x.getDimSize(0), hidden = x.getDimSize(2),
          ffn = up.getDimSize(2);
  SmallVector<int64_t> upShape = {experts, hidden, ffn};
  SmallVector<int64_t> downShape = {experts, ffn, hidden};
  if (up.getShape() != ArrayRef<int64_t>(upShape))
    return error("w_up must be [", experts, ", ", hidden, ", ffn], found ", up);
  if (down.getShape() != ArrayRef<int64_t>(downShape))
    return error("w_down must be [", experts, ", ", ffn, ", ", hidden,
                 "], found ", down);
  if (gate && gate.getShape() != up.getShape())
    return error("w_gate must have w_up's shape ", up, ", found ", gate);
  inferred.push_back(x);
  return success();
}

LogicalResult CombineOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  ShapeErrors<CombineOp> error{loc};
  auto experts = typeOf(adaptor.getExpertOutput());
  auto weights = typeOf(adaptor.getWeights());
  auto indices = typeOf(adaptor.getIndices());
  if (!experts || !weights || !indices)
    return failure();
  if (failed(error.expectRank(experts, 3, "expert output",
                              "[experts, capacity, hidden]")) ||
      failed(error.expectRank(weights, 2, "weights", "[tokens, k]")) ||
      failed(error.expectSameElementType({experts, weights})))
    return failure();
  if (indices.getShape() != weights.getShape())
    return error("indices must have the weights' shape ", weights, ", found ",
                 indices);
  if (failed(error.expectMoeGroups(weights.getDimSize(0),
                                   experts.getDimSize(1),
                                   adaptor.getGroupSize())))
    return failure();
  inferred.push_back(RankedTensorType::get(
      {weights.getDimSize(0), experts.getDimSize(2)},
      experts.getElementType()));
  return success();
}

LogicalResult BiasAddOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  ShapeErrors<BiasAddOp> error{loc};
  auto input = typeOf(adaptor.getInput());
  auto bias = typeOf(adaptor.getBias());
  if (!input || !bias)
    return failure();
  if (failed(error.expectSameElementType({input, bias})))
    return failure();
  if (bias.getRank() > input.getRank() ||
      input.getShape().take_back(bias.getRank()) != bias.getShape())
    return error("bias shape ", bias, " is not a suffix of the input's ",
                 input);
  inferred.push_back(input);
  return success();
}
