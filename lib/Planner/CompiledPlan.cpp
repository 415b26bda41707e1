//===- CompiledPlan.cpp - a plan measured on its compiled program ---------===//

#include "braid/Planner/CompiledPlan.h"

#include "braid/Pipelines.h"
#include "braid/Planner/PlanFile.h"
#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/Transforms/StepSimulation.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"

#include <chrono>

using namespace braid::plan;
using namespace llvm;

CommKind braid::plan::commKindOf(StringRef collective, StringRef group, int zero) {
  SmallVector<StringRef> axes;
  group.split(axes, ',');
  if (axes.size() == 1) {
    if (axes[0] == "tp")
      return CommKind::TP;
    if (axes[0] == "cp")
      return CommKind::CP;
    if (axes[0] == "ep")
      return CommKind::EP;
    if (axes[0] == "pp")
      return CommKind::PP;
  }
  // ZeRO's gathers of parameters (ZeRO-3's before use, ZeRO-1/2's after the
  // update) run over the data-parallel axes; what else runs there reduces.
  if (collective == "all_gather" && zero > 0)
    return CommKind::ZeroGather;
  return CommKind::DP;
}

Expected<CompiledEstimate> braid::plan::compilePlan(mlir::ModuleOp model, const Plan &plan,
                                                   const Estimate &estimate,
                                                   StringRef hardwareName,
                                                   const cost::Hardware &hw,
                                                   const cost::ComputeCalibration &cal) {
  auto start = std::chrono::steady_clock::now();
  Plan full = plan;
  if (full.layout.empty() && full.pp > 1)
    full.layout = estimate.layout;
  RunFlags flags = runFlags(full, /*bf16=*/true);
  ::braid::TrainingPipelineOptions options;
  flags.applyTo(options);
  options.scheduleHardware = hardwareName.str();

  mlir::OwningOpRef<mlir::ModuleOp> module = model.clone();
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler collect(model.getContext(), [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diagnostics += (diagnostics.empty() ? "" : "; ") + d.str();
    return mlir::success();
  });
  auto fail = [&](const Twine &what) {
    return createStringError(inconvertibleErrorCode(),
                             what + " " + flags.grid + (diagnostics.empty() ? "" : ": ") +
                                 diagnostics);
  };
  mlir::PassManager pm(model.getContext());
  std::string error;
  if (failed(::braid::buildTrainingPipeline(pm, options, &error)))
    return fail("cannot build the training pipeline (" + error + ") for");
  if (failed(pm.run(*module)))
    return fail("the training pipeline fails on");

  CompiledEstimate c;
  // Memory: the busiest stage's arena as the runtime allocates it (its
  // buffers placed: the peak of live bytes plus the placement's
  // fragmentation, 1.2 GB of 78 GB on Llama 3 8B at dp=16).
  mlir::FailureOr<int64_t> arena =
      mlir::braid::peakArenaBytes(*module, mlir::braid::PlanDetail::Full);
  if (failed(arena))
    return fail("no memory plan for");
  c.arenaBytes = double(*arena);
  c.memoryBytes = c.arenaBytes + cal.reservedBytes;
  c.fits = c.memoryBytes <= hw.memoryBytes;

  // Exposed communication: the scheduled program's simulation, on the
  // planner's rates.
  ::braid::link::Links noLinks;
  mlir::FailureOr<SmallVector<mlir::braid::SimulatedProgram>> simulated =
      mlir::braid::simulateStep(*module, hw, noLinks, &cal);
  if (failed(simulated))
    return fail("cannot simulate the step of");
  for (const mlir::braid::SimulatedProgram &s : *simulated) {
    std::array<double, size_t(CommKind::Count)> kinds{};
    double total = 0;
    for (auto &[key, seconds] : s.exposed) {
      kinds[size_t(commKindOf(key.first, key.second, plan.zero))] += seconds;
      total += seconds;
    }
    if (total >= c.exposedSeconds) {
      c.exposedSeconds = total;
      c.exposed = kinds;
    }
    c.simulatedStepSeconds = std::max(c.simulatedStepSeconds, s.stepSeconds);
  }
  c.stepSeconds = estimate.stepSeconds - estimate.exposedSeconds() + c.exposedSeconds;
  c.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c;
}
