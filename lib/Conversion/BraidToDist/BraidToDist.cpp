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
    // The parameters' symbol table, built once (no lowering adds or removes
    // a symbol).
    SymbolTableCollection symbols;
    auto lowerZero = [&](Operation *op) {
      return lowerZeroUpdate(op, symbols);
    };
    // Each protocol family: which ops it expands, and how.
    using Lower = llvm::function_ref<LogicalResult(Operation *)>;
    const std::pair<bool (*)(Operation *), Lower> families[] = {
        {isShardTransfer, lowerShardCollective},
        {isContextAttention, lowerContextAttention},
        {isCacheContext, lowerCacheContext},
        {isSequenceChunked, lowerSequenceChunked},
        {isMambaContext, lowerMambaContext},
        {isVocabParallel, lowerVocabParallel},
        {isSampleParallel, lowerSampleParallel},
        {isZeroUpdate, lowerZero},
    };
    // Collected first: a lowering inserts ops next to the one it replaces.
    SmallVector<std::pair<Operation *, Lower>> work;
    getOperation().walk([&](Operation *op) {
      for (auto [matches, lower] : families)
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
