//===- PlanFile.h - a chosen plan, written for braid-run ---------*- C++ -*-===//
//
// braid-plan --plan-file writes the plan it chose as JSON: the model and the
// cluster it is for, the plan as braid-run flags (`plan`), what the cost
// model predicts for it, and the same plan at a reduced scale (`reduced`):
// every axis the plan uses at size 2 (the fewest kept when they would need
// more than 8 ranks), a tiny model of the same family built by the model
// builder, so that `braid-run --plan-file` executes the plan's kinds of
// parallelism, ZeRO stage, recompute, schedule and virtual stages on CPU
// ranks and checks it with --verify. braid-run reads `reduced` for CPU ranks
// and `plan` for GPU ranks (--backend cuda).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_PLANNER_PLANFILE_H
#define BRAID_LIB_PLANNER_PLANFILE_H

#include "braid/Planner/Search.h"

#include "dialects/braid/IR/BraidEnums.h"

#include <map>
#include <optional>

namespace braid {
struct TrainingPipelineOptions;
} // namespace braid

namespace braid::plan {

/// What braid-run takes from a plan file's section: a plan as the training
/// pipeline's options (runFlags and readPlanFile set every field).
struct RunFlags {
  std::string grid;
  int zero = 0;
  mlir::braid::Recompute recompute{};
  int64_t microbatches = 0;
  mlir::braid::ScheduleKind schedule{};
  int64_t virtualStages = 0;
  std::vector<int64_t> ppLayout;
  bool sequenceParallel = false;
  /// The element type floats are stored in, where the plan names one.
  std::optional<mlir::braid::Precision> dtype;

  /// Sets these options of `options` (the others are left as they are).
  void applyTo(TrainingPipelineOptions &options) const;
};

/// The plan as it runs at a reduced scale on CPU ranks (at most `maxRanks`),
/// the tiny preset of the model's family, and that preset's overrides.
struct ReducedPlan {
  Plan plan;
  std::string preset;
  std::map<std::string, int64_t> overrides;
};
ReducedPlan reducePlan(const ModelShape &model, const Plan &plan, int64_t maxRanks = 8);

RunFlags runFlags(const Plan &plan, bool bf16);

llvm::Error writePlanFile(llvm::StringRef path, const ModelShape &model,
                          const cost::Hardware &hw, int64_t gpus, int64_t globalBatch,
                          const RankedPlan &chosen);

/// The flags of section `section` ("plan" or "reduced") of plan file `path`;
/// a message naming the file when it is not a plan file, or the key whose
/// value is not one of its choices.
llvm::Expected<RunFlags> readPlanFile(llvm::StringRef path, llvm::StringRef section);

} // namespace braid::plan

#endif // BRAID_LIB_PLANNER_PLANFILE_H
