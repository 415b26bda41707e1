//===- Sampling.cpp - a vocabulary-split braid.sample to its phases -------===//
//
// A braid.sample whose logits --braid-partition split by vocabulary
// (`vocab_axes`: rank c of the group's n holds the columns [c Vl, (c+1) Vl))
// becomes the fixed schedule of its mode (SampleSchedule.h), one exchange
// per phase:
//
//   %w0 = braid.sample_local max %logits, ... at %offset
//   %g0 = dist.all_gather %w0 ... gather_axis = 0      // [n B, W]
//   %s0 = braid.sample_merge max %g0, ...              // every rank alike
//   %w1 = braid.sample_local mass %logits state %s0, ...
//   ...
//   %ids = braid.sample_ids %sN
//
// greedy: 1 all-gather; sample: 3; nucleus: 12. The words carry each
// rank's offset, so the merge does not depend on the group's order.
//
//===----------------------------------------------------------------------===//

#include "BraidToDist.h"

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/SampleSchedule.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::braid;

namespace braid::conversion {

bool isSampleParallel(Operation *op) {
  auto sample = dyn_cast<SampleOp>(op);
  return sample && sample.getVocabAxes();
}

LogicalResult lowerSampleParallel(Operation *op) {
  auto sample = cast<SampleOp>(op);
  FailureOr<GridGroup> group = getGridGroup(
      op, sample.getVocabAxesAttr(), [&] { return op->emitError(); });
  if (failed(group))
    return failure();
  OpBuilder b(op);
  Location loc = unnamed(op->getLoc());
  auto logits = cast<RankedTensorType>(sample.getLogits().getType());
  const int64_t rows = logits.getDimSize(0), ranks = group->size();
  Value offset = arith::MulIOp::create(
      b, loc, buildCoordinate(b, loc, op, *group),
      arith::ConstantIndexOp::create(b, loc, logits.getDimSize(1)));
  DistGroup dist = getDistGroup(b, op, *group);
  auto i64 = b.getI64Type();
  auto stateType =
      RankedTensorType::get({rows, getSampleStateWords(ranks)}, i64);
  const int64_t vocab = sample.getVocab(), cap = sample.getTopKCap();
  Value state;
  for (SamplePhase phase : getSampleSchedule(sample.getMode())) {
    const int64_t words = getSampleWords(phase, cap);
    auto local = SampleLocalOp::create(
        b, loc, RankedTensorType::get({rows, words}, i64), phase,
        sample.getLogits(), state, sample.getTemperature(), sample.getTopK(),
        sample.getTopP(), offset, vocab, cap);
    auto gather = dist::AllGatherOp::create(
        b, loc, RankedTensorType::get({ranks * rows, words}, i64),
        dist::TokenType::get(b.getContext()), local.getResult(), dist.grid,
        dist.axes, b.getI64IntegerAttr(0));
    dist::WaitOp::create(b, loc, ValueRange{gather.getToken()});
    state = SampleMergeOp::create(
        b, loc, stateType, phase, gather.getResult(), state,
        sample.getTemperature(), sample.getTopK(), sample.getTopP(),
        sample.getSeeds(), sample.getSteps(), vocab, cap);
  }
  replaceLowered(op, SampleIdsOp::create(b, loc, sample.getType(), state));
  return success();
}

} // namespace braid::conversion
