//===- ShardingRules.cpp - how each braid op's dimensions may be split ----===//
//
// One rule per forward op, in the manner of Shardy's op sharding rules: the
// op's loops ("factors") and the tensor dimensions each one indexes. The
// propagation unites the dimensions of a factor; the partitioner splits a
// factor over the axes its dimensions carry, leaves results partial over
// the axes of split reduction factors, and gathers dimensions of `Whole`
// factors the op needs entire (attention's sequence, a norm's features).
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Sharding.h"

#include "dialects/braid/IR/BraidOps.h"

#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::braid;

namespace {
/// Builds a rule with tensors named by value (operands and results).
struct RuleBuilder {
  Operation *op;
  ShardingRule rule;

  explicit RuleBuilder(Operation *op) : op(op) {
    rule.numOperands = op->getNumOperands();
  }
  /// Every position of `v` among the op's tensors: an op may take one
  /// value as several operands (`layer_norm %x, %g, %g`), and each position
  /// has the dimensions the op gives it.
  SmallVector<unsigned> tensorsOf(Value v) const {
    SmallVector<unsigned> positions;
    for (OpOperand &operand : op->getOpOperands())
      if (operand.get() == v)
        positions.push_back(operand.getOperandNumber());
    for (OpResult result : op->getResults())
      if (result == v)
        positions.push_back(rule.numOperands + result.getResultNumber());
    assert(!positions.empty() && "not a tensor of the op");
    return positions;
  }
  static int64_t rankOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  }
  /// A factor over (value, dim) pairs; null values (absent optional
  /// operands) are skipped.
  void add(FactorKind kind, ArrayRef<std::pair<Value, int64_t>> dims) {
    Factor factor{kind, {}};
    for (auto [v, d] : dims)
      if (v)
        for (unsigned t : tensorsOf(v))
          factor.dims.push_back({t, static_cast<unsigned>(d)});
    rule.factors.push_back(std::move(factor));
  }
  /// Every operand and result has the same shape; one factor per dimension.
  void elementwise() {
    int64_t rank = rankOf(op->getResult(0));
    for (int64_t d = 0; d < rank; ++d) {
      Factor factor{FactorKind::Parallel, {}};
      for (unsigned t = 0; t < op->getNumOperands() + op->getNumResults(); ++t)
        factor.dims.push_back({t, static_cast<unsigned>(d)});
      rule.factors.push_back(std::move(factor));
    }
  }
  /// The leading dimensions [0, n) of `a` and `b` correspond one to one.
  void leading(Value a, Value b, int64_t n, FactorKind kind = FactorKind::Parallel) {
    for (int64_t d = 0; d < n; ++d)
      add(kind, {{a, d}, {b, d}});
  }
};

/// Reshape: dimensions grouped into runs of equal element count; the major
/// (first non-unit) dimensions of a run form one factor, the others none.
ShardingRule reshapeRule(ReshapeOp op) {
  RuleBuilder r(op);
  ArrayRef<int64_t> in = op.getInput().getType().getShape();
  ArrayRef<int64_t> out = op.getResult().getType().getShape();
  unsigned i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    // Unit dimensions are groups of their own.
    if (i < in.size() && in[i] == 1) {
      ++i;
      continue;
    }
    if (j < out.size() && out[j] == 1) {
      ++j;
      continue;
    }
    if (i >= in.size() || j >= out.size())
      break;
    unsigned i0 = i++, j0 = j++;
    int64_t a = in[i0], b = out[j0];
    while (a != b) {
      if (a < b && i < in.size())
        a *= in[i++];
      else if (b < a && j < out.size())
        b *= out[j++];
      else
        break;
    }
    // The major dimensions share a factor when the smaller of the two
    // divides the other (the split then cuts both into whole rows).
    int64_t small = std::min(in[i0], out[j0]), large = std::max(in[i0], out[j0]);
    if (large % small == 0)
      r.add(FactorKind::Parallel, {{op.getInput(), i0}, {op.getResult(), j0}});
  }
  return r.rule;
}

