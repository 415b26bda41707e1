//===- Compile.h - lower a model and build its programs ---------*- C++ -*-===//
//
// What braid-run does between parsing a model and running it: the training
// pipeline lowers the model (partitioned for a grid, pipelined over its pp
// axis), each step function the lowering names is emitted as C++ and built
// against the runtime (Build.h), one program per pipeline stage.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DRIVER_COMPILE_H
#define BRAID_DRIVER_COMPILE_H

#include "braid/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <functional>
#include <string>

namespace braid::driver {

class Progress;

/// Prints "braid-run: <message>" on stderr; returns 1 (an exit code).
int fail(const llvm::Twine &message);

/// The number of ranks of a grid "dp=2,tp=2" (names [A-Za-z_][A-Za-z0-9_]*,
/// distinct, sizes >= 1: the runtime's rules); fails with a message. Which
/// axes the partitioner accepts is the pipeline's business.
llvm::FailureOr<int64_t> gridRanks(llvm::StringRef spec);

/// The grid as the partitioner lays it out (Grid::parse: axes in any order,
/// pp placed outermost, the others as written), so that the runtime's --grid
/// names the program's grid. A grid the partitioner refuses stays as written:
/// the pipeline reports it.
std::string partitionerGrid(llvm::StringRef spec);

/// FILE with ".stage<S>" before its extension (prog.cpp -> prog.stage0.cpp),
/// as the runtime names per-rank files (a leading dot starts no extension).
std::string stageFile(llvm::StringRef file, size_t stage);

/// How the programs of a model are emitted and built.
struct CompileOptions {
  /// "cpu" (the host compiler) or "cuda" (nvcc).
  std::string backend = "cpu";
  /// Repeated statement groups printed as loops over tables.
  bool rollRepeats = true;
  /// Also write the generated C++ here (".stage<S>" per stage when several).
  std::string emitCpp;
  /// Leave out the "building" lines (and, when running, all but the losses
  /// and peaks).
  bool quiet = false;
  /// Testing --verify: passes that break the partitioned program, run on its
  /// braid and shard ops before their transfers become dist ops (braid-run
  /// --inject-fault); empty: none.
  std::function<void(mlir::OpPassManager &)> breakProgram;
  /// Phases shown while compiling and building; null: none.
  Progress *progress = nullptr;
};

/// The step functions to build as programs from a lowered `module`: one per
/// pp coordinate when the lowering pipelined or micro-batched the step
/// (kPipelineEntriesAttr; the partitioner placed pp outermost, so the ranks
/// of a stage are contiguous), else its one entry point (braid.entry).
/// Fails, with a message, when there is not one program per stage.
llvm::FailureOr<llvm::SmallVector<std::string>> programEntries(mlir::ModuleOp module);

/// The options the 1-rank reference of `pipeline` is lowered with: no grid,
/// one micro-batch, unpipelined, the same other options.
void referencePipeline(const TrainingPipelineOptions &pipeline,
                       TrainingPipelineOptions &reference);

/// Lowers `module` with `pipeline` (its grid as partitionerGrid lays it out;
/// float storage `elementType` instead of its dtype), emits its programs as
/// C++ (into CompileOptions::emitCpp too when `emit`) and builds them for
/// `ranks` ranks (cached); returns the binaries, one per pipeline stage (one
/// when not pipelined). `reference`: the --verify reference, built as
/// referencePipeline says and never broken.
llvm::FailureOr<llvm::SmallVector<std::string>>
compileModel(mlir::ModuleOp module, const TrainingPipelineOptions &pipeline,
             const CompileOptions &options, bool reference, int64_t ranks,
             bool emit, llvm::StringRef elementType);

} // namespace braid::driver

#endif // BRAID_DRIVER_COMPILE_H
