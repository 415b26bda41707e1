//===- ServePlanFile.h - a chosen serving layout, written for braid-run -*- C++ -*-===//
//
// braid-plan --inference --plan-file writes the serving layout it chose as
// JSON: the model, cluster and workload it is for, what the cost model
// predicts, and the layout as braid-run's --generate / --serve flags (`run`:
// grid, batch, prompt length, context, page size, KV pages, prefill chunk,
// and for separate prefill and decode layouts --disaggregate with the
// prefill group's grid). `braid-run --plan-file` reads `run`.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_PLANNER_SERVEPLANFILE_H
#define BRAID_PLANNER_SERVEPLANFILE_H

#include "braid/Planner/InferenceSearch.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace braid::plan {

/// What braid-run takes from a serving plan file.
struct ServeRunFlags {
  /// --grid (the decode group's with --disaggregate); empty on one rank.
  std::string grid;
  /// --prefill-grid with --disaggregate.
  std::string prefillGrid;
  bool disaggregate = false;
  /// --generate N (the workload's output), --batch, --prompt-len, --context.
  int64_t generate = 0, batch = 0, promptLen = 0, context = 0;
  /// --page-size, --kv-pages, --prefill-chunk (braid-run --serve).
  int64_t pageSize = 0, kvPages = 0, prefillChunk = 0;
};

/// The flags that run `choice` for `workload` (page size `pageSize`): an
/// error for what braid-run's grids do not express yet (expert parallelism
/// spanning dp x tp, more than one prefill or decode instance).
llvm::Expected<ServeRunFlags> serveRunFlags(const ServeChoice &choice, const Workload &workload,
                                            int64_t pageSize = 16);

/// Writes `root` (the caller's description of the plan) with `flags` as
/// its `run` section and "braid_serve_plan": 1.
llvm::Error writeServePlanFile(llvm::StringRef path, llvm::json::Object root,
                               const ServeRunFlags &flags);

/// The `run` section of serving plan file `path`; std::nullopt when `path`
/// is JSON but not a serving plan (a training plan file); an error naming
/// the file otherwise.
llvm::Expected<std::optional<ServeRunFlags>> readServePlanFile(llvm::StringRef path);

} // namespace braid::plan

#endif // BRAID_PLANNER_SERVEPLANFILE_H
