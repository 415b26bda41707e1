//===- BraidVocabShardOps.cpp - vocabulary-parallel pieces ----------------===//
//
// The verifiers and the runtime calls of the pieces VocabParallel.cpp of
// BraidToDist splits the embedding and the cross-entropy into; a rank's
// vocabulary offset is an index expression of its coordinates.
//
//===----------------------------------------------------------------------===//

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

/// The rows and the vocabulary of a cross-entropy piece's logits
/// [..., vocab].
static void appendRowsAndVocab(SmallVectorImpl<KernelArg> &args, Value logits) {
  int64_t vocab = shapeOf(logits).back();
  args.push_back(getNumElements(logits) / vocab);
  args.push_back(vocab);
}

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

//===----------------------------------------------------------------------===//
// Kernel calls
//===----------------------------------------------------------------------===//

LogicalResult
EmbeddingShardOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  auto table = shapeOf(getTable());
  calls.push_back(
      {"braid_k_embedding_shard",
       {KernelArg::dtype(getType()), KernelArg::dtype(getTokens().getType()),
        getTokens(), getTable(), getResult(), getNumElements(getTokens()),
        table[0], table[1], KernelArg::index(getOffset())}});
  return success();
}

LogicalResult
EmbeddingGradShardOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  auto table = shapeOf(getResult());
  calls.push_back(
      {"braid_k_embedding_grad_shard",
       {KernelArg::dtype(getType()), KernelArg::dtype(getTokens().getType()),
        getTokens(), getGrad(), getResult(), getNumElements(getTokens()),
        table[0], table[1], KernelArg::index(getOffset())}});
  return success();
}

LogicalResult
CrossEntropyRowMaxOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  SmallVector<KernelArg> args = {KernelArg::dtype(getLogits().getType()),
                                 getLogits(),
                                 KernelArg::buffer(getResult(), "float *")};
  appendRowsAndVocab(args, getLogits());
  args.append(
      {KernelArg::index(getOffset()), static_cast<int64_t>(getValid())});
  calls.push_back({"braid_k_ce_shard_max", std::move(args)});
  return success();
}

LogicalResult
CrossEntropyStatsOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  SmallVector<KernelArg> args = {KernelArg::dtype(getLogits().getType()),
                                 KernelArg::dtype(getLabels().getType()),
                                 getLogits(),
                                 getLabels(),
                                 KernelArg::buffer(getRowMax(), "float *"),
                                 KernelArg::buffer(getResult(), "float *")};
  appendRowsAndVocab(args, getLogits());
  args.append(
      {KernelArg::index(getOffset()), static_cast<int64_t>(getValid())});
  calls.push_back({"braid_k_ce_shard_stats", std::move(args)});
  return success();
}

LogicalResult
CrossEntropyFromStatsOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back(
      {"braid_k_ce_shard_loss",
       {KernelArg::buffer(getRowMax(), "float *"),
        KernelArg::buffer(getStats(), "float *"),
        KernelArg::buffer(getResult(), "float *"), getNumElements(getRowMax()),
        static_cast<int64_t>(getDenominator())}});
  return success();
}

LogicalResult
CrossEntropyGradShardOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  SmallVector<KernelArg> args = {KernelArg::dtype(getLogits().getType()),
                                 KernelArg::dtype(getLabels().getType()),
                                 getLogits(),
                                 getLabels(),
                                 KernelArg::buffer(getRowMax(), "float *"),
                                 KernelArg::buffer(getStats(), "float *"),
                                 KernelArg::buffer(getGrad(), "float *"),
                                 getResult()};
  appendRowsAndVocab(args, getLogits());
  args.append({KernelArg::index(getOffset()), static_cast<int64_t>(getValid()),
               static_cast<int64_t>(getDenominator())});
  calls.push_back({"braid_k_ce_shard_grad", std::move(args)});
  return success();
}
