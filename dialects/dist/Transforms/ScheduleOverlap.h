//===- ScheduleOverlap.h - the parts of --braid-schedule-overlap -*- C++ -*-===//
//
// One function per job, each in its own file, called by the
// --braid-schedule-overlap pass (ScheduleOverlap.cpp): the rewrites that move
// transfers between functions, the gradient buckets, the list scheduler and
// the driver that schedules every function after its callees.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_DIST_TRANSFORMS_SCHEDULEOVERLAP_H
#define BRAID_DIALECT_DIST_TRANSFORMS_SCHEDULEOVERLAP_H

#include "dialects/braid/Analysis/StepTiming.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <optional>

namespace mlir::dist {

/// In each stage of a pipelined module, the gradient reductions (and the
/// cotangent's send) that follow a chunk's last backward call move into a
/// copy of the chunk's backward made for that call, where each can start
/// when its layer's gradient is final (OverlapRewrites.cpp).
void specializeLastBackward(mlir::ModuleOp module, std::optional<int16_t> pp);

/// ZeRO-3's gathers of a function's arguments move to its callers, before
/// each call (OverlapRewrites.cpp). Returns the most bytes one call's moved
/// gathers produce (0: none moved).
int64_t hoistArgumentGathers(mlir::ModuleOp module);

/// Whether some function of `module` gathers an argument that
/// hoistArgumentGathers could move: without one it moves nothing, so a
/// schedule need not copy the module to try.
bool mayHoistArgumentGathers(mlir::ModuleOp module);

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
ListScheduleResult listSchedule(mlir::Block &block, const braid::StepTiming *timing,
                                const ListScheduleRules &rules);

/// Schedules every function of `module`, each after its callees
/// (OverlapScheduler.cpp): starts early, reductions in buckets of `buckets`,
/// then listSchedule within `slack` bytes over each function's program-order
/// peak (negative: no budget). `prefetchAhead`: how many calls ahead of its
/// first use a prefetch may start. Returns the bytes of the largest bucket
/// formed (0: none).
int64_t scheduleFunctions(mlir::ModuleOp module, unsigned prefetchAhead, BucketSizes buckets,
                          bool moveCompute, const braid::StepTiming *timing,
                          int64_t slack);

} // namespace mlir::dist

#endif // BRAID_DIALECT_DIST_TRANSFORMS_SCHEDULEOVERLAP_H
