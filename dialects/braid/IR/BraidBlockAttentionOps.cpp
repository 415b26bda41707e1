//===- BraidBlockAttentionOps.cpp - attention by key blocks ---------------===//
//
// The pieces --convert-braid-to-dist expands context-parallel attention
// into (ContextAttention.cpp of BraidToDist): their verifiers, the costs of
// the blocks (the products of the queries with one block's keys) and the
// runtime calls. Kernels that accumulate in place get their accumulators
// copied to the results first.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/AttentionKernelArgs.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/VerifierHelpers.h"

using namespace mlir;
using namespace mlir::braid;
using mlir::braid::detail::expectShape;
using mlir::braid::detail::shapeOf;

namespace {
/// The shapes every block op shares: query [B, S, Hq, D], key [B, Skv, Hkv,
/// D], value [B, Skv, Hkv, Dv], their positions [S] and [Skv].
struct BlockShapes {
  int64_t batch, seq, heads, headDim, seqKv, kvHeads, vHeadDim;
  SmallVector<int64_t> out() const { return {batch, seq, heads, vHeadDim}; }
  SmallVector<int64_t> rows() const { return {batch, seq, heads}; }
};

FailureOr<BlockShapes> verifyBlockOperands(Operation *op, Value q, Value k,
                                           Value v, Value qPos, Value kPos,
                                           std::optional<double> theta) {
  auto qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4)
    return op->emitOpError("query, key and value must be [B, S, H, D], found ")
           << q.getType() << ", " << k.getType() << ", " << v.getType();
  if (ks[0] != qs[0] || vs[0] != qs[0] || vs[1] != ks[1] || vs[2] != ks[2] ||
      ks[3] != qs[3])
    return op->emitOpError("key ")
           << k.getType() << " and value " << v.getType()
           << " do not match query " << q.getType()
           << " (same batch; key and value the same rows and heads; key the "
              "query's head dimension)";
  if (ks[2] == 0 || qs[2] % ks[2] != 0)
    return op->emitOpError("query heads ")
           << qs[2] << " are not a multiple of the key/value heads " << ks[2];
  if (theta && qs[3] % 2 != 0)
    return op->emitOpError("rotary embedding needs an even head dimension, "
                           "found ")
           << qs[3];
  if (shapeOf(qPos) != ArrayRef<int64_t>{qs[1]} ||
      shapeOf(kPos) != ArrayRef<int64_t>{ks[1]})
    return op->emitOpError("positions must be one per query row (")
           << qs[1] << ") and per key row (" << ks[1] << "), found "
           << qPos.getType() << ", " << kPos.getType();
  if (getElementTypeOrSelf(k.getType()) != getElementTypeOrSelf(q.getType()) ||
      getElementTypeOrSelf(v.getType()) != getElementTypeOrSelf(q.getType()))
    return op->emitOpError("query, key and value must have one element type");
  return BlockShapes{qs[0], qs[1], qs[2], qs[3], ks[1], ks[2], vs[3]};
}

} // namespace

/// The operands a block op shares with attention, checked.
template <typename Op> static FailureOr<BlockShapes> verifyBlock(Op op) {
  std::optional<double> theta;
  if (FloatAttr attr = op.getRopeThetaAttr())
    theta = attr.getValueAsDouble();
  return verifyBlockOperands(op, op.getQuery(), op.getKey(), op.getValue(),
                             op.getQueryPositions(), op.getKeyPositions(),
                             theta);
}

//===----------------------------------------------------------------------===//
// SequencePositionsOp
//===----------------------------------------------------------------------===//

LogicalResult SequencePositionsOp::verify() {
  if (shapeOf(getResult()).size() != 1)
    return emitOpError("result must be one position per row");
  int64_t count = shapeOf(getResult())[0];
  int64_t length = getLength(), zigzag = getZigzag();
  if (count > length)
    return emitOpError("result of ")
           << count << " rows does not fit a sequence of " << length;
  if (zigzag < 0)
    return emitOpError("zigzag must be a rank count (>= 0), found ") << zigzag;
  if (zigzag > 0 && length % (2 * zigzag) != 0)
    return emitOpError("a sequence of ")
           << length << " positions in zigzag order over " << zigzag
           << " ranks needs a multiple of " << 2 * zigzag;
  return success();
}

LogicalResult
SequencePositionsOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back({"braid_k_sequence_positions",
                   {KernelArg::buffer(getResult(), "int64_t *"),
                    getNumElements(getResult()), KernelArg::index(getStart()),
                    static_cast<int64_t>(getLength()),
                    static_cast<int64_t>(getZigzag())}});
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionBlockOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionBlockOp::verify() {
  FailureOr<BlockShapes> s = verifyBlock(*this);
  if (failed(s) || failed(expectShape(*this, "out", getOut(), s->out())) ||
      failed(expectShape(*this, "lse", getLse(), s->rows())))
    return failure();
  return success();
}

// A block of keys of context-parallel attention: the products of its
// queries with the block's keys.
OpCost AttentionBlockOp::getCost() {
  OpCost cost;
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  ArrayRef<int64_t> v = getValue().getType().getShape();
  int64_t scores = q[0] * q[2] * q[1] * k[1];
  cost.matmulFlops = 2 * scores * q[3] + 2 * scores * v[3];
  cost.otherFlops = 5 * scores;
  return cost;
}

