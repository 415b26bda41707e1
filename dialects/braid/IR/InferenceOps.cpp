//===- InferenceOps.cpp - rules of the KV cache and generation ops --------===//
//
// braid.cache_write, braid.cache_attention, braid.take_rows and
// braid.add_positions (BraidInferenceOps.td): their verifiers and shapes,
// sharding rules (sequences and heads split like braid.attention's, a cache
// row is whole), costs and runtime calls. Inference programs are not
// differentiated, so none has a VJP.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/AttentionKernelArgs.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/CacheAttentionRules.h"
#include "dialects/braid/IR/ShapeErrors.h"

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::detail;

using P = std::pair<Value, int64_t>;

/// `positions` must be [B] for sequences of `batch`.
template <typename OpTy>
static LogicalResult checkPositions(ShapeErrors<OpTy> error,
                                    RankedTensorType positions, int64_t batch,
                                    StringRef role) {
  if (positions.getRank() != 1 || positions.getDimSize(0) != batch)
    return error(role, " must be [", batch, "] (one per sequence), found ",
                 positions);
  return success();
}

//===----------------------------------------------------------------------===//
// CacheWriteOp
//===----------------------------------------------------------------------===//

LogicalResult CacheWriteOp::verify() {
  ShapeErrors<CacheWriteOp> error{getLoc()};
  auto cache = getCache().getType(), rows = getRows().getType();
  if (failed(error.expectRank(cache, 4, "cache", "[B, C, H, D]")) ||
      failed(error.expectRank(rows, 4, "rows", "[B, S, H, D]")) ||
      failed(error.expectSameElementType({cache, rows})))
    return failure();
  if (cache.getDimSize(0) != rows.getDimSize(0) ||
      cache.getDimSize(2) != rows.getDimSize(2) ||
      cache.getDimSize(3) != rows.getDimSize(3))
    return emitOpError("rows ")
           << rows << " do not fit the cache " << cache
           << ": the sequences, heads and head dimension must match";
  // A cache split by sequence (`cache_axes`, --braid-partition) holds a
  // chunk of the rows: each rank writes the new rows that fall in it.
  if (rows.getDimSize(1) > cache.getDimSize(1) &&
      !(*this)->hasAttr("cache_axes"))
    return emitOpError("writes ")
           << rows.getDimSize(1) << " rows per sequence into a cache of "
           << cache.getDimSize(1);
  if (failed(checkPositions(error, getPositions().getType(),
                            cache.getDimSize(0), "positions")) ||
      failed(checkRopeTheta(error, getRopeThetaAttr(), cache.getDimSize(3))))
    return failure();
  // In place: a second reader of the cache operand would see the rows
  // this op writes or not depending on where the scheduler put it.
  if (!getCache().hasOneUse())
    return emitOpError("writes its cache in place, so the cache operand must "
                       "have no other use");
  return success();
}

ShardingRule CacheWriteOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value cache = getCache(), rows = getRows(), y = getResult();
  r.add(FactorKind::Parallel,
        {P{cache, 0}, P{rows, 0}, P{getPositions(), 0}, P{y, 0}});
  r.add(FactorKind::Whole, {P{cache, 1}, P{y, 1}});
  r.add(FactorKind::Whole, {P{rows, 1}});
  // Key/value heads split as braid.attention splits them (tensor
  // parallelism keeps each rank's heads' cache).
  r.add(FactorKind::Parallel, {P{cache, 2}, P{rows, 2}, P{y, 2}});
  // RoPE rotates pairs (i, i + D/2): a head's row is whole.
  r.add(FactorKind::Whole, {P{cache, 3}, P{rows, 3}, P{y, 3}});
  return r.take();
}

OpCost CacheWriteOp::getCost() {
  OpCost cost;
  // The rotation: 3 FLOPs an element (two products and a sum), none for a
  // copy.
  if (getRopeThetaAttr())
    cost.otherFlops = 3 * getNumElements(getRows());
  return cost;
}

LogicalResult CacheWriteOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> cache = getCache().getType().getShape();
  ArrayRef<int64_t> rows = getRows().getType().getShape();
  calls.push_back(
      {"braid_k_cache_write",
       {KernelArg::dtype(getCache().getType()), getResult(),
        KernelArg::buffer(getRows(), "const void *"),
        KernelArg::buffer(getPositions(), "const int32_t *"), cache[0],
        cache[1], rows[1], cache[2], cache[3],
        KernelArg::real(getRopeThetaAttr() ? getRopeThetaAttr().getValueAsDouble() : 0.0)}});
  return success();
}

