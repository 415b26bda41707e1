//===- LayoutOps.cpp - rules of reshape, transpose and slice --------------===//
//
// The ops that move elements without computing: their sharding rules (a
// reshape keeps the factors of the dimensions it does not merge, a
// transpose permutes them), vector-Jacobian products (reshape and transpose
// invert themselves, a slice's cotangent is placed into zeros) and the
// transpose's runtime call.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"

using namespace mlir;
using namespace mlir::braid;

using P = std::pair<Value, int64_t>;

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

/// Dimensions grouped into runs of equal element count; the major (first
/// non-unit) dimensions of a run form one factor, the others none.
ShardingRule ReshapeOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getResult().getType().getShape();
  unsigned i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    // Unit dimensions are groups of their own.
    if (i < in.size() && in[i] == 1) {
      ++i;
      continue;
    }
    if (j < out.size() && out[j] == 1) {
      ++j;
      continue;
    }
    if (i >= in.size() || j >= out.size())
      break;
    unsigned i0 = i++, j0 = j++;
    int64_t a = in[i0], b = out[j0];
    while (a != b) {
      if (a < b && i < in.size())
        a *= in[i++];
      else if (b < a && j < out.size())
        b *= out[j++];
      else
        break;
    }
    // The major dimensions share a factor when the smaller of the two
    // divides the other (the split then cuts both into whole rows).
    int64_t small = std::min(in[i0], out[j0]);
    int64_t large = std::max(in[i0], out[j0]);
    if (large % small == 0)
      r.add(FactorKind::Parallel, {P{getInput(), i0}, P{getResult(), j0}});
  }
  return r.take();
}

FailureOr<SmallVector<Value>>
ReshapeOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  // The cotangent reshaped back.
  return SmallVector<Value>{
      ReshapeOp::create(b, loc, getInput().getType(), cotangents[0])};
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

ShardingRule TransposeOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  for (auto [d, p] : llvm::enumerate(getPermutation()))
    r.add(FactorKind::Parallel, {P{getInput(), p}, P{getResult(), d}});
  return r.take();
}

FailureOr<SmallVector<Value>>
TransposeOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  // The cotangent transposed back by the inverse permutation.
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  return SmallVector<Value>{
      TransposeOp::create(b, loc, cotangents[0], inverse)};
}

LogicalResult TransposeOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  calls.push_back({"braid_k_transpose",
                   {KernelArg::dtype(getType()), getInput(), getResult(),
                    static_cast<int64_t>(shape.size()),
                    KernelArg::shape(shape),
                    KernelArg::shape(getPermutation())}});
  return success();
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>>
SliceOp::emitVJP(OpBuilder &b, Location loc, ArrayRef<Value> cotangents) {
  // Under the SPMD convention that the per-rank objectives sum to the loss,
  // the transpose of a slice places the slice into zeros.
  return SmallVector<Value>{UnsliceOp::create(b, loc, getInput().getType(),
                                              cotangents[0], getAxes(),
                                              getDim(), getReplicas())};
}
