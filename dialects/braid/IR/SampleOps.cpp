//===- SampleOps.cpp - braid.sample and its split pieces ------------------===//
//
// The rules of BraidSampleOps.td: verifiers, braid.sample's sharding rule
// (rows split freely; the vocabulary split, which --convert-braid-to-dist
// expands into the pieces, Sampling.cpp there) and cost, and the runtime
// calls (runtime_inference.h's braid_k_sample*).
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/SampleSchedule.h"
#include "dialects/braid/IR/VerifierHelpers.h"

using namespace mlir;
using namespace mlir::braid;
using mlir::braid::detail::expectShape;
using mlir::braid::detail::shapeOf;

namespace {
using P = std::pair<Value, int64_t>;

/// Each of `values` (named by `names`) must be a [rows] vector.
LogicalResult expectRows(Operation *op, int64_t rows, ArrayRef<Value> values,
                         ArrayRef<StringRef> names) {
  for (auto [value, name] : llvm::zip_equal(values, names))
    if (failed(expectShape(op, name, value, {rows})))
      return failure();
  return success();
}

/// logits [B, V]: B, or failure.
FailureOr<int64_t> rowsOf(Operation *op, Value logits) {
  if (shapeOf(logits).size() != 2)
    return op->emitOpError("logits must be [B, V], found ") << logits.getType();
  return shapeOf(logits)[0];
}

LogicalResult verifyCounts(Operation *op, int64_t vocab, int64_t topKCap) {
  if (vocab <= 0)
    return op->emitOpError("vocab must be positive, found ") << vocab;
  if (topKCap < 0)
    return op->emitOpError("top_k_cap must be >= 0, found ") << topKCap;
  return success();
}

/// A [B, S] state over some number of ranks: the ranks, or failure.
FailureOr<int64_t> stateRanks(Operation *op, Value state, int64_t rows) {
  auto s = shapeOf(state);
  if (s.size() != 2 || s[0] != rows || s[1] < kSampleStateHeader + 3 ||
      (s[1] - kSampleStateHeader) % 3 != 0)
    return op->emitOpError("state must be [")
           << rows << ", " << kSampleStateHeader
           << " + 3 ranks] (i64), found " << state.getType();
  return (s[1] - kSampleStateHeader) / 3;
}

/// Phases after the first read the state; the first makes it.
LogicalResult expectStateIff(Operation *op, SamplePhase phase, Value state) {
  if ((phase == SamplePhase::Max) != !state)
    return op->emitOpError(phase == SamplePhase::Max
                               ? "phase max makes the state: it takes none"
                               : "every phase but max takes the state");
  return success();
}

/// FLOPs of `passes` passes over a [rows, columns] block: the weight's
/// subtraction, division and exp per logit.
int64_t passFlops(int64_t rows, int64_t columns, int64_t passes) {
  return rows * columns * 3 * passes;
}
} // namespace

//===----------------------------------------------------------------------===//
// SampleOp
//===----------------------------------------------------------------------===//

LogicalResult SampleOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto logits = dyn_cast<RankedTensorType>(adaptor.getLogits().getType());
  if (!logits || logits.getRank() != 2)
    return emitOptionalError(loc, "'braid.sample' op logits must be [B, V], found ",
                             adaptor.getLogits().getType());
  inferred.push_back(RankedTensorType::get({logits.getDimSize(0)},
                                           IntegerType::get(context, 32)));
  return success();
}

LogicalResult SampleOp::verify() {
  FailureOr<int64_t> rows = rowsOf(*this, getLogits());
  if (failed(rows) || failed(verifyCounts(*this, getVocab(), getTopKCap())))
    return failure();
  if (!getVocabAxes() && static_cast<int64_t>(getVocab()) > shapeOf(getLogits())[1])
    return emitOpError("vocab ")
           << getVocab() << " exceeds the logits' " << shapeOf(getLogits())[1]
           << " columns";
  return expectRows(
      *this, *rows,
      {getSeeds(), getSteps(), getTemperature(), getTopK(), getTopP(), getIds()},
      {"seeds", "steps", "temperature", "top_k", "top_p", "ids"});
}

ShardingRule SampleOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  r.add(FactorKind::Parallel,
        {P{getLogits(), 0}, P{getSeeds(), 0}, P{getSteps(), 0},
         P{getTemperature(), 0}, P{getTopK(), 0}, P{getTopP(), 0},
         P{getIds(), 0}});
  // Split, the vocabulary is reduced inside the op (its expansion).
  r.add(FactorKind::Vocab, {P{getLogits(), 1}});
  return r.take();
}

OpCost SampleOp::getCost() {
  // Memory-bound: each phase that reads the logits is one pass over them.
  auto l = shapeOf(getLogits());
  int64_t passes = 0;
  for (SamplePhase phase : getSampleSchedule(getMode()))
    passes += phase != SamplePhase::Max ? 1 : 0;
  OpCost cost;
  cost.otherFlops = l[0] * l[1] + passFlops(l[0], l[1], passes);
  return cost;
}

LogicalResult SampleOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  if (getVocabAxes())
    return emitOpError("split over ")
           << *getVocabAxes()
           << " must be expanded by --convert-braid-to-dist first";
  auto l = shapeOf(getLogits());
  calls.push_back(
      {"braid_k_sample",
       {KernelArg::dtype(getLogits().getType()), getLogits(),
        KernelArg::buffer(getSeeds(), "const int64_t *"),
        KernelArg::buffer(getSteps(), "const int64_t *"),
        KernelArg::buffer(getTemperature(), "const float *"),
        KernelArg::buffer(getTopK(), "const int32_t *"),
        KernelArg::buffer(getTopP(), "const float *"),
        KernelArg::buffer(getIds(), "int32_t *"), l[0], l[1],
        static_cast<int64_t>(getVocab()),
        static_cast<int64_t>(getMode()),
        static_cast<int64_t>(getTopKCap())}});
  return success();
}