//===----------------------------------------------------------------------===//
// CacheAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult CacheAttentionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  ShapeErrors<CacheAttentionOp> error{loc};
  auto q = typeOf(adaptor.getQuery()), k = typeOf(adaptor.getKeyCache()),
       v = typeOf(adaptor.getValueCache()),
       pos = typeOf(adaptor.getPositions());
  if (!q || !k || !v || !pos)
    return failure();
  if (failed(checkAttentionRanks(error, q, k, v, "key cache", "[B, C, Hkv, D]",
                                 "value cache", "[B, C, Hkv, Dv]")))
    return failure();
  if (k.getDimSize(0) != q.getDimSize(0) || v.getDimSize(0) != q.getDimSize(0))
    return error("the caches hold ", k.getDimSize(0), " and ",
                 v.getDimSize(0), " sequences, the query ", q.getDimSize(0));
  if (k.getDimSize(1) != v.getDimSize(1) || k.getDimSize(2) != v.getDimSize(2))
    return error("the key cache ", k, " and the value cache ", v,
                 " differ in rows or heads");
  if (failed(checkAttentionHeads(error, q, k, "key cache")) ||
      failed(checkPositions(error, pos, q.getDimSize(0), "positions")) ||
      failed(checkRopeTheta(error, adaptor.getRopeThetaAttr(), q.getDimSize(3))))
    return failure();
  inferred.push_back(attentionResultType(q, v));
  return success();
}

double CacheAttentionOp::getScaleOrDefault() {
  return scaleOrDefault(getScaleAttr(), getQuery().getType());
}

ShardingRule CacheAttentionOp::getShardingRule() {
  // braid.attention's factors, the cache's rows as its keys.
  ShardingRuleBuilder r(*this);
  r.attention(getQuery(), getKeyCache(), getValueCache(), getResult(),
              getPositions());
  return r.take();
}

OpCost CacheAttentionOp::getCost() {
  // Over the whole cache: its C rows per sequence.
  return cacheAttentionCost(getQuery().getType().getShape(),
                            getKeyCache().getType().getDimSize(1),
                            getValueCache().getType().getDimSize(3));
}

//===----------------------------------------------------------------------===//
// TakeRowsOp
//===----------------------------------------------------------------------===//

LogicalResult TakeRowsOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  ShapeErrors<TakeRowsOp> error{loc};
  auto input = typeOf(adaptor.getInput()), index = typeOf(adaptor.getIndex());
  if (!input || !index)
    return failure();
  if (failed(error.expectRank(input, 3, "input", "[B, S, H]")) ||
      failed(checkPositions(error, index, input.getDimSize(0), "index")))
    return failure();
  inferred.push_back(input.clone({input.getDimSize(0), input.getDimSize(2)}));
  return success();
}

ShardingRule TakeRowsOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value x = getInput(), y = getResult();
  r.add(FactorKind::Parallel, {P{x, 0}, P{getIndex(), 0}, P{y, 0}});
  r.add(FactorKind::Whole, {P{x, 1}});
  r.add(FactorKind::Parallel, {P{x, 2}, P{y, 1}});
  return r.take();
}

OpCost TakeRowsOp::getCost() { return {}; }

LogicalResult TakeRowsOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> x = getInput().getType().getShape();
  calls.push_back({"braid_k_take_rows",
                   {KernelArg::dtype(getType()), getInput(),
                    KernelArg::buffer(getIndex(), "const int32_t *"),
                    getResult(), x[0], x[1], x[2]}});
  return success();
}

//===----------------------------------------------------------------------===//
// AddPositionsOp
//===----------------------------------------------------------------------===//

LogicalResult AddPositionsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  ShapeErrors<AddPositionsOp> error{loc};
  auto input = typeOf(adaptor.getInput()), table = typeOf(adaptor.getTable()),
       pos = typeOf(adaptor.getPositions());
  if (!input || !table || !pos)
    return failure();
  if (failed(error.expectRank(input, 3, "input", "[B, S, H]")) ||
      failed(error.expectRank(table, 2, "table", "[positions, H]")) ||
      failed(error.expectSameElementType({input, table})) ||
      failed(checkPositions(error, pos, input.getDimSize(0), "positions")))
    return failure();
  if (table.getDimSize(1) != input.getDimSize(2))
    return error("table hidden size ", table.getDimSize(1),
                 " differs from the input's ", input.getDimSize(2));
  inferred.push_back(input);
  return success();
}

ShardingRule AddPositionsOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value x = getInput(), t = getTable(), y = getResult();
  r.add(FactorKind::Parallel, {P{x, 0}, P{getPositions(), 0}, P{y, 0}});
  r.add(FactorKind::Whole, {P{x, 1}, P{y, 1}});
  r.add(FactorKind::Whole, {P{t, 0}});
  r.add(FactorKind::Parallel, {P{x, 2}, P{t, 1}, P{y, 2}});
  return r.take();
}

OpCost AddPositionsOp::getCost() {
  OpCost cost;
  cost.otherFlops = getNumElements(getResult());
  return cost;
}

LogicalResult
AddPositionsOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> x = getInput().getType().getShape();
  ArrayRef<int64_t> t = getTable().getType().getShape();
  calls.push_back({"braid_k_add_positions",
                   {KernelArg::dtype(getType()), getInput(), getTable(),
                    KernelArg::buffer(getPositions(), "const int32_t *"),
                    getResult(), x[0], x[1], t[0], x[2]}});
  return success();
}

LogicalResult
CacheAttentionOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  KernelArg shape = cacheAttentionShape(*this);
  calls.push_back({"braid_k_cache_attention",
                   {KernelArg::dtype(getType()), getQuery(), getKeyCache(),
                    getValueCache(),
                    KernelArg::buffer(getPositions(), "const int32_t *"),
                    getResult(), shape}});
  return success();
}