/// The rule of an op Braid does not know that implements upstream MLIR's
/// `shard::ShardingInterface` (its loops' kinds and indexing maps), the way
/// a user's own op or an upstream one gets a sharding rule: a parallel loop
/// is a parallel factor, a sum is a reduction, any other reduction must stay
/// whole. A tensor dimension indexed by anything but one loop belongs to no
/// factor (it is not split).
std::optional<ShardingRule> ruleFromShardingInterface(Operation *op) {
  auto sharding = dyn_cast<shard::ShardingInterface>(op);
  if (!sharding)
    return std::nullopt;
  SmallVector<utils::IteratorType> loops = sharding.getLoopIteratorTypes();
  SmallVector<shard::ReductionKind> reductions =
      sharding.getReductionLoopIteratorKinds();
  SmallVector<AffineMap> maps = sharding.getIndexingMaps();
  unsigned numTensors = op->getNumOperands() + op->getNumResults();
  if (loops.empty() || maps.size() != numTensors)
    return std::nullopt;
  ShardingRule rule;
  rule.numOperands = op->getNumOperands();
  unsigned reduction = 0;
  for (auto [loop, type] : llvm::enumerate(loops)) {
    Factor factor{FactorKind::Parallel, {}};
    if (type == utils::IteratorType::reduction) {
      bool sum = reduction < reductions.size() &&
                 reductions[reduction] == shard::ReductionKind::Sum;
      factor.kind = sum ? FactorKind::Reduction : FactorKind::Whole;
      ++reduction;
    }
    for (auto [t, map] : llvm::enumerate(maps))
      for (auto [d, expr] : llvm::enumerate(map.getResults()))
        if (auto dim = dyn_cast<AffineDimExpr>(expr);
            dim && dim.getPosition() == loop)
          factor.dims.push_back(
              {static_cast<unsigned>(t), static_cast<unsigned>(d)});
    rule.factors.push_back(std::move(factor));
  }
  return rule;
}
} // namespace

