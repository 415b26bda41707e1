//===- StepTiming.h - seconds of a dist program's ops and transfers -*- C++ -*-===//
//
// The one timing model of a per-rank dist program that --braid-print-plan's
// simulation and --braid-schedule-overlap's list scheduler both charge:
// compute at the hardware's roofline (FLOPs at its bf16 peak or the bytes an
// op reads and writes at its HBM bandwidth, whichever is slower), each
// transfer by the ring model the runtime counts too, timed by the hardware's
// alpha-beta links (lib/CostModel/CommCost) or, given `link=`, by the CPU
// ranks' link emulator (braid/link_model.h), as BRAID_LINK charges it. With
// a calibration (lib/CostModel/ComputeCost), compute runs at the rates the
// planner charges instead: one cost model for the planner, the scheduler and
// the plan's report.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_STEPTIMING_H
#define BRAID_DIALECT_BRAID_ANALYSIS_STEPTIMING_H

#include "dialects/braid/IR/Grid.h"

#include "braid/CostModel/CommCost.h"
#include "braid/CostModel/ComputeCost.h"
#include "braid/CostModel/Hardware.h"

#include "braid/link_model.h"

#include "mlir/IR/Operation.h"

#include <optional>
#include <string>
#include <utility>

namespace mlir::braid {

class StepTiming {
public:
  /// `links` empty: transfers are timed on `hardware`'s links.
  /// `calibration` null: compute at the roofline; else at the rates it
  /// gives by shape (GEMM and flash attention efficiencies, memory-bound
  /// kernels at a fraction of the bandwidth, a launch per kernel), the
  /// planner's (lib/Planner/LayerCost.cpp).
  StepTiming(const Grid &grid, const ::braid::cost::Hardware &hardware,
             const ::braid::link::Links &links,
             const ::braid::cost::ComputeCalibration *calibration = nullptr)
      : grid(grid), hardware(hardware), links(links), calibration(calibration) {}

  /// A transfer as the ring model counts it: `blocks` blocks of `blockBytes`
  /// sent per rank over `axes` (what --braid-print-plan counts and the
  /// runtime too).
  struct Block {
    llvm::StringRef kind;
    AxisList axes;
    double blockBytes, blocks;
  };
  /// The block of a collective (shard before --convert-braid-to-dist, dist
  /// after it) or of a dist send or shift; nullopt for other ops (a receive
  /// is its neighbour's send).
  std::optional<Block> blockOf(Operation *op) const;

  /// (kind, group): "all_reduce", "dp,tp".
  using Key = std::pair<std::string, std::string>;
  /// A dist transfer (a receive too) as the simulation runs it: its key and
  /// the seconds the busiest rank of its group takes; nullopt for other ops.
  std::optional<std::pair<Key, double>> transfer(Operation *op) const;

  /// The transfer of `kind` whose block is `blockBytes`, `blocks` of them,
  /// over the group of `axes`.
  ::braid::cost::TransferTime predict(llvm::StringRef kind, llvm::ArrayRef<int16_t> axes,
                                      double blockBytes, double blocks) const;

  /// The ring model's blocks a rank sends for `kind` over `axes`.
  double ringBlocks(llvm::StringRef kind, llvm::ArrayRef<int16_t> axes) const {
    return ::braid::link::ringBlocks(kind.str(), double(grid.size(axes)));
  }

  /// The seconds of a compute op on one rank (0 for what moves no data: a
  /// parameter read, a reshape, a terminator, dist's bookkeeping). A call
  /// is its callee's business: 0 here.
  double computeSeconds(Operation *op) const;

  /// What compute is timed at: "the roofline", or "h100-sxm's calibration".
  std::string computeBasis() const;

  /// The calibration an option names for `hardware`: "auto", the built-in
  /// calibration of a named hardware (none for a description file: its
  /// compute at the roofline); "roofline": none; else a name or a .json
  /// file (lib/CostModel/calibration).
  static llvm::Expected<std::optional<::braid::cost::ComputeCalibration>>
  calibrationFor(llvm::StringRef option, llvm::StringRef hardware);

  const Grid &grid;
  const ::braid::cost::Hardware &hardware;
  const ::braid::link::Links &links;
  const ::braid::cost::ComputeCalibration *calibration;

private:
  double calibratedSeconds(Operation *op, double bytes) const;
};

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_STEPTIMING_H
