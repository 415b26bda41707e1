//===- InferencePlan.h - braid-plan --inference ------------------*- C++ -*-===//
//
// The serving planner's options, run and report: `braid-plan --inference`
// searches or evaluates serving layouts (lib/Planner/InferenceSearch.h) and
// prints them ranked, as text or JSON.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TOOLS_BRAID_PLAN_INFERENCEPLAN_H
#define BRAID_TOOLS_BRAID_PLAN_INFERENCEPLAN_H

#include "braid/CostModel/ComputeCost.h"
#include "braid/Planner/ModelShape.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace braid::plan::report {

llvm::cl::OptionCategory &inferenceCategory();
/// Whether --inference was given.
bool inferenceRequested();

/// What braid-plan's common options give the serving planner.
struct InferenceContext {
  const ModelShape &model;
  const cost::Hardware &hw;
  const cost::ComputeCalibration &cal;
  /// --hardware as given (a built-in name or a description file).
  std::string hardwareSource;
  int64_t gpus;
  bool json;
  unsigned top, explain;
  std::string evaluate, planFile;
};

llvm::Error runInference(const InferenceContext &context, llvm::raw_ostream &os);

} // namespace braid::plan::report

#endif // BRAID_TOOLS_BRAID_PLAN_INFERENCEPLAN_H
