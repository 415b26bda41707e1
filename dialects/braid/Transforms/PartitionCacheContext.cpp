//===- PartitionCacheContext.cpp - a KV cache split by sequence over cp ---===//
//
// Context parallelism of the inference programs (issue 42), a part of
// --braid-partition:
//
// - The cache. Every KV cache state [B, C, Hkv, D] is split by sequence over
//   cp in contiguous chunks: rank c holds rows [c C/cp, (c+1) C/cp) of every
//   sequence (its class is seeded like a sequence, so prefill and decode,
//   which share the state, agree). Contiguous, not zigzag: a decode step
//   appends one row at a time, and a rank's chunk then fills in order; the
//   zigzag layout of training is refused for modules with these programs
//   (chooseSequenceLayout).
// - Prefill. The prompt is split over cp as training splits its sequence
//   (contiguous chunks; every op outside attention runs on its chunk); a
//   prompt length cp does not divide runs whole on every rank. Each
//   cache_write takes the prompt's new rows whole (an all-gather) and each
//   rank keeps those that fall in its chunk; each cache_attention takes the
//   queries whole, attends over its rank's cache chunk and the partial
//   results are merged by log-sum-exp (pass-Q context parallelism: the
//   cache rows never move, a continued prompt's earlier rows included);
//   its result, whole on every cp rank, is sliced back to the chunk.
// - Mamba layers at prefill. Their conv_step and scan_step keep the prompt
//   split (a Sequence factor, as training's conv1d and selective_scan) and
//   take `context_axes`: --convert-braid-to-dist (MambaContext.cpp) carries
//   the halo and the state from rank to rank and gathers each sequence's new
//   state from the rank holding its last row, so every cp rank holds the
//   whole state for decode. Chunks shorter than a convolution's halo (K-1
//   rows) are not split: the prompt runs whole.
// - Decode. The one new token per sequence is not split; the rank owning its
//   position writes its key and value, every rank attends over its chunk,
//   and the partials are merged.
//
// The partitioner marks such ops with `cache_axes`; --convert-braid-to-dist
// (lib/Conversion/BraidToDist/CacheContext.cpp) expands them into the chunk
// ops of BraidCacheContextOps.td and their all-gathers.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Partitioner.h"

#include "braid/Support/Debug.h"
#include "dialects/braid/IR/EntryPoints.h"

#define DEBUG_TYPE "braid-partition"

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::partition;

/// The cp axis when it splits something (size > 1).
static std::optional<int16_t> contextAxis(const Grid &grid) {
  std::optional<int16_t> cp = grid.find("cp");
  if (!cp || grid.sizes[*cp] == 1)
    return std::nullopt;
  return cp;
}

bool Partitioner::splitsSequence(func::FuncOp entry) {
  std::optional<EntryKind> kind = getEntryKind(entry);
  // A decode step's one new token per sequence is not split; its cache is.
  if (kind == EntryKind::Decode)
    return false;
  // A prompt length cp does not divide (the longest of a prompts file) is
  // kept whole: the cache is still split and attended by chunks.
  std::optional<int16_t> cp = contextAxis(grid);
  if (kind != EntryKind::Prefill || !cp || entry.getNumArguments() == 0)
    return true;
  RankedTensorType tokens = globalType(entry.getArgument(0));
  if (!tokens || tokens.getRank() < 2)
    return true;
  int64_t prompt = tokens.getDimSize(1), ranks = grid.sizes[*cp];
  if (prompt % ranks != 0) {
    LLVM_DEBUG(llvm::dbgs() << "@" << entry.getSymName() << ": a prompt of "
                            << prompt << " rows is not split over cp=" << ranks
                            << " (not a multiple): it runs whole on every cp "
                               "rank, its cache split\n");
    return false;
  }
  // A Mamba convolution's halo comes from the previous rank alone: a chunk
  // must hold its K-1 rows.
  int64_t halo = mambaHaloRows();
  if (prompt / ranks >= halo)
    return true;
  LLVM_DEBUG(llvm::dbgs() << "@" << entry.getSymName() << ": chunks of "
                          << prompt / ranks << " prompt rows over cp=" << ranks
                          << " are shorter than a Mamba convolution's halo ("
                          << halo << " rows): the prompt runs whole on every "
                             "cp rank\n");
  return false;
}

int64_t Partitioner::mambaHaloRows() {
  int64_t rows = 0;
  for (func::FuncOp f : functions)
    f.walk([&](ConvStepOp conv) {
      rows = std::max(rows, conv.getWeight().getType().getDimSize(1) - 1);
    });
  return rows;
}

