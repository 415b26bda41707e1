//===- BraidToDist.cpp - the --convert-braid-to-dist pass -----------------===//

#include "braid/Conversion/Passes.h"

#include "BraidToDist.h"

namespace braid {
#define GEN_PASS_DEF_CONVERTBRAIDTODISTPASS
#include "braid/Conversion/Passes.h.inc"
} // namespace braid

using namespace mlir;

namespace {
struct ConvertBraidToDistPass
    : ::braid::impl::ConvertBraidToDistPassBase<ConvertBraidToDistPass> {
  void runOnOperation() override {
    SmallVector<Operation *> collectives;
    getOperation().walk([&](Operation *op) {
      if (::braid::conversion::isShardTransfer(op))
        collectives.push_back(op);
    });
    for (Operation *op : collectives)
      if (failed(::braid::conversion::lowerShardCollective(op)))
        return signalPassFailure();
  }
};
} // namespace
