//===- CacheContext.cpp - a KV cache split by sequence to chunk ops --------===//
//
// A cache_write or cache_attention whose cache --braid-partition split by
// sequence over context-parallel ranks (`cache_axes`: rank c of the group's
// n holds rows [c Cl, (c+1) Cl) of every sequence's C = n Cl) becomes the
// chunk ops of BraidCacheContextOps.td:
//
// - cache_write: braid.cache_write_chunk at first row c Cl; the rows of
//   other chunks are left to their ranks.
// - cache_attention: braid.cache_attention_chunk over the rank's rows (f32
//   out and log-sum-exp), every rank's pair all-gathered along dimension 0
//   (dist.all_gather, in group order) and merged by
//   braid.cache_attention_merge in that order, so that every rank of the
//   group holds the same bits.
//
//===----------------------------------------------------------------------===//

#include "BraidToDist.h"

#include "braid/Conversion/Passes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace mlir::braid;

namespace braid::conversion {

bool isCacheContext(Operation *op) {
  return isa<CacheWriteOp, CacheAttentionOp>(op) && op->hasAttr("cache_axes");
}

namespace {

struct CacheLowering {
  Operation *op;
  OpBuilder b;
  Location loc;
  std::optional<GridGroup> group;
  /// The rank's first cache row, c Cl.
  Value firstRow;
  int64_t context = 0;

  explicit CacheLowering(Operation *op)
      : op(op), b(op), loc(unnamed(op->getLoc())) {}

  LogicalResult init(Value cache) {
    FailureOr<GridGroup> g = getChunkGroup(op, "cache_axes");
    if (failed(g))
      return failure();
    group = *g;
    int64_t rows = cast<RankedTensorType>(cache.getType()).getDimSize(1);
    context = rows * group->size();
    Value c = buildCoordinate(b, loc, op, *group);
    firstRow = arith::MulIOp::create(
        b, loc, c, arith::ConstantIndexOp::create(b, loc, rows));
    return success();
  }

  /// Every rank's `x`, stacked along dimension 0 in group order.
  Value gather(Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] *= group->size();
    DistGroup dist = getDistGroup(b, op, *group);
    auto g = dist::AllGatherOp::create(b, loc, type.clone(shape),
                                       dist::TokenType::get(b.getContext()), x,
                                       dist.grid, dist.axes,
                                       b.getI64IntegerAttr(0));
    dist::WaitOp::create(b, loc, ValueRange{g.getToken()});
    return g.getResult();
  }

  LogicalResult lower(CacheWriteOp w) {
    if (failed(init(w.getCache())))
      return failure();
    auto chunk = CacheWriteChunkOp::create(
        b, loc, w.getType(), w.getCache(), w.getRows(), w.getPositions(),
        firstRow, b.getI64IntegerAttr(context), w.getRopeThetaAttr());
    replaceLowered(w, chunk.getResult());
    return success();
  }

  /// `x` with its dimensions 0 and 1 swapped.
  Value swapLeading(Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    std::swap(perm[0], perm[1]);
    SmallVector<int64_t> shape(type.getShape());
    std::swap(shape[0], shape[1]);
    return TransposeOp::create(b, loc, type.clone(shape), x,
                               b.getDenseI64ArrayAttr(perm));
  }

  /// `x` [B, S, ..] as every rank's block of rows `rank`: [S, B, ..] cut
  /// into the group's blocks of S/n rows, block j sent to rank j, received
  /// in group order along dimension 0.
  Value exchangeRows(Value x) {
    Value rowsFirst = swapLeading(x);
    DistGroup dist = getDistGroup(b, op, *group);
    auto e = dist::AllToAllOp::create(b, loc, rowsFirst.getType(),
                                      dist::TokenType::get(b.getContext()),
                                      rowsFirst, dist.grid, dist.axes,
                                      b.getI64IntegerAttr(0),
                                      b.getI64IntegerAttr(0));
    dist::WaitOp::create(b, loc, ValueRange{e.getToken()});
    return e.getResult();
  }

  /// The only use of `a`'s result when it slices the rows (dimension 1)
  /// back to this rank's chunk over the cache's group, else null.
  shard::AllSliceOp rowSlice(CacheAttentionOp a) {
    if (!a.getResult().hasOneUse())
      return {};
    auto slice = dyn_cast<shard::AllSliceOp>(*a.getResult().getUsers().begin());
    if (!slice || slice.getSliceAxis().getSExtValue() != 1 ||
        slice.getGridAxes().size() != group->positions.size() ||
        a.getType().getDimSize(1) % group->size() != 0)
      return {};
    for (auto [axis, position] :
         llvm::zip_equal(slice.getGridAxes(), group->positions))
      if (static_cast<unsigned>(axis) != position)
        return {};
    return slice;
  }

  LogicalResult lower(CacheAttentionOp a) {
    if (failed(init(a.getKeyCache())))
      return failure();
    auto out = a.getType();
    auto f32 = b.getF32Type();
    auto chunk = CacheAttentionChunkOp::create(
        b, loc, RankedTensorType::get(out.getShape(), f32),
        RankedTensorType::get(out.getShape().drop_back(), f32), a.getQuery(),
        a.getKeyCache(), a.getValueCache(), a.getPositions(), firstRow,
        b.getI64IntegerAttr(context), a.getScaleAttr(), a.getRopeThetaAttr());
    shard::AllSliceOp slice = rowSlice(a);
    Value outs = slice ? exchangeRows(chunk.getOut()) : gather(chunk.getOut());
    Value lses = slice ? exchangeRows(chunk.getLse()) : gather(chunk.getLse());
    // The test hook of --braid-test-inject-fault=kind=wrong-cp-merge: the
    // chunks merged with equal weights instead of their log-sum-exps.
    if (a->hasAttr(kTestWrongCpMergeAttr))
      lses = FillOp::create(b, loc, lses.getType(), b.getF64FloatAttr(0.0));
    if (!slice) {
      auto merged =
          CacheAttentionMergeOp::create(b, loc, out, outs, lses).getResult();
      replaceLowered(a, merged);
      return success();
    }
    // This rank's rows, rows first: [S/n, B, H, Dv].
    SmallVector<int64_t> shape(slice.getType().getShape());
    std::swap(shape[0], shape[1]);
    Value merged = CacheAttentionMergeOp::create(b, loc, out.clone(shape),
                                                 outs, lses);
    Value result = swapLeading(merged);
    merged.getDefiningOp()->setLoc(a->getLoc());
    replaceLowered(slice, result);
    a->erase();
    return success();
  }
};

} // namespace

LogicalResult lowerCacheContext(Operation *op) {
  CacheLowering l(op);
  if (auto w = dyn_cast<CacheWriteOp>(op))
    return l.lower(w);
  return l.lower(cast<CacheAttentionOp>(op));
}

} // namespace braid::conversion