/// A paged KV cache pools the pages of every sequence of a program: a batch
/// split over dp or ep would leave each rank a whole pool written only in
/// part (its own sequences' pages), a replicated state whose copies differ.
/// Serving runs dp as independent replicas of the program instead.
static LogicalResult checkPagedBatchSplit(ArrayRef<func::FuncOp> functions,
                                          const Grid &grid) {
  for (auto [axis, axisSize] : llvm::zip(grid.names, grid.sizes)) {
    // Copies: a lambda below names them (captured bindings are C++20).
    const std::string name = axis;
    const int64_t size = axisSize;
    if (size <= 1 || (name != "dp" && name != "ep"))
      continue;
    for (func::FuncOp f : functions) {
      WalkResult paged = f.walk([&](Operation *op) {
        if (!isa<PagedCacheWriteOp, PagedCacheAttentionOp>(op))
          return WalkResult::advance();
        op->emitError("--braid-partition: a paged KV cache is not split over ")
            << name << " (" << name << "=" << size
            << " in the grid): serve dp as replicas of the program "
               "(braid-run --serve --grid dp=N,tp=T)";
        return WalkResult::interrupt();
      });
      if (paged.wasInterrupted())
        return failure();
    }
  }
  return success();
}

LogicalResult Partitioner::checkInferenceGrid() {
  if (failed(checkPagedBatchSplit(functions, grid)))
    return failure();
  std::optional<int16_t> cp = contextAxis(grid);
  if (!cp)
    return success();
  int64_t ranks = grid.sizes[*cp];
  for (func::FuncOp f : functions) {
    // A page pool has no sequence dimension to cut into contiguous chunks
    // (a sequence's pages are wherever the scheduler put them): serving
    // under cp is later work.
    WalkResult paged = f.walk([&](Operation *op) {
      if (!isa<PagedCacheWriteOp, PagedCacheAttentionOp>(op))
        return WalkResult::advance();
      op->emitError("--braid-partition: a paged KV cache is not split over "
                    "cp (cp=")
          << ranks << " in the grid); serve on tp, or use cp=1";
      return WalkResult::interrupt();
    });
    if (paged.wasInterrupted())
      return failure();
    WalkResult walk = f.walk([&](CacheWriteOp write) {
      int64_t context = write.getCache().getType().getDimSize(1);
      if (context % ranks == 0)
        return WalkResult::advance();
      write.emitError("--braid-partition: a KV cache of ")
          << context << " rows per sequence cannot be split by sequence "
          << "over cp=" << ranks << " (contiguous chunks need a multiple; "
          << "choose --context accordingly)";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return success();
}

LogicalResult Partitioner::seedCacheSequence() {
  std::optional<int16_t> cp = contextAxis(grid);
  if (!cp)
    return success();
  for (func::FuncOp f : functions) {
    WalkResult walk = f.walk([&](CacheWriteOp write) {
      if (failed(seed(write.getCache(), 1, {*cp}, 1, write.getLoc(),
                      "the KV cache split by sequence over cp")))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return success();
}

void Partitioner::splitCacheSequence(Operation *op, const ShardingRule &rule,
                                     OpSplit &split) {
  std::optional<int16_t> cp = contextAxis(grid);
  if (!cp || !isa<CacheWriteOp, CacheAttentionOp>(op))
    return;
  // Operand #0 of cache_write and #1 (the key cache) of cache_attention,
  // whose seed is that of the cache the write updated (a Whole factor ties
  // no class through an op).
  unsigned cache = isa<CacheWriteOp>(op) ? 0 : 1;
  Value stored = op->getOperand(cache);
  while (auto write = stored.getDefiningOp<CacheWriteOp>())
    stored = write.getCache();
  const Seed *s = seedOf(stored, 1);
  if (!s || !llvm::is_contained(s->axes, *cp))
    return;
  // The new rows and the queries stay whole (their sequence factors are
  // Whole): every rank sees them all and keeps, or attends with, its chunk.
  split.axes[rule.factorOf(cache, 1)] = {*cp};
  split.cacheAxes = {*cp};
  LLVM_DEBUG(llvm::dbgs() << "'" << op->getName() << "' at " << op->getLoc()
                          << ": its cache is split by sequence over cp ("
                          << s->source << "): "
                          << (isa<CacheWriteOp>(op)
                                  ? "each rank writes the rows of its chunk"
                                  : "each rank attends over its chunk, the "
                                    "partials merged by log-sum-exp")
                          << "\n");
}
