//===- PagedCacheOps.cpp - rules of the paged KV cache ops ----------------===//
//
// braid.paged_cache_write and braid.paged_cache_attention
// (BraidPagedCacheOps.td): their verifiers and shapes, sharding rules (the
// heads split as braid.cache_write's and braid.cache_attention's; the
// sequences split only where they have a dimension: the pool has none, its
// pages are whole), costs and runtime calls. Serving programs are not
// differentiated, so neither has a VJP.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/CacheAttentionRules.h"
#include "dialects/braid/IR/ShapeErrors.h"

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::detail;

using P = std::pair<Value, int64_t>;

/// The per-sequence operands of both ops: `positions` and `last_rows` [B],
/// `pages` [B, T].
template <typename OpTy>
static LogicalResult checkPageTable(ShapeErrors<OpTy> error, int64_t batch,
                                    RankedTensorType positions,
                                    RankedTensorType pages,
                                    RankedTensorType lastRows) {
  for (auto [type, role] :
       {std::pair{positions, "positions"}, std::pair{lastRows, "last_rows"}})
    if (type.getRank() != 1 || type.getDimSize(0) != batch)
      return error(role, " must be [", batch, "] (one per sequence), found ",
                   type);
  if (pages.getRank() != 2 || pages.getDimSize(0) != batch)
    return error("pages must be [", batch,
                 ", T] (one page table per sequence), found ", pages);
  return success();
}

static double ropeThetaOr0(FloatAttr theta) {
  return theta ? theta.getValueAsDouble() : 0.0;
}

//===----------------------------------------------------------------------===//
// PagedCacheWriteOp
//===----------------------------------------------------------------------===//

LogicalResult PagedCacheWriteOp::verify() {
  ShapeErrors<PagedCacheWriteOp> error{getLoc()};
  auto pool = getPool().getType(), rows = getRows().getType();
  if (failed(error.expectRank(pool, 4, "pool", "[N, P, H, D]")) ||
      failed(error.expectRank(rows, 4, "rows", "[B, S, H, D]")) ||
      failed(error.expectSameElementType({pool, rows})))
    return failure();
  if (pool.getDimSize(2) != rows.getDimSize(2) ||
      pool.getDimSize(3) != rows.getDimSize(3))
    return emitOpError("rows ") << rows << " do not fit the pool " << pool
                                << ": the heads and head dimension must match";
  if (failed(checkPageTable(error, rows.getDimSize(0), getPositions().getType(),
                            getPages().getType(), getLastRows().getType())) ||
      failed(checkRopeTheta(error, getRopeThetaAttr(), pool.getDimSize(3))))
    return failure();
  // In place, as braid.cache_write: a second reader of the pool would see
  // the rows this op writes or not depending on where it was scheduled.
  if (!getPool().hasOneUse())
    return emitOpError("writes its pool in place, so the pool operand must "
                       "have no other use");
  return success();
}

ShardingRule PagedCacheWriteOp::getShardingRule() {
  ShardingRuleBuilder r(*this);
  Value pool = getPool(), rows = getRows(), y = getResult(), pages = getPages();
  // The sequences: the pool has no such dimension (any page may be any
  // sequence's), so a split of them leaves the pool whole.
  r.add(FactorKind::Parallel,
        {P{rows, 0}, P{getPositions(), 0}, P{pages, 0}, P{getLastRows(), 0}});
  r.add(FactorKind::Whole, {P{rows, 1}});
  r.add(FactorKind::Whole, {P{pool, 0}, P{y, 0}});
  r.add(FactorKind::Whole, {P{pool, 1}, P{y, 1}});
  // Key/value heads split as braid.cache_write's.
  r.add(FactorKind::Parallel, {P{pool, 2}, P{rows, 2}, P{y, 2}});
  r.add(FactorKind::Whole, {P{pool, 3}, P{rows, 3}, P{y, 3}});
  r.add(FactorKind::Whole, {P{pages, 1}});
  return r.take();
}

OpCost PagedCacheWriteOp::getCost() {
  OpCost cost;
  // As braid.cache_write: 3 FLOPs an element of RoPE, none for a copy.
  if (getRopeThetaAttr())
    cost.otherFlops = 3 * getNumElements(getRows());
  return cost;
}

LogicalResult
PagedCacheWriteOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> pool = getPool().getType().getShape();
  ArrayRef<int64_t> rows = getRows().getType().getShape();
  calls.push_back(
      {"braid_k_paged_cache_write",
       {KernelArg::dtype(getPool().getType()), getResult(),
        KernelArg::buffer(getRows(), "const void *"),
        KernelArg::buffer(getPositions(), "const int32_t *"),
        KernelArg::buffer(getPages(), "const int32_t *"),
        KernelArg::buffer(getLastRows(), "const int32_t *"), rows[0], rows[1],
        pool[0], pool[1], getPages().getType().getDimSize(1), pool[2], pool[3],
        KernelArg::real(ropeThetaOr0(getRopeThetaAttr()))}});
  return success();
}

