//===- PlanReport.h - braid-plan's reports and --evaluate's plans -*- C++ -*-===//
//
// What braid-plan prints of ranked plans (the table, --explain's breakdown,
// the JSON of --format json) and how it reads a plan given on the command
// line (--evaluate): the tool's text, apart from its search and options
// (braid-plan.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TOOLS_BRAID_PLAN_PLANREPORT_H
#define BRAID_TOOLS_BRAID_PLAN_PLANREPORT_H

#include "braid/Planner/Search.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace braid::plan::report {

/// Bytes in GiB.
double gb(double bytes);
/// The ranked plans as a table, a line each.
void printTable(llvm::raw_ostream &os, const std::vector<RankedPlan> &plans);
/// One plan's step broken into compute, recompute, bubble, optimizer and
/// exposed communication per kind, and its memory into its parts.
void printExplain(llvm::raw_ostream &os, const RankedPlan &r);
/// One plan and its estimate as --format json prints it.
llvm::json::Object toJson(const RankedPlan &r);
/// A plan as --evaluate gives it ("pp=8,dp=16,tp=8,vpp=2,mbs=1,zero=1,...")
/// for a global batch of `batch` sequences.
llvm::Expected<Plan> parsePlan(llvm::StringRef text, int64_t batch);

} // namespace braid::plan::report

#endif // BRAID_TOOLS_BRAID_PLAN_PLANREPORT_H
