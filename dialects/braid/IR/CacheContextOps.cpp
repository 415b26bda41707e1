//===- CacheContextOps.cpp - a KV cache split by sequence: the local ops --===//
//
// braid.cache_write_chunk, braid.cache_attention_chunk and
// braid.cache_attention_merge (BraidCacheContextOps.td), which
// --convert-braid-to-dist makes from a cache_write / cache_attention whose
// cache is split by sequence over context-parallel ranks: their verifiers,
// the cost of a chunk's attention and the runtime calls.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/AttentionKernelArgs.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/VerifierHelpers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::braid;
using mlir::braid::detail::expectShape;
using mlir::braid::detail::shapeOf;

/// The chunk holds whole rows of a context of `context` rows: 0 < chunk <=
/// context, and positions are [B].
static LogicalResult verifyChunk(Operation *op, Value cache, Value positions,
                                 int64_t context) {
  auto c = shapeOf(cache);
  if (c.size() != 4)
    return op->emitOpError("cache must be [B, Cl, H, D], found ")
           << cache.getType();
  if (c[1] <= 0 || c[1] > context)
    return op->emitOpError("a chunk of ")
           << c[1] << " rows does not fit a context of " << context;
  auto p = shapeOf(positions);
  if (p.size() != 1 || p[0] != c[0])
    return op->emitOpError("positions must be [")
           << c[0] << "] (one per sequence), found " << positions.getType();
  return success();
}

static double ropeTheta(FloatAttr theta) {
  return theta ? theta.getValueAsDouble() : 0.0;
}

//===----------------------------------------------------------------------===//
// CacheWriteChunkOp
//===----------------------------------------------------------------------===//

LogicalResult CacheWriteChunkOp::verify() {
  if (failed(verifyChunk(*this, getCache(), getPositions(),
                         static_cast<int64_t>(getContextLen()))))
    return failure();
  auto cache = getCache().getType(), rows = getRows().getType();
  if (rows.getRank() != 4 || rows.getElementType() != cache.getElementType() ||
      rows.getDimSize(0) != cache.getDimSize(0) ||
      rows.getDimSize(2) != cache.getDimSize(2) ||
      rows.getDimSize(3) != cache.getDimSize(3))
    return emitOpError("rows ")
           << rows << " do not fit the cache " << cache
           << ": the sequences, heads, head dimension and type must match";
  if (!getCache().hasOneUse())
    return emitOpError("writes its cache in place, so the cache operand must "
                       "have no other use");
  return success();
}

LogicalResult
CacheWriteChunkOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> cache = getCache().getType().getShape();
  ArrayRef<int64_t> rows = getRows().getType().getShape();
  calls.push_back(
      {"braid_k_cache_write_chunk",
       {KernelArg::dtype(getCache().getType()), getResult(),
        KernelArg::buffer(getRows(), "const void *"),
        KernelArg::buffer(getPositions(), "const int32_t *"), cache[0],
        cache[1], rows[1], cache[2], cache[3],
        KernelArg::real(ropeTheta(getRopeThetaAttr())),
        KernelArg::index(getFirstRow()),
        static_cast<int64_t>(getContextLen())}});
  return success();
}

//===----------------------------------------------------------------------===//
// CacheAttentionChunkOp
//===----------------------------------------------------------------------===//

LogicalResult CacheAttentionChunkOp::verify() {
  if (failed(verifyChunk(*this, getKeyCache(), getPositions(),
                         static_cast<int64_t>(getContextLen()))))
    return failure();
  auto q = shapeOf(getQuery()), k = shapeOf(getKeyCache()),
       v = shapeOf(getValueCache());
  if (q.size() != 4 || v.size() != 4 || q[0] != k[0] || v[0] != k[0] ||
      v[1] != k[1] || v[2] != k[2] || q[3] != k[3] || k[2] <= 0 ||
      q[2] % k[2] != 0)
    return emitOpError("query ")
           << getQuery().getType() << " does not fit the caches "
           << getKeyCache().getType() << " and " << getValueCache().getType();
  if (failed(expectShape(*this, "out", getOut(), {q[0], q[1], q[2], v[3]})) ||
      failed(expectShape(*this, "lse", getLse(), {q[0], q[1], q[2]})))
    return failure();
  return success();
}

double CacheAttentionChunkOp::getScaleOrDefault() {
  if (FloatAttr scale = getScaleAttr())
    return scale.getValueAsDouble();
  return 1.0 / std::sqrt(static_cast<double>(shapeOf(getQuery())[3]));
}

// Counted over the whole chunk, as braid.cache_attention counts its cache.
OpCost CacheAttentionChunkOp::getCost() {
  OpCost cost;
  auto q = shapeOf(getQuery()), k = shapeOf(getKeyCache()),
       v = shapeOf(getValueCache());
  int64_t scores = q[0] * q[2] * q[1] * k[1];
  cost.matmulFlops = 2 * scores * q[3] + 2 * scores * v[3];
  cost.otherFlops = 5 * scores;
  return cost;
}

LogicalResult
CacheAttentionChunkOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  KernelArg shape = cacheAttentionShape(*this);
  calls.push_back({"braid_k_cache_attention_chunk",
                   {KernelArg::dtype(getQuery().getType()), getQuery(),
                    getKeyCache(), getValueCache(),
                    KernelArg::buffer(getPositions(), "const int32_t *"),
                    KernelArg::buffer(getOut(), "float *"),
                    KernelArg::buffer(getLse(), "float *"), shape,
                    KernelArg::index(getFirstRow()),
        static_cast<int64_t>(getContextLen())}});
  return success();
}

//===----------------------------------------------------------------------===//
// CacheAttentionMergeOp
//===----------------------------------------------------------------------===//

LogicalResult CacheAttentionMergeOp::verify() {
  auto outs = shapeOf(getOuts()), result = shapeOf(getResult());
  if (outs.size() < 2 || result.size() != outs.size() || result[0] <= 0 ||
      outs[0] % result[0] != 0 || outs.drop_front() != result.drop_front())
    return emitOpError("outs ")
           << getOuts().getType() << " must stack whole chunks of the result "
           << getResult().getType() << " along dimension 0";
  return expectShape(*this, "lses", getLses(), outs.drop_back());
}

LogicalResult
CacheAttentionMergeOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  auto outs = shapeOf(getOuts()), result = shapeOf(getResult());
  calls.push_back({"braid_k_cache_attention_merge",
                   {KernelArg::dtype(getResult().getType()),
                    KernelArg::buffer(getOuts(), "const float *"),
                    KernelArg::buffer(getLses(), "const float *"), getResult(),
                    outs[0] / result[0], getNumElements(getLses()) / (outs[0] / result[0]),
                    outs.back()}});
  return success();
}
