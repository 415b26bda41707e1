//===- PipelineSchedule.h - stages, pipeline schedules, simulation -*- C++ -*-===//
//
// The planning half of pipeline parallelism, independent of how a pipeline is
// executed: the cost of each layer of a model, a contiguous split of the
// layers into p * v model chunks (balanced, or from the user's layout),
// explicit per-rank action lists of the classic schedules (GPipe, 1F1B,
// interleaved 1F1B, zero-bubble ZB-H1) and an event simulation of them that
// yields the makespan, the bubble fraction and the activation memory peak.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_PIPELINESCHEDULE_H
#define BRAID_DIALECT_BRAID_ANALYSIS_PIPELINESCHEDULE_H

#include "dialects/braid/IR/BraidEnums.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::braid {

//===----------------------------------------------------------------------===//
// Stage assignment
//===----------------------------------------------------------------------===//

/// Forward FLOPs per step of each layer call of the step function `step`,
/// in order; what precedes the first layer (the embedding) is counted with
/// the first layer and what follows the last (LM head, loss) with the last.
/// Emits a located error where the model cannot be analysed or has no layer.
FailureOr<SmallVector<int64_t>> computeLayerCosts(ModuleOp module,
                                                  func::FuncOp step);

/// A model chunk: layers [begin, end) and their summed cost.
struct LayerChunk {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t cost = 0;
};

/// Splits `costs` into `chunks` contiguous non-empty chunks whose largest
/// cost is the smallest possible (exact). Earlier chunks take as many layers
/// as that bound allows, so the split is deterministic.
FailureOr<SmallVector<LayerChunk>> balanceLayers(ArrayRef<int64_t> costs,
                                                 int64_t chunks, Location loc);

/// Splits `costs` by a user layout (layer count per chunk), which must name
/// `chunks` counts, each at least 1, summing to the number of layers.
FailureOr<SmallVector<LayerChunk>> layoutLayers(ArrayRef<int64_t> costs,
                                                ArrayRef<int64_t> counts,
                                                int64_t chunks, Location loc);

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

// ScheduleKind is the dialect's enum (BraidEnums.h): symbolizeScheduleKind
// parses a name, stringifyScheduleKind prints one.

/// F: forward; B: backward (input gradient only when the schedule splits
/// the backward, else the whole backward); W: weight gradient.
enum class ActionKind { Forward, Backward, Weight };

struct PipelineAction {
  ActionKind kind;
  /// Model chunk (global virtual stage), 0 .. stages * virtualStages - 1;
  /// chunk c runs on rank c mod stages.
  int64_t chunk;
  int64_t microbatch;
};

struct PipelineSchedule {
  ScheduleKind kind;
  int64_t stages = 1;
  int64_t virtualStages = 1;
  int64_t microbatches = 1;
  /// Whether backward is split into B and W actions (zero-bubble).
  bool splitBackward = false;
  /// Per rank, its actions in the order it runs them.
  SmallVector<SmallVector<PipelineAction>> ranks;

  int64_t numChunks() const { return stages * virtualStages; }
  int64_t rankOf(int64_t chunk) const { return chunk % stages; }
  /// Short label: F3 (v = 1) or F3c1 (microbatch 3 of the rank's chunk 1).
  std::string label(const PipelineAction &action) const;
};

/// Builds the per-rank action lists. Emits a located error for stages < 1,
/// microbatches < 1, virtualStages < 1, virtualStages != 1 outside
/// interleaved, and interleaved with microbatches not divisible by stages.
FailureOr<PipelineSchedule> buildSchedule(ScheduleKind kind, int64_t stages,
                                          int64_t virtualStages,
                                          int64_t microbatches, Location loc);

//===----------------------------------------------------------------------===//
// Simulation
//===----------------------------------------------------------------------===//

/// Durations per chunk, in any one time unit.
struct ChunkTimes {
  SmallVector<double> forward;
  /// Input-gradient part of the backward.
  SmallVector<double> backward;
  /// Weight-gradient part; added to B by schedules that do not split it.
  SmallVector<double> weight;
  /// Time of one activation or gradient transfer between ranks.
  double comm = 0;
};

struct TimedAction {
  double start;
  double end;
  PipelineAction action;
};

struct PipelineSimulation {
  SmallVector<SmallVector<TimedAction>> timelines;
  double makespan = 0;
  /// Busy time summed over ranks.
  double busy = 0;
  /// 1 - busy / (ranks * makespan).
  double bubbleFraction = 0;
  /// Per rank, most microbatch-chunks whose forward is done and backward
  /// (B) is not: the activations held at once.
  SmallVector<int64_t> peakLive;
};

/// Runs `schedule`: an action starts once its rank is free and its
/// dependencies are done (F after F of the previous chunk, B after B of the
/// next chunk or, on the last chunk, after its F, W after its B), plus
/// `times.comm` for each dependency that crosses ranks. Emits an error if
/// the action lists deadlock. Without `keepTimelines` the result's
/// timelines stay empty (the planner, which simulates schedules of millions
/// of actions, reads only the makespan and the activations in flight).
FailureOr<PipelineSimulation> simulateSchedule(const PipelineSchedule &schedule,
                                               const ChunkTimes &times,
                                               Location loc,
                                               bool keepTimelines = true);

/// The textbook bubble fraction of `kind` with equal stages, relative to the
/// makespan: (p-1)/(m+p-1) for GPipe and 1F1B, (p-1)/(v m+p-1) for
/// interleaved (Megatron's (p-1)/(v m) is relative to the ideal time), and
/// (p-1)(tf+tb-tw) / (m(tf+tb+tw) + (p-1)(tf+tb-tw)) for ZB-H1 (Qi et al.).
double textbookBubbleFraction(ScheduleKind kind, int64_t stages,
                              int64_t virtualStages, int64_t microbatches,
                              double forward, double backward, double weight);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_PIPELINESCHEDULE_H
