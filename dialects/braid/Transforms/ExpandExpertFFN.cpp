//===- ExpandExpertFFN.cpp - the --braid-expand-expert-ffn pass -----------===//

#include "dialects/braid/Transforms/Passes.h"

#include "dialects/braid/IR/BraidOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDEXPANDEXPERTFFNPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

namespace {
struct ExpandExpertFFN : OpRewritePattern<ExpertFFNOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ExpertFFNOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value up = BatchMatmulOp::create(rewriter, loc, op.getInput(), op.getWUp());
    Value hidden;
    if (Value gateWeight = op.getWGate()) {
      Value gate =
          BatchMatmulOp::create(rewriter, loc, op.getInput(), gateWeight);
      hidden = GluOp::create(rewriter, loc, op.getActivation(), gate, up);
    } else {
      hidden = createActivation(rewriter, loc, op.getActivation(), up);
    }
    rewriter.replaceOpWithNewOp<BatchMatmulOp>(op, hidden, op.getWDown());
    return success();
  }
};

struct BraidExpandExpertFFNPass
    : braid::impl::BraidExpandExpertFFNPassBase<BraidExpandExpertFFNPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandExpertFFN>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
