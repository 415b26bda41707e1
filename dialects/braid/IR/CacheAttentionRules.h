//===- CacheAttentionRules.h - shared KV cache op checks --------*- C++ -*-===//
//
// Internal to the dialect's .cpp files. Attention of new query rows over a
// KV cache, whole per sequence (braid.cache_attention, InferenceOps.cpp) or
// a pool of pages (braid.paged_cache_attention, PagedCacheOps.cpp), checks
// its query, keys and values alike, has the same default scale and the same
// cost per key; both cache writes check RoPE's theta alike.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_CACHEATTENTIONRULES_H
#define BRAID_DIALECT_BRAID_IR_CACHEATTENTIONRULES_H

#include "dialects/braid/IR/OpRules.h"
#include "dialects/braid/IR/ShapeErrors.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

namespace mlir::braid::detail {

/// `rope_theta`, when given, is positive and the head dimension even (RoPE
/// rotates pairs (i, i + D/2)).
template <typename OpTy>
LogicalResult checkRopeTheta(ShapeErrors<OpTy> error, FloatAttr theta,
                             int64_t headDim) {
  if (theta && (!(theta.getValueAsDouble() > 0.0) || headDim % 2 != 0))
    return error("rope_theta needs a positive theta and an even head "
                 "dimension, found ",
                 theta.getValueAsDouble(), " and ", headDim);
  return success();
}

/// The query [B, S, Hq, D], keys [., ., Hkv, D] and values [., ., Hkv, Dv]
/// of an attention over a cache are 4-D of one element type; `keys` and
/// `values` name them ("key cache", "key pool") with their layouts.
template <typename OpTy>
LogicalResult checkAttentionRanks(ShapeErrors<OpTy> error, RankedTensorType q,
                                  RankedTensorType k, RankedTensorType v,
                                  StringRef keys, StringRef keyLayout,
                                  StringRef values, StringRef valueLayout) {
  if (failed(error.expectRank(q, 4, "query", "[B, S, Hq, D]")) ||
      failed(error.expectRank(k, 4, keys, keyLayout)) ||
      failed(error.expectRank(v, 4, values, valueLayout)))
    return failure();
  return error.expectSameElementType({q, k, v});
}

/// The keys' head dimension is the query's and their heads divide the
/// query's (grouped-query attention).
template <typename OpTy>
LogicalResult checkAttentionHeads(ShapeErrors<OpTy> error, RankedTensorType q,
                                  RankedTensorType k, StringRef keys) {
  if (k.getDimSize(3) != q.getDimSize(3))
    return error("the ", keys, "'s head dimension ", k.getDimSize(3),
                 " differs from the query's ", q.getDimSize(3));
  if (q.getDimSize(2) % k.getDimSize(2) != 0)
    return error(q.getDimSize(2), " query heads are not a multiple of ",
                 k.getDimSize(2), " key/value heads");
  return success();
}

/// The result [B, S, Hq, Dv].
inline RankedTensorType attentionResultType(RankedTensorType q,
                                            RankedTensorType v) {
  return q.clone(
      {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), v.getDimSize(3)});
}

/// `scale`, or 1/sqrt(head dim).
inline double scaleOrDefault(FloatAttr scale, RankedTensorType q) {
  if (scale)
    return scale.getValueAsDouble();
  return 1.0 / std::sqrt(static_cast<double>(q.getDimSize(3)));
}

/// Counted over `keys` keys per sequence (the positions are runtime data):
/// the bound of a step at full context, as braid.attention counts S x Skv.
inline OpCost cacheAttentionCost(ArrayRef<int64_t> q, int64_t keys,
                                 int64_t valueDim) {
  OpCost cost;
  int64_t scores = q[0] * q[2] * q[1] * keys;
  cost.matmulFlops = 2 * scores * q[3] + 2 * scores * valueDim;
  cost.otherFlops = 5 * scores;
  return cost;
}

} // namespace mlir::braid::detail

#endif // BRAID_DIALECT_BRAID_IR_CACHEATTENTIONRULES_H