FailureOr<ShardingRule> mlir::braid::getShardingRule(Operation *op,
                                                     bool report) {
  RuleBuilder r(op);
  using P = std::pair<Value, int64_t>;
  const auto parallel = FactorKind::Parallel, reduction = FactorKind::Reduction,
             whole = FactorKind::Whole;
  bool known =
      TypeSwitch<Operation *, bool>(op)
          .Case<AddOp, MulOp, GluOp, SiluOp, GeluOp, SigmoidOp, ReluOp, ExpOp,
                NegOp, ConvertOp>([&](Operation *) {
            r.elementwise();
            return true;
          })
          .Case([&](ReshapeOp reshape) {
            r.rule = reshapeRule(reshape);
            return true;
          })
          .Case([&](TransposeOp t) {
            for (auto [d, p] : llvm::enumerate(t.getPermutation()))
              r.add(parallel, {P{t.getInput(), p}, P{t.getResult(), d}});
            return true;
          })
          .Case([&](BiasAddOp a) {
            int64_t rank = RuleBuilder::rankOf(a.getInput());
            int64_t offset = rank - RuleBuilder::rankOf(a.getBias());
            for (int64_t d = 0; d < rank; ++d)
              r.add(parallel, {P{a.getInput(), d}, P{a.getResult(), d},
                               P{d >= offset ? a.getBias() : Value(), d - offset}});
            return true;
          })
          .Case([&](LinearOp l) {
            int64_t rank = RuleBuilder::rankOf(l.getInput());
            bool t = l.getTransposeWeight();
            r.leading(l.getInput(), l.getResult(), rank - 1);
            r.add(reduction, {P{l.getInput(), rank - 1}, P{l.getWeight(), t ? 1 : 0}});
            r.add(parallel, {P{l.getWeight(), t ? 0 : 1}, P{l.getBias(), 0},
                             P{l.getResult(), rank - 1}});
            return true;
          })
          .Case([&](BatchMatmulOp m) {
            int64_t rank = RuleBuilder::rankOf(m.getLhs());
            bool ta = m.getTransposeA(), tb = m.getTransposeB();
            for (int64_t d = 0; d < rank - 2; ++d)
              r.add(parallel, {P{m.getLhs(), d}, P{m.getRhs(), d}, P{m.getResult(), d}});
            r.add(parallel, {P{m.getLhs(), ta ? rank - 1 : rank - 2},
                             P{m.getResult(), rank - 2}});
            r.add(parallel, {P{m.getRhs(), tb ? rank - 2 : rank - 1},
                             P{m.getResult(), rank - 1}});
            r.add(reduction, {P{m.getLhs(), ta ? rank - 2 : rank - 1},
                              P{m.getRhs(), tb ? rank - 1 : rank - 2}});
            return true;
          })
          .Case([&](AttentionOp a) {
            Value q = a.getQuery(), k = a.getKey(), v = a.getValue(),
                  o = a.getResult();
            r.add(parallel, {P{q, 0}, P{k, 0}, P{v, 0}, P{o, 0}});
            r.add(whole, {P{q, 1}, P{o, 1}});
            r.add(whole, {P{k, 1}, P{v, 1}});
            // Query heads and key/value heads are factors of their own:
            // split alike when tp divides both, but with fewer key/value
            // heads than ranks each rank takes its query heads' group.
            r.add(parallel, {P{q, 2}, P{o, 2}});
            r.add(parallel, {P{k, 2}, P{v, 2}});
            r.add(whole, {P{q, 3}, P{k, 3}});
            r.add(whole, {P{v, 3}, P{o, 3}});
            return true;
          })
          // Rows split freely; the normalized (last) dimension stays whole.
          .Case<RMSNormOp, LayerNormOp, SoftmaxOp>([&](Operation *norm) {
            Value x = norm->getOperand(0), y = norm->getResult(0);
            int64_t rank = RuleBuilder::rankOf(x);
            r.leading(x, y, rank - 1);
            SmallVector<P> features = {P{x, rank - 1}, P{y, rank - 1}};
            for (Value affine : norm->getOperands().drop_front())
              features.push_back(P{affine, 0});
            r.add(whole, features);
            return true;
          })
          .Case([&](EmbeddingOp e) {
            Value tok = e.getTokens(), y = e.getResult(),
                  pos = e.getPositionTable();
            int64_t rank = RuleBuilder::rankOf(tok);
            int64_t seq = cast<RankedTensorType>(tok.getType()).getShape().back();
            for (int64_t d = 0; d < rank; ++d) {
              bool positions = d == rank - 1 && pos &&
                               cast<RankedTensorType>(pos.getType()).getDimSize(0) == seq;
              r.add(parallel, {P{tok, d}, P{y, d}, P{positions ? pos : Value(), 0}});
            }
            r.add(reduction, {P{e.getTable(), 0}});
            r.add(parallel, {P{e.getTable(), 1}, P{pos, 1}, P{y, rank}});
            return true;
          })
          .Case([&](CrossEntropyOp c) {
            int64_t rank = RuleBuilder::rankOf(c.getLabels());
            // Rows are summed into the 0-d loss: a split batch leaves the
            // loss partial. The vocabulary is reduced inside the op.
            r.leading(c.getLogits(), c.getLabels(), rank, reduction);
            r.add(FactorKind::Vocab, {P{c.getLogits(), rank}});
            return true;
          })
          .Case([&](Conv1dOp c) {
            Value x = c.getInput(), y = c.getResult();
            r.add(parallel, {P{x, 0}, P{y, 0}});
            r.add(FactorKind::Sequence, {P{x, 1}, P{y, 1}});
            r.add(parallel, {P{x, 2}, P{c.getWeight(), 0}, P{c.getBias(), 0}, P{y, 2}});
            r.add(whole, {P{c.getWeight(), 1}});
            return true;
          })
          .Case([&](SelectiveScanOp s) {
            Value x = s.getInput(), dt = s.getDelta(), B = s.getB(),
                  C = s.getC(), y = s.getResult();
            r.add(parallel, {P{x, 0}, P{dt, 0}, P{B, 0}, P{C, 0}, P{y, 0}});
            r.add(FactorKind::Sequence, {P{x, 1}, P{dt, 1}, P{B, 1}, P{C, 1}, P{y, 1}});
            r.add(parallel, {P{x, 2}, P{dt, 2}, P{s.getA(), 0}, P{s.getD(), 0},
                             P{y, 2}});
            r.add(whole, {P{s.getA(), 1}, P{B, 2}, P{C, 2}});
            return true;
          })
          .Case([&](RouterOp router) {
            r.add(parallel, {P{router.getLogits(), 0}, P{router.getWeights(), 0},
                             P{router.getIndices(), 0}});
            r.add(whole, {P{router.getLogits(), 1}});
            r.add(whole, {P{router.getWeights(), 1}, P{router.getIndices(), 1}});
            return true;
          })
          .Case([&](DispatchOp d) {
            // Tokens map to capacity slots: a shard of the tokens fills its
            // own slots (capacity per shard, as GShard and Megatron do).
            r.add(parallel, {P{d.getInput(), 0}, P{d.getIndices(), 0},
                             P{d.getResult(), 1}});
            r.add(parallel, {P{d.getInput(), 1}, P{d.getResult(), 2}});
            r.add(whole, {P{d.getResult(), 0}});
            r.add(whole, {P{d.getIndices(), 1}});
            return true;
          })
          .Case([&](ExpertFFNOp f) {
            Value in = f.getInput(), up = f.getWUp(), down = f.getWDown(),
                  gate = f.getWGate(), out = f.getResult();
            r.add(parallel, {P{in, 0}, P{up, 0}, P{down, 0}, P{gate, 0}, P{out, 0}});
            r.add(parallel, {P{in, 1}, P{out, 1}});
            r.add(whole, {P{in, 2}, P{up, 1}, P{gate, 1}});
            r.add(reduction, {P{up, 2}, P{gate, 2}, P{down, 1}});
            r.add(parallel, {P{down, 2}, P{out, 2}});
            return true;
          })
          .Case([&](CombineOp c) {
            Value eo = c.getExpertOutput(), out = c.getResult();
            r.add(whole, {P{eo, 0}});
            r.add(parallel, {P{eo, 1}, P{c.getWeights(), 0}, P{c.getIndices(), 0},
                             P{out, 0}});
            r.add(parallel, {P{eo, 2}, P{out, 1}});
            r.add(whole, {P{c.getWeights(), 1}, P{c.getIndices(), 1}});
            return true;
          })
          .Default([&](Operation *) {
            std::optional<ShardingRule> rule = ruleFromShardingInterface(op);
            if (rule)
              r.rule = std::move(*rule);
            return rule.has_value();
          });
  if (!known) {
    if (report)
      op->emitError("no sharding rule for '") << op->getName() << "'";
    return failure();
  }
  return r.rule;
}
