//===- MemoryPlan.h - static arena layout of a braid program ----*- C++ -*-===//
//
// Every tensor of a program gets a byte offset in one arena, so the peak
// memory is known at compile time:
//
//   [ parameters | state | inputs | loss | frame of @step                ]
//                                  [ buffers ... | frame of a callee ... ]
//
// Each function is planned once as a frame: its values' buffers are placed by
// liveness (program order within its single block, first-fit by decreasing
// size), and a call reserves the callee's frame for the duration of the call.
// A value returned by a function is written straight into the buffer its
// caller planned for the call's result; reshapes alias their input; values
// inside a fused elementwise group are never stored. A dist transfer's
// operands stay live until its dist.wait. Every buffer is a value of the
// IR (--convert-braid-to-dist expands partitioned ops into ops of tensors),
// so the planned peak equals the measured one.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_MEMORYPLAN_H
#define BRAID_DIALECT_BRAID_ANALYSIS_MEMORYPLAN_H

#include "dialects/braid/Analysis/ElementwiseFusion.h"
#include "dialects/braid/IR/EntryPoints.h"
#include "dialects/braid/IR/Grid.h"
#include "dialects/braid/IR/OpRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <string>

namespace mlir::braid {

/// Buffers are placed at multiples of this many bytes.
constexpr int64_t kBufferAlignment = 64;

/// Where a value's data lives inside its function.
struct Storage {
  enum class Kind {
    Frame,    ///< `offset` bytes into the function's frame
    Argument, ///< the function's argument `index` (a pointer from the caller)
    Result,   ///< the caller's buffer for result `index`
    Param,    ///< the parameter `name`, at `offset` bytes into the arena
    /// A view of the parameter `name` (at `offset` bytes into the arena):
    /// its flat elements from `at` (an index value) on, `elementBytes` each
    /// (braid.get_param_range, whose reader writes nothing there).
    ParamRange,
  };
  Kind kind = Kind::Frame;
  int64_t offset = 0;
  unsigned index = 0;
  StringRef name;
  Value at;
  int64_t elementBytes = 0;
};

/// One buffer of a frame: the values sharing it (a value and its reshapes).
struct FrameBuffer {
  Value value; ///< the value that defines it (first in program order)
  int64_t offset = 0;
  int64_t bytes = 0; ///< rounded up to kBufferAlignment
  unsigned firstOp = 0, lastOp = 0; ///< live range in op positions
};

struct FunctionPlan {
  func::FuncOp func;
  int64_t frameBytes = 0;
  std::unique_ptr<ElementwiseFusion> fusion;
  /// Storage of every value used in the function (inner fused values have
  /// none).
  llvm::DenseMap<Value, Storage> storage;
  SmallVector<FrameBuffer> buffers;
  /// Offset of the callee's frame inside this frame, per call.
  llvm::DenseMap<Operation *, int64_t> calleeFrame;
  /// Position of each op in the block (fused members: their root's).
  llvm::DenseMap<Operation *, unsigned> position;
};

struct PersistentTensor {
  std::string name;
  RankedTensorType type;
  int64_t offset = 0;
};

/// How much of a program to plan.
enum class PlanDetail {
  /// Only the persistent part (parameters, states, inputs and loss: what
  /// another pipeline rank's program holds); no function's frame.
  Persistent,
  /// Every frame's size as the peak of its live bytes (callee frames
  /// included), no offsets: linear in the program, a lower bound of the
  /// placement's size (what the overlap scheduler's budget compares).
  PeakLiveBytes,
  /// Every buffer at its offset.
  Full,
};

struct ProgramPlan {
  func::FuncOp entry;
  /// The entry's `braid.finish` function (none: null): what completes the
  /// parameters after the last step (the all-gathers of ZeRO's updated
  /// ranges that a step defers to the next), planned in the frame the
  /// entry's takes when it does not run.
  func::FuncOp finish;
  /// What kind of program the entry is (a training step's one output is its
  /// loss).
  EntryKind kind = EntryKind::TrainStep;
  /// Parameters and program state in declaration order, then the entry's
  /// inputs and its outputs (its results, in order), each at its own place
  /// of the arena's persistent part: the runtime fills the inputs before a
  /// call and reads the outputs after it.
  SmallVector<PersistentTensor> params, states, inputs, outputs;
  /// Bytes before the entry's frame.
  int64_t persistentBytes = 0;
  /// The planned peak: persistent bytes plus the entry's frame.
  int64_t arenaBytes = 0;
  llvm::MapVector<Operation *, std::unique_ptr<FunctionPlan>> functions;
  PlanDetail detail = PlanDetail::Full;

  /// The arena offset of the parameter or state `name`.
  std::optional<int64_t> offsetOf(StringRef name) const;
  /// The offsets of `params` and `states` by name, for offsetOf: the
  /// emitter and the frame planner ask for every parameter a step reads.
  llvm::StringMap<int64_t> persistentOffsets;

  const FunctionPlan &get(func::FuncOp func) const {
    return *functions.find(func.getOperation())->second;
  }
};

/// Plans the program of `module` whose entry point is `entry` (and its
/// `braid.finish` function, if any); emits a located error for what the plan
/// does not support (control flow, recursion, external calls, returning an
/// argument, a step without exactly one scalar result, a finish function
/// without a body).
FailureOr<ProgramPlan> planProgram(ModuleOp module, func::FuncOp entry,
                                   PlanDetail detail = PlanDetail::Full);

/// The largest arena of the programs of `module` (getPrograms: its pipeline
/// ranks' entries, or else its entry points) planned at `detail`: by
/// default PlanDetail::PeakLiveBytes, the most bytes live at once (linear in
/// the program; the placement the emitter runs can only add fragmentation to
/// it); PlanDetail::Full gives the arena the runtime allocates. Fails, with
/// the plan's diagnostic, when a program cannot be planned.
FailureOr<int64_t> peakArenaBytes(ModuleOp module,
                                  PlanDetail detail = PlanDetail::PeakLiveBytes);

//===----------------------------------------------------------------------===//
// SPMD programs: block re-layouts (BlockRelayout.cpp)
//===----------------------------------------------------------------------===//

/// A permutation of a tensor's elements as braid_k_transpose takes it:
/// the input has `shape`, the output y.shape[i] = shape[perm[i]].
struct Transpose {
  SmallVector<int64_t> shape, perm;
};

/// The runtime's collectives move one contiguous block per rank, in
/// communicator rank order. A tensor of `shape` whose dimension `dim` holds
/// one block per rank of `group` (block c at [c L, (c + 1) L)) is laid out
/// that way only when `dim` is its outermost dimension of size above one
/// and the group lists its axes in grid order; otherwise the collective goes
/// through a tensor in rank-block layout (BraidToDist), reached by `toBlocks` and
/// left by `fromBlocks`. Nullopt when no re-layout is needed.
struct BlockRelayout {
  Transpose toBlocks, fromBlocks;
};
std::optional<BlockRelayout> getBlockRelayout(ArrayRef<int64_t> shape,
                                              int64_t dim,
                                              const GridGroup &group);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_MEMORYPLAN_H
