//===- DeriveInferenceMoE.cpp - MoE layers in inference programs ----------===//
//
// Training gives each expert a capacity per group of tokens (capacity_factor
// times the group's fair share) and drops the assignments past it: a
// training-time trade of a few tokens for a bounded buffer. Generation
// cannot drop: a decode step's token would lose its expert whenever other
// sequences of the batch chose the same one, and the forward program that
// verifies decode (teacher forcing) would drop other tokens than decode
// does, prompt padding included. So every dispatch of an inference program
// drops nothing, and its result no longer follows from the training step's
// capacity.
//
// Each token is its own group (group_size 1) with one slot per expert: a
// token's top-k experts are distinct (braid.router picks k different ones),
// so no expert receives two assignments from a group and nothing is
// dropped, whatever the batch, the prompt length or how the tokens are
// split over ranks (no split can cut a group of one token). The slots per
// expert equal the program's tokens: B x L in prefill, B in decode,
// B x C in forward.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/DeriveInferenceMoE.h"
#include "dialects/braid/Transforms/Retype.h"

#include "dialects/braid/IR/BraidOps.h"

using namespace mlir;
using namespace mlir::braid;

bool mlir::braid::isCapacityGroupOp(Operation &op) {
  return isa<DispatchOp, CombineOp>(op);
}

/// One slot per expert and token holds every assignment only when a
/// token's choices are distinct experts, as braid.router's are.
static LogicalResult checkRouted(Operation &op, Value indices) {
  if (indices.getDefiningOp<RouterOp>())
    return success();
  return op.emitError("--braid-derive-inference: cannot size this ")
         << op.getName()
         << " to drop no token: its expert indices do not come from a "
            "braid.router, so a token's choices may repeat an expert";
}

static IntegerAttr oneTokenGroups(Operation &op) {
  return IntegerAttr::get(IntegerType::get(op.getContext(), 64), 1);
}

static LogicalResult retypeDispatch(DispatchOp dispatch) {
  if (failed(checkRouted(*dispatch, dispatch.getIndices())))
    return failure();
  RankedTensorType input = dispatch.getInput().getType();
  auto result = cast<RankedTensorType>(dispatch.getType());
  int64_t tokens = input.getDimSize(0);
  dispatch.setGroupSizeAttr(oneTokenGroups(*dispatch));
  dispatch.getResult().setType(result.clone(
      {result.getDimSize(0), tokens, input.getDimSize(1)}));
  return success();
}

static LogicalResult retypeCombine(CombineOp combine) {
  if (failed(checkRouted(*combine, combine.getIndices())))
    return failure();
  // The same groups as the dispatch that filled the expert buffers.
  combine.setGroupSizeAttr(oneTokenGroups(*combine));
  return reinferResultTypes(*combine,
                            "--braid-derive-inference: cannot re-type",
                            "--braid-derive-inference: this op's result types "
                            "do not follow from the program's shapes");
}

LogicalResult mlir::braid::retypeWithoutDrops(Operation &op) {
  if (auto dispatch = dyn_cast<DispatchOp>(op))
    return retypeDispatch(dispatch);
  return retypeCombine(cast<CombineOp>(op));
}