//===----------------------------------------------------------------------===//
// SampleLocalOp
//===----------------------------------------------------------------------===//

LogicalResult SampleLocalOp::verify() {
  FailureOr<int64_t> rows = rowsOf(*this, getLogits());
  if (failed(rows) || failed(verifyCounts(*this, getVocab(), getTopKCap())) ||
      failed(expectStateIff(*this, getPhase(), getState())) ||
      (getState() && failed(stateRanks(*this, getState(), *rows))))
    return failure();
  if (failed(expectRows(*this, *rows,
                        {getTemperature(), getTopK(), getTopP()},
                        {"temperature", "top_k", "top_p"})))
    return failure();
  return expectShape(*this, "words", getWords(),
                     {*rows, getSampleWords(getPhase(), getTopKCap())});
}

OpCost SampleLocalOp::getCost() {
  // One pass over this rank's block (Max compares, the others weigh).
  auto l = shapeOf(getLogits());
  OpCost cost;
  cost.otherFlops = getPhase() == SamplePhase::Max ? l[0] * l[1]
                                                   : passFlops(l[0], l[1], 1);
  return cost;
}

LogicalResult
SampleLocalOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  auto l = shapeOf(getLogits());
  int64_t ranks =
      getState() ? (shapeOf(getState())[1] - kSampleStateHeader) / 3 : 1;
  calls.push_back(
      {"braid_k_sample_local",
       {KernelArg::dtype(getLogits().getType()), getLogits(),
        KernelArg::buffer(getState(), "const int64_t *"),
        KernelArg::buffer(getTemperature(), "const float *"),
        KernelArg::buffer(getTopK(), "const int32_t *"),
        KernelArg::buffer(getTopP(), "const float *"),
        KernelArg::buffer(getWords(), "int64_t *"), l[0], l[1],
        KernelArg::index(getOffset()), static_cast<int64_t>(getVocab()),
        static_cast<int64_t>(getPhase()), static_cast<int64_t>(getTopKCap()),
        ranks}});
  return success();
}

//===----------------------------------------------------------------------===//
// SampleMergeOp
//===----------------------------------------------------------------------===//

LogicalResult SampleMergeOp::verify() {
  if (failed(verifyCounts(*this, getVocab(), getTopKCap())) ||
      failed(expectStateIff(*this, getPhase(), getState())))
    return failure();
  auto t = shapeOf(getTemperature());
  if (t.size() != 1)
    return emitOpError("temperature must be [B], found ")
           << getTemperature().getType();
  int64_t rows = t[0];
  if (failed(expectRows(*this, rows,
                        {getTopK(), getTopP(), getSeeds(), getSteps()},
                        {"top_k", "top_p", "seeds", "steps"})))
    return failure();
  auto g = shapeOf(getGathered());
  int64_t words = getSampleWords(getPhase(), getTopKCap());
  if (g.size() != 2 || rows == 0 || g[0] % rows != 0 || g[1] != words)
    return emitOpError("gathered must be [ranks x ")
           << rows << ", " << words << "] (every rank's words of phase "
           << stringifySamplePhase(getPhase()) << "), found "
           << getGathered().getType();
  int64_t ranks = g[0] / rows;
  if (getState()) {
    FailureOr<int64_t> stateOf = stateRanks(*this, getState(), rows);
    if (failed(stateOf))
      return failure();
    if (*stateOf != ranks)
      return emitOpError("state holds ")
             << *stateOf << " ranks, the gathered words " << ranks;
  }
  return expectShape(*this, "result", getResult(),
                     {rows, getSampleStateWords(ranks)});
}

LogicalResult
SampleMergeOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  int64_t rows = shapeOf(getTemperature())[0];
  calls.push_back(
      {"braid_k_sample_merge",
       {KernelArg::buffer(getGathered(), "const int64_t *"),
        KernelArg::buffer(getState(), "const int64_t *"),
        KernelArg::buffer(getTemperature(), "const float *"),
        KernelArg::buffer(getTopK(), "const int32_t *"),
        KernelArg::buffer(getTopP(), "const float *"),
        KernelArg::buffer(getSeeds(), "const int64_t *"),
        KernelArg::buffer(getSteps(), "const int64_t *"),
        KernelArg::buffer(getResult(), "int64_t *"), rows,
        shapeOf(getGathered())[0] / rows, static_cast<int64_t>(getVocab()),
        static_cast<int64_t>(getPhase()), static_cast<int64_t>(getTopKCap())}});
  return success();
}

//===----------------------------------------------------------------------===//
// SampleIdsOp
//===----------------------------------------------------------------------===//

LogicalResult SampleIdsOp::verify() {
  auto ids = shapeOf(getIds());
  if (ids.size() != 1)
    return emitOpError("ids must be [B], found ") << getIds().getType();
  return stateRanks(*this, getState(), ids[0]);
}

LogicalResult SampleIdsOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  auto s = shapeOf(getState());
  calls.push_back({"braid_k_sample_ids",
                   {KernelArg::buffer(getState(), "const int64_t *"),
                    KernelArg::buffer(getIds(), "int32_t *"), s[0],
                    (s[1] - kSampleStateHeader) / 3}});
  return success();
}
