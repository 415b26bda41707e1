//===- BraidToDist.h - protocol families of the dist lowering ---*- C++ -*-===//
//
// One function per protocol family, each in its own file, called by the
// --convert-braid-to-dist pass (BraidToDist.cpp) on every op it handles.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_CONVERSION_BRAIDTODIST_BRAIDTODIST_H
#define BRAID_LIB_CONVERSION_BRAIDTODIST_BRAIDTODIST_H

#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/Analysis/StepTiming.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <optional>

namespace braid::conversion {

/// Whether `op` is a upstream shard collective that moves data
/// (all_reduce, all_gather, reduce_scatter, all_to_all).
bool isShardTransfer(mlir::Operation *op);

/// Replaces the shard collective `op` by dist ops (Collectives.cpp).
mlir::LogicalResult lowerShardCollective(mlir::Operation *op);

/// Whether `op` is attention (or its gradient) by key blocks: ring attention,
/// queries that are this rank's chunk, or a sequence in zigzag order
/// (ContextAttention.cpp).
bool isContextAttention(mlir::Operation *op);

/// Replaces context-parallel attention by block ops and, for a ring, its
/// dist.shift transfers (ContextAttention.cpp).
mlir::LogicalResult lowerContextAttention(mlir::Operation *op);

/// Whether `op` is a Mamba op over this rank's chunk of a sequence
/// (`context_axes`: conv1d, selective_scan and their gradients).
bool isSequenceChunked(mlir::Operation *op);

/// Replaces a context-parallel Mamba op by chunk ops and their transfers
/// (SequenceChunks.cpp).
mlir::LogicalResult lowerSequenceChunked(mlir::Operation *op);

/// Whether `op` is an embedding or cross-entropy over this rank's rows of
/// the vocabulary, or a cross-entropy over a share of the batch's rows
/// (VocabParallel.cpp).
bool isVocabParallel(mlir::Operation *op);

/// Replaces a vocabulary-parallel op by its pieces and their all-reduces
/// (VocabParallel.cpp).
mlir::LogicalResult lowerVocabParallel(mlir::Operation *op);

/// Whether `op` is an optimizer update sharded over `zero_axes`
/// (ZeroUpdate.cpp).
bool isZeroUpdate(mlir::Operation *op);

/// Replaces a ZeRO-sharded update by the update of this rank's range and
/// the all-gather of the parameter (ZeroUpdate.cpp). `symbols` caches the
/// module's table: a lookup per update would scan the module, quadratic in
/// layers.
mlir::LogicalResult lowerZeroUpdate(mlir::Operation *op,
                                    mlir::SymbolTableCollection &symbols);

/// A group as dist ops state it: the program's grid and the group's axes in
/// the listed order (grid order, where a dist transfer needs it).
struct DistGroup {
  mlir::FlatSymbolRefAttr grid;
  mlir::DenseI16ArrayAttr axes;
};
DistGroup getDistGroup(mlir::OpBuilder &b, mlir::Operation *anchor,
                       const mlir::braid::GridGroup &group);

/// This rank's coordinate over `group`'s axes in the listed order: a
/// dist.coordinate, composed from one per axis when the axes are not listed
/// in grid order.
mlir::Value buildCoordinate(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Operation *anchor,
                            const mlir::braid::GridGroup &group);

/// The group a transfer runs over, as a key ("grid:0,1,"): transfers with
/// equal keys share a communicator (Groups.cpp).
std::string transferGroupKey(mlir::Operation *op);

/// `loc` without its name: the ops of an expansion but the one that
/// produces the replaced op's result (which keeps the name dumps use).
mlir::Location unnamed(mlir::Location loc);

/// Replaces the single-result `op` by `result`, the value its expansion
/// produced, and erases it: the producer takes the op's location (its name,
/// which dumps use) and the op's recorded place in the global tensor
/// (`braid.result_layouts`, for dumps), on the result that replaces it.
void replaceLowered(mlir::Operation *op, mlir::Value result);

/// In each stage of a pipelined module, the gradient reductions (and the
/// cotangent's send) that follow a chunk's last backward call move into a
/// copy of the chunk's backward made for that call, where each can start
/// when its layer's gradient is final (OverlapRewrites.cpp).
void specializeLastBackward(mlir::ModuleOp module, std::optional<int16_t> pp);

/// ZeRO-3's gathers of a function's arguments move to its callers, before
/// each call (OverlapRewrites.cpp). Returns the most bytes one call's moved
/// gathers produce (0: none moved).
int64_t hoistArgumentGathers(mlir::ModuleOp module);

/// ZeRO-1/2's gathers of updated parameter ranges, which end a step, move
/// to the next one, before each parameter's first read (into a copy of a
/// chunk's forward made for its first call, when the chunk reads it); the
/// step's `braid.finish` names a function of the same gathers
/// (DeferParamGathers.cpp), in each program of the module (getPrograms: a
/// pipeline's ranks' steps, or else its entry points). Returns how many
/// gathers moved.
unsigned deferParamGathers(mlir::ModuleOp module);

/// Bucket caps of bucketReductions, in bytes (0: no buckets).
struct BucketSizes {
  int64_t bytes = 0;      ///< a bucket closes once it holds this many
  int64_t firstBytes = 0; ///< the first bucket of a block: this many
};

/// Combines consecutive reductions of one group into buckets, each one
/// transfer of their dist.pack, in `block` scheduled with every start right
/// after its dependencies (GradientBuckets.cpp). `ordered` transfers (a
/// pipeline's groups over pp) stay as they are; `isBarrier` ops (writes of
/// persistent storage) bound where a member is needed. Returns the bytes of
/// the largest bucket formed (0: none).
int64_t bucketReductions(mlir::Block &block, BucketSizes sizes,
                         llvm::function_ref<bool(mlir::Operation *)> ordered,
                         llvm::function_ref<bool(mlir::Operation *)> isBarrier);

/// What listSchedule keeps beyond the order of definitions and uses, from
/// --braid-schedule-overlap (ScheduleOverlap.cpp).
struct ListScheduleRules {
  /// Writes persistent storage, itself or through a call: no op crosses it.
  llvm::function_ref<bool(mlir::Operation *)> isBarrier;
  /// A transfer whose group keeps its program order (a pipeline's over pp).
  llvm::function_ref<bool(mlir::Operation *)> ordered;
  /// The groups a call issues transfers on (null: none).
  llvm::function_ref<const llvm::StringSet<> *(mlir::Operation *)> callGroups;
  /// The ops only a transfer reads, which move with it across calls (a
  /// gradient's reshape to the flat form it sends, a parameter's read).
  llvm::function_ref<llvm::SmallVector<mlir::Operation *>(mlir::Operation *)> feeders;
  /// What a transfer (and what moves with it) starts after besides what it
  /// reads: a prefetch, the call ahead of its first use; null: nothing.
  llvm::function_ref<mlir::Operation *(mlir::Operation *)> startAfter;
  /// The seconds of a call: its callee's scheduled program.
  llvm::function_ref<double(mlir::Operation *)> callSeconds;
  /// The persistent tensors an op names, itself or through a call; and the
  /// parameters it sets: the ops touching a parameter some op of the block
  /// sets keep their order.
  llvm::function_ref<llvm::StringSet<>(mlir::Operation *)> touchedParams;
  llvm::function_ref<llvm::StringSet<>(mlir::Operation *)> setParams;
  /// false: compute keeps its program order; only starts and waits move.
  bool byCost = true;
  /// The frame a call holds while it runs (its callee's peak of live
  /// bytes), as its callee is scheduled or (false) in program order; an op
  /// with regions holds none.
  llvm::function_ref<int64_t(mlir::Operation *, bool scheduled)> callBytes;
  /// The most bytes the block may hold live at once (LiveBytes.h);
  /// negative: no budget.
  int64_t memoryBudget = -1;
};

/// What listSchedule found: the block's predicted seconds as ordered and its
/// peak of live bytes.
struct ListScheduleResult {
  double seconds = 0;
  int64_t peak = 0;
};

/// Orders `block` by list scheduling over a timing model (ListSchedule.cpp):
/// each transfer starts as soon as what it reads is there, each wait is
/// taken just before the first op that needs it, and among the ops ready to
/// run the one that does not stall on a transfer in flight goes first, the
/// longest path to the block's end (transfers counted at their seconds)
/// breaking ties. `timing` null: every op costs nothing (program order).
/// Within a memory budget (`memoryBudget`): a unit that would raise the peak
/// of live bytes over the budget waits, and when nothing fits, the wait of a
/// transfer in flight that frees the most is taken first.
ListScheduleResult listSchedule(mlir::Block &block, const mlir::braid::StepTiming *timing,
                                const ListScheduleRules &rules);

/// Schedules every function of `module`, each after its callees
/// (OverlapScheduler.cpp): starts early, reductions in buckets of `buckets`,
/// then listSchedule within `slack` bytes over each function's program-order
/// peak (negative: no budget). `prefetchAhead`: how many calls ahead of its
/// first use a prefetch may start. Returns the bytes of the largest bucket
/// formed (0: none).
int64_t scheduleFunctions(mlir::ModuleOp module, unsigned prefetchAhead, BucketSizes buckets,
                          bool moveCompute, const mlir::braid::StepTiming *timing,
                          int64_t slack);

} // namespace braid::conversion

#endif // BRAID_LIB_CONVERSION_BRAIDTODIST_BRAIDTODIST_H
