//===- BraidVocabShardOps.cpp - verifiers of vocabulary-parallel pieces ---===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/VerifierHelpers.h"

using namespace mlir;
using namespace mlir::braid;
using mlir::braid::detail::expectShape;
using mlir::braid::detail::shapeOf;

namespace {
SmallVector<int64_t> append(ArrayRef<int64_t> shape, int64_t last) {
  SmallVector<int64_t> out(shape);
  out.push_back(last);
  return out;
}

/// logits [..., V], labels [...], and what a row's statistics are.
LogicalResult verifyRows(Operation *op, Value logits, Value labels,
                         int64_t valid) {
  auto l = shapeOf(logits);
  if (l.empty())
    return op->emitOpError("logits need a vocabulary dimension");
  if (valid < 0)
    return op->emitOpError("valid must be a column count (>= 0), found ")
           << valid;
  if (labels && shapeOf(labels) != l.drop_back())
    return op->emitOpError("labels ")
           << labels.getType() << " must have one entry per row of the logits "
           << logits.getType();
  return success();
}
} // namespace

LogicalResult EmbeddingShardOp::verify() {
  auto table = shapeOf(getTable());
  if (table.size() != 2)
    return emitOpError("table must be [V, H], found ") << getTable().getType();
  return expectShape(*this, "result", getResult(),
                     append(shapeOf(getTokens()), table[1]),
                     getElementTypeOrSelf(getTable().getType()));
}

LogicalResult EmbeddingGradShardOp::verify() {
  auto result = shapeOf(getResult());
  if (result.size() != 2)
    return emitOpError("result must be [V, H], found ") << getResult().getType();
  return expectShape(*this, "grad", getGrad(),
                     append(shapeOf(getTokens()), result[1]),
                     getElementTypeOrSelf(getResult().getType()));
}

LogicalResult CrossEntropyRowMaxOp::verify() {
  if (failed(verifyRows(*this, getLogits(), Value(), getValid())))
    return failure();
  return expectShape(*this, "result", getResult(),
                     shapeOf(getLogits()).drop_back());
}

LogicalResult CrossEntropyStatsOp::verify() {
  if (failed(verifyRows(*this, getLogits(), getLabels(), getValid())))
    return failure();
  auto rows = shapeOf(getLabels());
  if (failed(expectShape(*this, "row_max", getRowMax(), rows)))
    return failure();
  return expectShape(*this, "result", getResult(), append(rows, 2));
}

LogicalResult CrossEntropyFromStatsOp::verify() {
  if (getDenominator() <= 0)
    return emitOpError("denominator must be positive, found ")
           << getDenominator();
  return expectShape(*this, "stats", getStats(),
                     append(shapeOf(getRowMax()), 2));
}

LogicalResult CrossEntropyGradShardOp::verify() {
  if (failed(verifyRows(*this, getLogits(), getLabels(), getValid())))
    return failure();
  if (getDenominator() <= 0)
    return emitOpError("denominator must be positive, found ")
           << getDenominator();
  auto rows = shapeOf(getLabels());
  if (failed(expectShape(*this, "row_max", getRowMax(), rows)) ||
      failed(expectShape(*this, "stats", getStats(), append(rows, 2))))
    return failure();
  if (getResult().getType() != getLogits().getType())
    return emitOpError("result must be ")
           << getLogits().getType() << ", found " << getResult().getType();
  return success();
}
