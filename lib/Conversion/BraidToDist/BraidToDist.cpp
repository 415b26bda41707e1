//===- BraidToDist.cpp - the --convert-braid-to-dist pass -----------------===//

#include "braid/Conversion/Passes.h"

#include "BraidToDist.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace braid {
#define GEN_PASS_DEF_CONVERTBRAIDTODISTPASS
#include "braid/Conversion/Passes.h.inc"
} // namespace braid

using namespace mlir;

namespace {
struct ConvertBraidToDistPass
    : ::braid::impl::ConvertBraidToDistPassBase<ConvertBraidToDistPass> {
  void runOnOperation() override {
    using namespace ::braid::conversion;
    // Each protocol family: which ops it expands, and how.
    using Lower = LogicalResult (*)(Operation *);
    static constexpr std::pair<bool (*)(Operation *), Lower> kFamilies[] = {
        {isShardTransfer, lowerShardCollective},
        {isContextAttention, lowerContextAttention},
        {isSequenceChunked, lowerSequenceChunked},
        {isVocabParallel, lowerVocabParallel},
        {isZeroUpdate, lowerZeroUpdate},
    };
    // Collected first: a lowering inserts ops next to the one it replaces.
    SmallVector<std::pair<Operation *, Lower>> work;
    getOperation().walk([&](Operation *op) {
      for (auto [matches, lower] : kFamilies)
        if (matches(op)) {
          work.push_back({op, lower});
          break;
        }
    });
    for (auto [op, lower] : work)
      if (failed(lower(op)))
        return signalPassFailure();
  }
};
} // namespace
