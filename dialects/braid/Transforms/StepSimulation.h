//===- StepSimulation.h - a per-rank program's step, simulated --*- C++ -*-===//
//
// The simulation --braid-print-plan prints (StepSimulation.cpp), for tools that
// take its figures rather than its text: braid-plan --compile takes the
// exposed communication of a plan's compiled program from it. Each program
// (a pipelined module's stages, together; else the step function) runs its
// ops in order on StepTiming's model: compute on the clock, each group's
// transfers in turn on its own link, a wait exposing what has not ended, a
// stage's wait for its neighbour's message before it left counted as bubble.
// CPU ranks that share a machine's cores (a description's host_cores) run
// on one clock, each program's op at its ranks' share of the cores.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_STEPSIMULATION_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_STEPSIMULATION_H

#include "dialects/braid/Analysis/StepTiming.h"

#include "braid/CostModel/ComputeCost.h"
#include "braid/CostModel/Hardware.h"

#include "braid/link_model.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>
#include <utility>

namespace mlir::braid {

struct SimulatedProgram {
  /// The pipeline stage (0 without a pipeline).
  int64_t stage = 0;
  double stepSeconds = 0, computeSeconds = 0, transferSeconds = 0, bubbleSeconds = 0;
  /// Exposed seconds per (kind, group): ("all_reduce", "dp,tp").
  std::map<std::pair<std::string, std::string>, double> exposed;
};

/// Simulates `funcs` together (a pipeline's stage programs, or the step
/// alone), one result each; nullopt when they wait for each other forever.
std::optional<SmallVector<SimulatedProgram>>
simulatePrograms(ModuleOp module, ArrayRef<func::FuncOp> funcs, const StepTiming &timing);

/// The simulated step of each program of `module` (getPrograms: its
/// pipeline stages', or else its one entry point's). `calibration` null: compute at the roofline. Fails with a
/// diagnostic on the module when it has no grid or no such program, or when
/// its stages wait for each other forever.
FailureOr<SmallVector<SimulatedProgram>>
simulateStep(ModuleOp module, const ::braid::cost::Hardware &hardware,
             const ::braid::link::Links &links,
             const ::braid::cost::ComputeCalibration *calibration);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_STEPSIMULATION_H
