//===- CompiledPlan.h - a plan measured on its compiled program -*- C++ -*-===//
//
// braid-plan --compile N: the first N plans go through the training
// pipeline (the flags their plan file gives braid-run, bf16), and the
// planner takes from the per-rank programs what its closed form only
// estimates: the memory per GPU from the static memory plan (the arena the
// runtime allocates, its busiest stage's, plus the runtime's reserve) and
// the exposed communication from the overlap scheduler's own simulation of
// the scheduled program (--braid-print-plan's, on the planner's hardware
// and calibration). The plan's step is the closed form's with its exposed
// communication replaced by the simulation's.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_PLANNER_COMPILEDPLAN_H
#define BRAID_LIB_PLANNER_COMPILEDPLAN_H

#include "braid/Planner/PlanCost.h"

#include "mlir/IR/BuiltinOps.h"

#include <array>

namespace braid::plan {

struct CompiledEstimate {
  /// The static memory plan's arena of the busiest stage (persistent
  /// storage and the step's frame), and that plus the runtime's reserve.
  double arenaBytes = 0, memoryBytes = 0;
  bool fits = false;
  /// The simulation's exposed communication per kind, of the stage with
  /// the most, and the step with it in place of the closed form's.
  std::array<double, size_t(CommKind::Count)> exposed{};
  double exposedSeconds = 0, stepSeconds = 0;
  /// The simulated program's own step (compute on the calibration's rates
  /// op by op), its slowest stage's.
  double simulatedStepSeconds = 0;
  double compileSeconds = 0;
};

/// Compiles `plan` of `model` (a builder-written module whose batch is the
/// plan's global batch; left as it is: a copy is compiled) with the schedule
/// timed on `hardwareName`, and measures it. Fails with the pipeline's
/// diagnostics.
llvm::Expected<CompiledEstimate>
compilePlan(mlir::ModuleOp model, const Plan &plan, const Estimate &estimate,
            llvm::StringRef hardwareName, const cost::Hardware &hw,
            const cost::ComputeCalibration &cal);

/// The kind a transfer of `collective` over `group` ("dp,tp") counts as.
CommKind commKindOf(llvm::StringRef collective, llvm::StringRef group, int zero);

} // namespace braid::plan

#endif // BRAID_LIB_PLANNER_COMPILEDPLAN_H
