//===- PrintSchedule.cpp - the --braid-print-schedule pass ----------------===//
//
// Assigns the layers of a model to pipeline chunks, builds one of the
// classic pipeline schedules, simulates it and prints stages, per-rank
// action orders and the figures (makespan, bubble fraction, activation
// peak) that choosing pp, microbatches and the schedule depends on.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/ReportNumbers.h"

#include "dialects/braid/Analysis/PipelineSchedule.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDPRINTSCHEDULEPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

/// Chrome/Perfetto JSON, the format runtime/src/trace.cpp writes: one
/// complete event per action, a thread per rank.
static LogicalResult writeTrace(StringRef path, const PipelineSchedule &s,
                                const PipelineSimulation &sim, Location loc) {
  std::error_code error;
  llvm::raw_fd_ostream file(path, error, llvm::sys::fs::OF_Text);
  if (error)
    return emitError(loc, "cannot open trace file '")
           << path << "': " << error.message();
  file << "{\"traceEvents\":[";
  bool first = true;
  for (auto [rank, timeline] : llvm::enumerate(sim.timelines)) {
    file << (first ? "" : ",") << "\n{\"name\":\"thread_name\",\"ph\":\"M\","
         << "\"pid\":0,\"tid\":" << rank << ",\"args\":{\"name\":\"rank "
         << rank << "\"}}";
    first = false;
    for (const TimedAction &t : timeline)
      file << ",\n{\"name\":\"" << s.label(t.action)
           << "\",\"cat\":\"pipeline\",\"ph\":\"X\",\"ts\":"
           << llvm::format("%.3f", t.start)
           << ",\"dur\":" << llvm::format("%.3f", t.end - t.start)
           << ",\"pid\":0,\"tid\":" << rank
           << ",\"args\":{\"chunk\":" << t.action.chunk
           << ",\"microbatch\":" << t.action.microbatch << "}}";
  }
  file << "\n],\"displayTimeUnit\":\"ms\"}\n";
  file.close();
  if (file.has_error())
    return emitError(loc, "cannot write trace file '") << path << "'";
  return success();
}

namespace mlir::braid {
namespace {
struct BraidPrintSchedulePass
    : braid::impl::BraidPrintSchedulePassBase<BraidPrintSchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Location loc = module.getLoc();
    SmallVector<func::FuncOp> steps = getEntries(module, EntryKind::TrainStep);
    if (steps.size() == 1)
      loc = steps.front().getLoc();

    // Options first: they are wrong whatever the model.
    ScheduleKind kind = schedule;
    FailureOr<PipelineSchedule> plan =
        buildSchedule(kind, pp, virtualStages, microbatches, loc);
    if (failed(plan))
      return signalPassFailure();

    FailureOr<func::FuncOp> step = getUniqueEntry(
        module, EntryKind::TrainStep, "--braid-print-schedule");
    if (failed(step))
      return signalPassFailure();
    FailureOr<SmallVector<int64_t>> costs = computeLayerCosts(module, *step);
    if (failed(costs))
      return signalPassFailure();
    int64_t chunks = plan->numChunks();
    FailureOr<SmallVector<LayerChunk>> split =
        layout.empty() ? balanceLayers(*costs, chunks, loc)
                       : layoutLayers(*costs, layout, chunks, loc);
    if (failed(split))
      return signalPassFailure();

    // One time unit is the forward of the costliest chunk; the backward
    // costs twice the forward, half input gradient (B), half weights (W).
    ChunkTimes times;
    times.comm = commTime;
    int64_t maxCost = 1;
    for (const LayerChunk &chunk : *split)
      maxCost = std::max(maxCost, chunk.cost);
    for (const LayerChunk &chunk : *split) {
      double forward = uniform ? 1.0 : double(chunk.cost) / double(maxCost);
      times.forward.push_back(forward);
      times.backward.push_back(forward);
      times.weight.push_back(forward);
    }
    FailureOr<PipelineSimulation> sim = simulateSchedule(*plan, times, loc);
    if (failed(sim))
      return signalPassFailure();
    if (!trace.empty() && failed(writeTrace(trace, *plan, *sim, loc)))
      return signalPassFailure();

    llvm::raw_ostream &os = llvm::outs();
    os << "schedule: " << stringifyScheduleKind(kind) << "\n";
    os << "layers: " << costs->size() << "\n";
    for (auto [index, chunk] : llvm::enumerate(*split)) {
      os << "stage " << index;
      if (plan->virtualStages > 1)
        os << " (rank " << plan->rankOf(index) << ")";
      os << ": layers " << chunk.begin << "-" << chunk.end - 1 << " (cost "
         << chunk.cost << ")\n";
    }
    for (auto [rank, actions] : llvm::enumerate(plan->ranks)) {
      os << "rank " << rank << ":";
      for (const PipelineAction &action : actions)
        os << " " << plan->label(action);
      os << "\n";
    }
    auto line = [&](const Twine &name, double value) {
      os << name << ": ";
      printReportNumber(os, value);
      os << "\n";
    };
    line("makespan", sim->makespan);
    line("busy_time", sim->busy);
    line("bubble_fraction", sim->bubbleFraction);
    // The reference assumes equal chunks; the ZB-H1 formula takes the
    // F/B/W ratio, which is 1:1:1 in both timings above.
    line("textbook_bubble_fraction",
         textbookBubbleFraction(kind, pp, virtualStages, microbatches, 1.0,
                                1.0, 1.0));
    for (auto [rank, peak] : llvm::enumerate(sim->peakLive))
      line("peak_live_microbatches rank " + Twine(rank), peak);
    os.flush();
    markAllAnalysesPreserved();
  }
};
} // namespace
} // namespace mlir::braid
