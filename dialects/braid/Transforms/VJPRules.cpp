//===- VJPRules.cpp - vector-Jacobian products of braid ops ---------------===//
//
// One rule per op. Rules express cotangents with forward ops where that is
// exact (linear and matmul backward are matmuls with transposed operands,
// reshape and transpose invert themselves, elementwise ops are elementwise)
// and with the dedicated *_grad ops otherwise.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/VJPRules.h"
#include "dialects/braid/Transforms/Sharding.h"

#include "dialects/braid/IR/BraidOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::braid;

bool mlir::braid::isDifferentiable(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

Value mlir::braid::createActivation(OpBuilder &b, Location loc, int activation,
                                    Value x) {
  switch (static_cast<Activation>(activation)) {
  case Activation::SiLU:
    return SiluOp::create(b, loc, x);
  case Activation::GELU:
    return GeluOp::create(b, loc, x, /*approximate=*/false);
  case Activation::GELUTanh:
    return GeluOp::create(b, loc, x, /*approximate=*/true);
  case Activation::Sigmoid:
    return SigmoidOp::create(b, loc, x);
  case Activation::ReLU:
    return ReluOp::create(b, loc, x);
  }
  llvm_unreachable("unknown activation");
}

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// `value` viewed as [rows, last].
static Value asMatrix(OpBuilder &b, Location loc, Value value) {
  auto type = tensorType(value);
  int64_t last = type.getShape().back();
  auto matrix = RankedTensorType::get({type.getNumElements() / last, last},
                                      type.getElementType());
  if (matrix == type)
    return value;
  return ReshapeOp::create(b, loc, matrix, value);
}

/// Cotangents of C = op(A) op(B) (transposes as given).
static SmallVector<Value> matmulVJP(OpBuilder &b, Location loc, Value a,
                                    Value bm, bool ta, bool tb, Value dc) {
  Value da = ta ? BatchMatmulOp::create(b, loc, bm, dc, tb, true).getResult()
                : BatchMatmulOp::create(b, loc, dc, bm, false, !tb).getResult();
  Value db = tb ? BatchMatmulOp::create(b, loc, dc, a, true, ta).getResult()
                : BatchMatmulOp::create(b, loc, a, dc, !ta, false).getResult();
  return {da, db};
}

/// The program's grid (Sharding.h), or a located error.
static FailureOr<Grid> gridOf(Operation *op) {
  FailureOr<std::optional<Grid>> grid =
      Grid::of(op->getParentOfType<ModuleOp>());
  if (failed(grid))
    return failure();
  if (*grid)
    return **grid;
  return op->emitError("a collective or sharded op, but the module has no "
                       "shard.grid with braid.axes");
}

FailureOr<SmallVector<Value>>
mlir::braid::emitVJP(OpBuilder &b, Location loc, Operation *op,
                     ArrayRef<Value> resultCotangents) {
  Value dy = resultCotangents.empty() ? Value() : resultCotangents.front();
  SmallVector<Value> none(op->getNumOperands(), Value());
  return TypeSwitch<Operation *, FailureOr<SmallVector<Value>>>(op)
      // Layout and elementwise.
      .Case([&](ReshapeOp r) -> SmallVector<Value> {
        return {ReshapeOp::create(b, loc, r.getInput().getType(), dy)};
      })
      .Case([&](TransposeOp t) -> SmallVector<Value> {
        ArrayRef<int64_t> perm = t.getPermutation();
        SmallVector<int64_t> inverse(perm.size());
        for (auto [i, p] : llvm::enumerate(perm))
          inverse[p] = i;
        return {TransposeOp::create(b, loc, dy, inverse)};
      })
      .Case([&](AddOp) -> SmallVector<Value> { return {dy, dy}; })
      .Case([&](ConvertOp c) -> SmallVector<Value> {
        return {ConvertOp::create(b, loc, c.getInput().getType(), dy)};
      })
      .Case([&](MulOp m) -> SmallVector<Value> {
        return {MulOp::create(b, loc, dy, m.getRhs()),
                MulOp::create(b, loc, dy, m.getLhs())};
      })
      .Case([&](NegOp) -> SmallVector<Value> {
        return {NegOp::create(b, loc, dy)};
      })
      .Case([&](ExpOp e) -> SmallVector<Value> {
        return {MulOp::create(b, loc, dy, e.getResult())};
      })
      .Case([&](SiluOp s) -> SmallVector<Value> {
        return {ActivationGradOp::create(b, loc, Activation::SiLU, s.getInput(), dy)};
      })
      .Case([&](SigmoidOp s) -> SmallVector<Value> {
        return {ActivationGradOp::create(b, loc, Activation::Sigmoid, s.getInput(), dy)};
      })
      .Case([&](ReluOp s) -> SmallVector<Value> {
        return {ActivationGradOp::create(b, loc, Activation::ReLU, s.getInput(), dy)};
      })
      .Case([&](GeluOp g) -> SmallVector<Value> {
        return {ActivationGradOp::create(
            b, loc, g.getApproximate() ? Activation::GELUTanh : Activation::GELU,
            g.getInput(), dy)};
      })
      .Case([&](GluOp g) -> SmallVector<Value> {
        // y = act(gate) * up: d up = dy act(gate), d gate = act'(gate) dy up.
        Value act = createActivation(b, loc, static_cast<int>(g.getActivation()),
                                     g.getGate());
        Value dup = MulOp::create(b, loc, dy, act);
        Value dgate = ActivationGradOp::create(
            b, loc, g.getActivation(), g.getGate(),
            MulOp::create(b, loc, dy, g.getUp()));
        return {dgate, dup};
      })
      // Matrix products.
      .Case([&](LinearOp l) -> SmallVector<Value> {
        bool t = l.getTransposeWeight();
        // dx = dy W^T: the weight read the other way round.
        Value dx = LinearOp::create(b, loc, dy, l.getWeight(), Value(), !t);
        Value x2 = asMatrix(b, loc, l.getInput());
        Value dy2 = asMatrix(b, loc, dy);
        Value dw = t ? BatchMatmulOp::create(b, loc, dy2, x2, true, false)
                     : BatchMatmulOp::create(b, loc, x2, dy2, true, false);
        SmallVector<Value> grads = {dx, dw};
        if (l.getBias())
          grads.push_back(SumRowsOp::create(b, loc, dy));
        return grads;
      })
      .Case([&](BatchMatmulOp m) -> SmallVector<Value> {
        return matmulVJP(b, loc, m.getLhs(), m.getRhs(), m.getTransposeA(),
                         m.getTransposeB(), dy);
      })
      .Case([&](AttentionOp a) -> SmallVector<Value> {
        auto grad = AttentionGradOp::create(
            b, loc, a.getQuery(), a.getKey(), a.getValue(), dy, a.getCausal(),
            a.getScaleAttr(), a.getRopeThetaAttr(), a.getQueryOffsetAxesAttr(),
            a.getRingAxesAttr(), a.getSequenceZigzagAttr());
        return {grad.getDquery(), grad.getDkey(), grad.getDvalue()};
      })
      // Norms and embeddings.
      .Case([&](RMSNormOp n) -> SmallVector<Value> {
        auto grad = RMSNormGradOp::create(b, loc, n.getInput(), n.getGamma(),
                                          dy, n.getEpsilonAttr());
        return {grad.getDinput(), grad.getDgamma()};
      })
      .Case([&](SoftmaxOp s) -> SmallVector<Value> {
        // From the result, which the forward keeps: no recomputed exp.
        return {SoftmaxGradOp::create(b, loc, s.getResult(), dy)};
      })
      .Case([&](LayerNormOp n) -> SmallVector<Value> {
        auto grad = LayerNormGradOp::create(b, loc, n.getInput(), n.getGamma(),
                                            dy, n.getEpsilonAttr());
        return {grad.getDinput(), grad.getDgamma(), grad.getDbeta()};
      })
      .Case([&](EmbeddingOp e) -> SmallVector<Value> {
        SmallVector<Value> grads = {
            Value(), EmbeddingGradOp::create(b, loc, e.getTable().getType(),
                                             e.getTokens(), dy,
                                             e.getVocabAxesAttr())};
        if (e.getPositionTable())
          grads.push_back(PositionGradOp::create(
              b, loc, e.getPositionTable().getType(), dy));
        return grads;
      })
      .Case([&](CrossEntropyOp c) -> FailureOr<SmallVector<Value>> {
        // Split over a vocabulary, every rank's loss depends on every
        // shard of the logits (through the op's internal reductions): the
        // cotangent of this shard sums the ranks' loss cotangents.
        if (ArrayAttr axes = c.getVocabAxesAttr()) {
          FailureOr<Grid> grid = gridOf(c);
          if (failed(grid))
            return failure();
          AxisList group;
          for (Attribute axis : axes) {
            std::optional<int16_t> index =
                grid->find(cast<StringAttr>(axis).getValue());
            if (!index)
              return c.emitError("grid @") << grid->symbol << " has no axis " << axis;
            group.push_back(*index);
          }
          llvm::sort(group);
          dy = shard::AllReduceOp::create(b, loc, dy.getType(), grid->symbol,
                                          group, dy);
        }
        return SmallVector<Value>{
            CrossEntropyGradOp::create(
                    b, loc, c.getLogits(), c.getLabels(), dy,
                    c.getVocabAxesAttr(), c.getVocabSizeAttr(),
                    c.getDenominatorAttr()),
                Value()};
      })
      .Case([&](BiasAddOp a) -> SmallVector<Value> {
        // The bias's cotangent sums dy over the leading dimensions.
        auto bias = tensorType(a.getBias());
        int64_t n = bias.getNumElements();
        auto matrix = RankedTensorType::get(
            {tensorType(dy).getNumElements() / n, n}, bias.getElementType());
        Value rows = ReshapeOp::create(b, loc, matrix, dy);
        Value db = SumRowsOp::create(b, loc, rows);
        if (db.getType() != bias)
          db = ReshapeOp::create(b, loc, bias, db);
        return {dy, db};
      })
      // Collectives, under the SPMD convention that the per-rank objectives
      // sum to the loss: each rank's cotangent of a value is its share of the
      // whole cotangent. The transpose of a sum over ranks is then a sum over
      // ranks, of a gather a reduce-scatter and back, of an all-to-all the
      // inverse all-to-all, and of a slice placing the slice into zeros.
      .Case([&](shard::AllReduceOp r) -> FailureOr<SmallVector<Value>> {
        if (r.getReduction() != shard::ReductionKind::Sum)
          return r.emitError("no vector-Jacobian product for an all-reduce "
                             "other than a sum");
        return SmallVector<Value>{shard::AllReduceOp::create(
            b, loc, dy.getType(), r.getGrid(), r.getGridAxes(), dy)};
      })
      .Case([&](shard::AllGatherOp g) -> SmallVector<Value> {
        return {shard::ReduceScatterOp::create(
            b, loc, g.getInput().getType(), g.getGridAttr(),
            g.getGridAxesAttr(), dy,
            shard::ReductionKindAttr::get(b.getContext(),
                                          shard::ReductionKind::Sum),
            g.getGatherAxisAttr())};
      })
      .Case([&](shard::ReduceScatterOp r) -> SmallVector<Value> {
        return {shard::AllGatherOp::create(
            b, loc, r.getInput().getType(), r.getGridAttr(),
            r.getGridAxesAttr(), dy, r.getScatterAxisAttr())};
      })
      .Case([&](shard::AllToAllOp a) -> SmallVector<Value> {
        return {shard::AllToAllOp::create(
            b, loc, a.getInput().getType(), a.getGridAttr(),
            a.getGridAxesAttr(), dy, a.getConcatAxisAttr(),
            a.getSplitAxisAttr())};
      })
      .Case([&](SliceOp s) -> SmallVector<Value> {
        return {UnsliceOp::create(b, loc, s.getInput().getType(), dy,
                                  s.getAxes(), s.getDim(), s.getReplicas())};
      })
      .Case([&](shard::AllSliceOp s) -> FailureOr<SmallVector<Value>> {
        FailureOr<Grid> grid = gridOf(s);
        if (failed(grid))
          return failure();
        return SmallVector<Value>{UnsliceOp::create(
            b, loc, s.getInput().getType(), dy,
            grid->nameAttr(b.getContext(), s.getGridAxes()),
            s.getSliceAxisAttr().getInt(), /*replicas=*/1)};
      })
      // Mamba.
      .Case([&](Conv1dOp c) -> SmallVector<Value> {
        auto grad = Conv1dGradOp::create(b, loc, c.getInput(), c.getWeight(),
                                         dy, c.getContextAxesAttr());
        SmallVector<Value> grads = {grad.getDinput(), grad.getDweight()};
        if (c.getBias())
          grads.push_back(grad.getDbias());
        return grads;
      })
      .Case([&](SelectiveScanOp s) -> SmallVector<Value> {
        auto grad = SelectiveScanGradOp::create(
            b, loc, s.getInput(), s.getDelta(), s.getA(), s.getB(), s.getC(),
            s.getD(), dy, s.getDeltaSoftplus(), s.getContextAxesAttr());
        return {grad.getDinput(), grad.getDdelta(), grad.getDA(),
                grad.getDB(), grad.getDC(), grad.getDD()};
      })
      // Mixture of experts: selections (indices, slots) are held fixed.
      .Case([&](RouterOp r) -> SmallVector<Value> {
        Value dweights = resultCotangents[0];
        if (!dweights)
          return {Value()};
        return {RouterGradOp::create(b, loc, r.getLogits(), r.getIndices(),
                                     dweights, r.getNormalize())};
      })
      .Case([&](DispatchOp d) -> SmallVector<Value> {
        return {DispatchGradOp::create(b, loc, dy, d.getIndices(),
                                       d.getGroupSizeAttr()),
                Value()};
      })
      .Case([&](CombineOp c) -> SmallVector<Value> {
        auto grad = CombineGradOp::create(b, loc, c.getExpertOutput(),
                                          c.getWeights(), c.getIndices(), dy,
                                          c.getGroupSizeAttr());
        return {grad.getDexpertOutput(), grad.getDweights(), Value()};
      })
      .Case([&](ExpertFFNOp f) -> FailureOr<SmallVector<Value>> {
        return f.emitError("autodiff needs expert FFNs expanded first "
                           "(--braid-expand-expert-ffn)");
      })
      .Default([&](Operation *other) -> FailureOr<SmallVector<Value>> {
        return other->emitError("no vector-Jacobian product for '")
               << other->getName() << "'";
      });
}