LogicalResult
AttentionBlockOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  SmallVector<KernelArg> args = {
      KernelArg::dtype(getQuery().getType()),
      getQuery(),
      getKey(),
      getValue(),
      KernelArg::buffer(getQueryPositions(), "int64_t *"),
      KernelArg::buffer(getKeyPositions(), "int64_t *"),
      KernelArg::buffer(getOut(), "float *"),
      KernelArg::buffer(getLse(), "float *"),
      attentionParams(*this, getScale().convertToDouble())};
  calls.emplace_back("braid_k_attention_block", std::move(args));
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionMergeOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionMergeOp::verify() {
  auto out = shapeOf(getOut());
  if (out.size() < 1)
    return emitOpError("out must have a row dimension");
  if (failed(expectShape(*this, "block_out", getBlockOut(), out)) ||
      failed(expectShape(*this, "lse", getLse(), out.drop_back())) ||
      failed(expectShape(*this, "block_lse", getBlockLse(), out.drop_back())) ||
      failed(expectShape(*this, "merged_out", getMergedOut(), out)) ||
      failed(expectShape(*this, "merged_lse", getMergedLse(), out.drop_back())))
    return failure();
  return success();
}

LogicalResult
AttentionMergeOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  // The kernel merges in place: the running result is copied to the merged
  // one first.
  calls.push_back(copyCall(getMergedOut(), getOut()));
  calls.push_back(copyCall(getMergedLse(), getLse()));
  calls.push_back({"braid_k_attention_merge",
                   {KernelArg::buffer(getMergedOut(), "float *"),
                    KernelArg::buffer(getMergedLse(), "float *"),
                    KernelArg::buffer(getBlockOut(), "float *"),
                    KernelArg::buffer(getBlockLse(), "float *"),
                    getNumElements(getLse()),
                    getOut().getType().getShape().back()}});
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionDeltaOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionDeltaOp::verify() {
  auto grad = shapeOf(getGrad());
  if (grad.size() < 1)
    return emitOpError("grad must have a row dimension");
  if (failed(expectShape(*this, "out", getOut(), grad)) ||
      failed(expectShape(*this, "delta", getDelta(), grad.drop_back())))
    return failure();
  return success();
}

LogicalResult
AttentionDeltaOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  calls.push_back({"braid_k_attention_delta",
                   {KernelArg::dtype(getGrad().getType()), getGrad(),
                    KernelArg::buffer(getOut(), "float *"),
                    KernelArg::buffer(getDelta(), "float *"),
                    getNumElements(getDelta()),
                    getOut().getType().getShape().back()}});
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionBlockGradOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionBlockGradOp::verify() {
  FailureOr<BlockShapes> s = verifyBlock(*this);
  if (failed(s) || failed(expectShape(*this, "grad", getGrad(), s->out())) ||
      failed(expectShape(*this, "lse", getLse(), s->rows())) ||
      failed(expectShape(*this, "delta", getDelta(), s->rows())))
    return failure();
  for (auto [what, in, out, like] :
       {std::tuple{"dquery", getDqueryIn(), getDquery(), getQuery()},
        std::tuple{"dkey", getDkeyIn(), getDkey(), getKey()},
        std::tuple{"dvalue", getDvalueIn(), getDvalue(), getValue()}})
    if (failed(expectShape(*this, what, in, shapeOf(like))) ||
        failed(expectShape(*this, what, out, shapeOf(like))))
      return failure();
  return success();
}

// Counted as attention_grad is: the four products dQ, dK, dV, dP.
OpCost AttentionBlockGradOp::getCost() {
  OpCost cost;
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  ArrayRef<int64_t> v = getValue().getType().getShape();
  int64_t scores = q[0] * q[2] * q[1] * k[1];
  cost.matmulFlops = 2 * (2 * scores * q[3] + 2 * scores * v[3]);
  cost.otherFlops = 8 * scores;
  return cost;
}

LogicalResult
AttentionBlockGradOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  // The kernel adds to its accumulators: they are copied to the results
  // first.
  calls.push_back(copyCall(getDquery(), getDqueryIn()));
  calls.push_back(copyCall(getDkey(), getDkeyIn()));
  calls.push_back(copyCall(getDvalue(), getDvalueIn()));
  SmallVector<KernelArg> args = {
      KernelArg::dtype(getQuery().getType()),
      getQuery(),
      getKey(),
      getValue(),
      getGrad(),
      KernelArg::buffer(getQueryPositions(), "int64_t *"),
      KernelArg::buffer(getKeyPositions(), "int64_t *"),
      KernelArg::buffer(getLse(), "float *"),
      KernelArg::buffer(getDelta(), "float *"),
      KernelArg::buffer(getDquery(), "float *"),
      KernelArg::buffer(getDkey(), "float *"),
      KernelArg::buffer(getDvalue(), "float *"),
      attentionParams(*this, getScale().convertToDouble())};
  calls.emplace_back("braid_k_attention_block_grad", std::move(args));
  return success();
}
