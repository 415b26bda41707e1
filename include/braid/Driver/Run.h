//===- Run.h - compile a model, run it, verify it ---------------*- C++ -*-===//
//
// The whole of braid-run after its command line: a parsed model is lowered
// with the training pipeline's options, built (Compile.h), and run on the
// grid's ranks (Launch.h); with `verify`, the unpartitioned program runs on
// one rank too and the runs are compared (Verify.h). braid-run and the C API
// (braidRunModel) both come here.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_RUN_H
#define BRAID_DRIVER_RUN_H

#include "braid/Driver/Compile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <optional>
#include <string>

namespace braid::driver {

/// How a compiled model runs (braid-run's flags of the same names).
struct RunOptions {
  CompileOptions compile;
  /// The last step to run (after `resumeFrom`, from the checkpoint's on).
  int steps = 1;
  /// Initialization seed; none: the program's (or a checkpoint's).
  std::optional<uint64_t> seed;
  /// Every named tensor as .npy into this directory.
  std::string dumpDir;
  /// A Perfetto trace (one per rank with several).
  std::string traceFile;
  /// Build, do not run.
  bool compileOnly = false;
  /// Compare with the unpartitioned program on one rank.
  bool verify = false;
  double verifyTolerance = 1e-5;
  /// Judge runs made elsewhere instead of running: the partitioned run's
  /// dumps and stdout.txt in this directory, the 1-rank run's in
  /// DIR/reference (at bf16/f16 also the 1-rank f32 run's in
  /// DIR/reference-f32), as --verify with --dump DIR lays them out. Implies
  /// `verify`.
  std::string verifyFrom;
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  /// A checkpoint directory (or checkpoint) to continue from.
  std::string resumeFrom;
  /// A weights map (python3 -m braid.hf_weights) the parameters start from:
  /// another model's weights, the optimizer's state fresh.
  std::string initFrom;
  /// A tokenized dataset the steps read their batches from (the programs'
  /// --data; runtime/src/data.h has the formats); empty: the seed's batch.
  std::string dataFile;
  /// The element type of a headerless .bin: "uint16" (empty) or "uint32".
  std::string dataDtype;
  /// Read the windows in an order permuted from the seed.
  bool shuffle = false;
  /// A validation loss over `evalBatches` global batches of `evalDataFile`
  /// after every `evalEvery` steps (0: none).
  std::string evalDataFile;
  int64_t evalEvery = 0;
  int64_t evalBatches = 8;
  /// CPU threads of each rank's kernels (the programs' --threads); 0: the
  /// machine's cores shared by the ranks started on it, at least 1.
  int cpuThreads = 0;
  /// How messages name the options: braid-run's flags (--zero 5), or the C
  /// API's keywords (zero=5).
  OptionSpelling spelling = OptionSpelling::Flag;
};

/// Checks the values of `pipeline` and `options` before any work, in the
/// user's terms (checkTrainingPipelineOptions; what depends on the model the
/// passes check); fails after a message. With `warn`, also prints the
/// options that have no effect on the grid.
mlir::LogicalResult checkOptions(const TrainingPipelineOptions &pipeline,
                                 const RunOptions &options, bool warn = true);

/// Parses one builtin.module from `sourceMgr`'s main buffer and verifies it;
/// ops are named after the SSA name of their first result in the source
/// (NameLoc around the file location), so that dumps and traces use the
/// names the model was written with. Null after diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> parseModel(llvm::SourceMgr &sourceMgr,
                                             mlir::MLIRContext *context);

/// Compiles `module` with `pipeline` (its grid as the user wrote it), builds
/// and runs it, and with `options.verify` runs and compares the 1-rank
/// reference; returns the exit code (the program's, or 1 after a message).
/// `module` is lowered in place.
int runModel(mlir::ModuleOp module, const TrainingPipelineOptions &pipeline,
             const RunOptions &options);

} // namespace braid::driver

#endif // BRAID_DRIVER_RUN_H