//===----------------------------------------------------------------------===//
// PagedCacheAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult PagedCacheAttentionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  ShapeErrors<PagedCacheAttentionOp> error{loc};
  auto q = typeOf(adaptor.getQuery()), k = typeOf(adaptor.getKeyPool()),
       v = typeOf(adaptor.getValuePool()), pos = typeOf(adaptor.getPositions()),
       pages = typeOf(adaptor.getPages()), last = typeOf(adaptor.getLastRows());
  if (!q || !k || !v || !pos || !pages || !last)
    return failure();
  if (failed(checkAttentionRanks(error, q, k, v, "key pool", "[N, P, Hkv, D]",
                                 "value pool", "[N, P, Hkv, Dv]")))
    return failure();
  if (k.getDimSize(0) != v.getDimSize(0) ||
      k.getDimSize(1) != v.getDimSize(1) || k.getDimSize(2) != v.getDimSize(2))
    return error("the key pool ", k, " and the value pool ", v,
                 " differ in pages, page size or heads");
  if (failed(checkAttentionHeads(error, q, k, "key pool")) ||
      failed(checkPageTable(error, q.getDimSize(0), pos, pages, last)) ||
      failed(
          checkRopeTheta(error, adaptor.getRopeThetaAttr(), q.getDimSize(3))))
    return failure();
  inferred.push_back(attentionResultType(q, v));
  return success();
}

double PagedCacheAttentionOp::getScaleOrDefault() {
  return scaleOrDefault(getScaleAttr(), getQuery().getType());
}

ShardingRule PagedCacheAttentionOp::getShardingRule() {
  // braid.cache_attention's factors but the sequences' (the pools have no
  // such dimension) and the pools' pages and rows (whole).
  ShardingRuleBuilder r(*this);
  Value q = getQuery(), k = getKeyPool(), v = getValuePool(), o = getResult(),
        pages = getPages();
  r.add(FactorKind::Parallel, {P{q, 0}, P{getPositions(), 0}, P{pages, 0},
                               P{getLastRows(), 0}, P{o, 0}});
  r.add(FactorKind::Whole, {P{q, 1}, P{o, 1}});
  r.add(FactorKind::Whole, {P{k, 0}, P{v, 0}});
  r.add(FactorKind::Whole, {P{k, 1}, P{v, 1}});
  // Query heads and key/value heads are factors of their own, as in
  // braid.attention's rule (the partitioner slices a kv head's group when
  // there are fewer of them than ranks).
  r.add(FactorKind::Parallel, {P{q, 2}, P{o, 2}});
  r.add(FactorKind::Parallel, {P{k, 2}, P{v, 2}});
  r.add(FactorKind::Whole, {P{q, 3}, P{k, 3}});
  r.add(FactorKind::Whole, {P{v, 3}, P{o, 3}});
  r.add(FactorKind::Whole, {P{pages, 1}});
  return r.take();
}

OpCost PagedCacheAttentionOp::getCost() {
  // As braid.cache_attention's, over the most rows a sequence's page table
  // reaches (T pages of P rows).
  return cacheAttentionCost(getQuery().getType().getShape(),
                            getPages().getType().getDimSize(1) *
                                getKeyPool().getType().getDimSize(1),
                            getValuePool().getType().getDimSize(3));
}

LogicalResult
PagedCacheAttentionOp::getKernelCalls(SmallVectorImpl<KernelCall> &calls) {
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKeyPool().getType().getShape();
  ArrayRef<int64_t> v = getValuePool().getType().getShape();
  KernelArg shape = KernelArg::params(
      "braid_paged_cache_attention_shape",
      {{"batch", q[0]},
       {"seq", q[1]},
       {"pages", k[0]},
       {"page_size", k[1]},
       {"pages_per_seq", getPages().getType().getDimSize(1)},
       {"heads", q[2]},
       {"kv_heads", k[2]},
       {"head_dim", q[3]},
       {"v_head_dim", v[3]},
       {"scale", KernelArg::real(getScaleOrDefault())},
       {"rope_theta", KernelArg::real(ropeThetaOr0(getRopeThetaAttr()))}});
  calls.push_back(
      {"braid_k_paged_cache_attention",
       {KernelArg::dtype(getType()), getQuery(), getKeyPool(), getValuePool(),
        KernelArg::buffer(getPositions(), "const int32_t *"),
        KernelArg::buffer(getPages(), "const int32_t *"),
        KernelArg::buffer(getLastRows(), "const int32_t *"), getResult(),
        shape}});
  return success();
}
