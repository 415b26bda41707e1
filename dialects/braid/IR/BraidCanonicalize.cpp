//===- BraidCanonicalize.cpp - canonicalization patterns of braid ops -----===//
//
// Only rewrites that are exact in floating point: composing layout ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::braid;

namespace {
/// reshape(reshape(x)) -> reshape(x): a reshape only depends on the element
/// order, which the inner reshape does not change.
struct ComposeReshapes : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ReshapeOp>();
    if (!inner)
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getInput());
    return success();
  }
};

/// transpose(transpose(x, p1), p2) -> transpose(x, q) with q[i] = p1[p2[i]].
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    ArrayRef<int64_t> p1 = inner.getPermutation(), p2 = op.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t i : p2)
      composed.push_back(p1[i]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, inner.getInput(), composed);
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<ComposeReshapes>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ComposeTransposes>(context);
}
