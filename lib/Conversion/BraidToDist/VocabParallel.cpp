//===- VocabParallel.cpp - vocabulary-parallel embedding and loss ----------===//
//
// An embedding or cross-entropy over this rank's rows of the vocabulary
// (`vocab_axes`, the rank holding rows [c V, (c + 1) V) for its coordinate
// c over the axes in the listed order) becomes the pieces of
// BraidVocabShardOps.td and the all-reduces between them:
//
// - The embedding looks up the tokens in its rows (zeros for the others;
//   the partitioner's all-reduce sums the ranks' lookups); its gradient
//   scatters into its rows.
// - The cross-entropy and its gradient compute the softmax statistics of
//   each row: the maximum over this rank's valid columns, all-reduced by
//   max; then the sum of exponentials and the label's logit, all-reduced by
//   sum; the loss or the logits' cotangent follow from them.
//
// A cross-entropy whose vocabulary is whole but whose rows are a share of
// the batch (`denominator`) or whose columns include padding
// (`vocab_size`) takes the same pieces at offset 0, without transfers.
//
//===----------------------------------------------------------------------===//

#include "BraidToDist.h"

#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::braid;

namespace braid::conversion {

bool isVocabParallel(Operation *op) {
  return TypeSwitch<Operation *, bool>(op)
      .Case<EmbeddingOp, EmbeddingGradOp>(
          [](auto e) { return e.getVocabAxes().has_value(); })
      .Case<CrossEntropyOp, CrossEntropyGradOp>([](auto c) {
        return c.getVocabAxes() || c.getVocabSize() || c.getDenominator();
      })
      .Default([](Operation *) { return false; });
}

namespace {

struct VocabLowering {
  Operation *op;
  OpBuilder b;
  Location loc;
  std::optional<GridGroup> group;

  explicit VocabLowering(Operation *op)
      : op(op), b(op), loc(unnamed(op->getLoc())) {}

  LogicalResult init(ArrayAttr axes) {
    if (!axes)
      return success();
    FailureOr<GridGroup> g =
        getGridGroup(op, axes, [&] { return op->emitError(); });
    if (failed(g))
      return failure();
    group = *g;
    return success();
  }
  /// The first vocabulary row this rank holds, of `rows` per rank.
  Value offset(int64_t rows) {
    if (!group)
      return arith::ConstantIndexOp::create(b, loc, 0);
    return arith::MulIOp::create(b, loc, buildCoordinate(b, loc, op, *group),
                                 arith::ConstantIndexOp::create(b, loc, rows));
  }
  /// `x` reduced over the vocabulary's ranks (in grid order, which a
  /// reduction does not depend on).
  Value allReduce(Value x, dist::ReductionKind kind) {
    if (!group)
      return x;
    SmallVector<int16_t> axes(group->positions.begin(), group->positions.end());
    llvm::sort(axes);
    auto r = dist::AllReduceOp::create(
        b, loc, x.getType(), dist::TokenType::get(b.getContext()), x,
        FlatSymbolRefAttr::get(getProgramGrid(op).getSymNameAttr()),
        b.getDenseI16ArrayAttr(axes),
        dist::ReductionKindAttr::get(b.getContext(), kind));
    dist::WaitOp::create(b, loc, ValueRange{r.getToken()});
    return r.getResult();
  }
  void replace(Value result) { replaceLowered(op, result); }

  LogicalResult lower(EmbeddingOp e) {
    if (e.getPositionTable())
      return e.emitError("a vocabulary-parallel embedding has no position "
                         "table (partitioning adds positions with "
                         "braid.bias_add)");
    int64_t rows = cast<RankedTensorType>(e.getTable().getType()).getDimSize(0);
    replace(EmbeddingShardOp::create(b, loc, e.getType(), e.getTokens(),
                                     e.getTable(), offset(rows)));
    return success();
  }

  LogicalResult lower(EmbeddingGradOp e) {
    int64_t rows = cast<RankedTensorType>(e.getType()).getDimSize(0);
    replace(EmbeddingGradShardOp::create(b, loc, e.getType(), e.getTokens(),
                                         e.getGrad(), offset(rows)));
    return success();
  }

  /// The reduced statistics of every row: its maximum and (sum of
  /// exponentials, label logit).
  struct Stats {
    Value rowMax, stats, offset;
    int64_t valid, denominator;
  };
  template <typename CE> Stats statistics(CE c) {
    auto logits = cast<RankedTensorType>(c.getLogits().getType());
    int64_t vocab = logits.getShape().back();
    int64_t rows = logits.getNumElements() / vocab;
    Stats s;
    s.offset = offset(vocab);
    s.valid = c.getVocabSize().value_or(group ? vocab * group->size() : vocab);
    s.denominator = c.getDenominator().value_or(rows);
    SmallVector<int64_t> rowShape(logits.getShape().drop_back());
    auto rowType = RankedTensorType::get(rowShape, b.getF32Type());
    s.rowMax = allReduce(CrossEntropyRowMaxOp::create(b, loc, rowType,
                                                       c.getLogits(), s.offset,
                                                       s.valid),
                         dist::ReductionKind::Max);
    rowShape.push_back(2);
    s.stats = allReduce(
        CrossEntropyStatsOp::create(
            b, loc, RankedTensorType::get(rowShape, b.getF32Type()),
            c.getLogits(), c.getLabels(), s.rowMax, s.offset, s.valid),
        dist::ReductionKind::Sum);
    return s;
  }

  LogicalResult lower(CrossEntropyOp c) {
    Stats s = statistics(c);
    replace(CrossEntropyFromStatsOp::create(b, loc, c.getType(), s.rowMax,
                                            s.stats, s.denominator));
    return success();
  }

  LogicalResult lower(CrossEntropyGradOp c) {
    Stats s = statistics(c);
    replace(CrossEntropyGradShardOp::create(
        b, loc, c.getType(), c.getLogits(), c.getLabels(), s.rowMax, s.stats,
        c.getGrad(), s.offset, s.valid, s.denominator));
    return success();
  }
};

} // namespace

LogicalResult lowerVocabParallel(Operation *op) {
  VocabLowering l(op);
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<EmbeddingOp, EmbeddingGradOp, CrossEntropyOp, CrossEntropyGradOp>(
          [&](auto o) -> LogicalResult {
            if (failed(l.init(o.getVocabAxesAttr())))
              return failure();
            return l.lower(o);
          })
      .Default([](Operation *o) {
        return o->emitError("not a vocabulary-parallel op");
      });
}

} // namespace braid::conversion
