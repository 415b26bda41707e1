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
    SmallVector<Operation *> collectives, attentions, chunked, vocab, zero;
    getOperation().walk([&](Operation *op) {
      if (isShardTransfer(op))
        collectives.push_back(op);
      else if (isContextAttention(op))
        attentions.push_back(op);
      else if (isSequenceChunked(op))
        chunked.push_back(op);
      else if (isVocabParallel(op))
        vocab.push_back(op);
      else if (isZeroUpdate(op))
        zero.push_back(op);
    });
    for (Operation *op : collectives)
      if (failed(lowerShardCollective(op)))
        return signalPassFailure();
    for (Operation *op : attentions)
      if (failed(lowerContextAttention(op)))
        return signalPassFailure();
    for (Operation *op : chunked)
      if (failed(lowerSequenceChunked(op)))
        return signalPassFailure();
    for (Operation *op : vocab)
      if (failed(lowerVocabParallel(op)))
        return signalPassFailure();
    for (Operation *op : zero)
      if (failed(lowerZeroUpdate(op)))
        return signalPassFailure();
  }
};
} // namespace
