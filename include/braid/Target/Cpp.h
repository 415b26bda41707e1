//===- Cpp.h - emit a braid program as C++/CUDA source ----------*- C++ -*-===//
#ifndef BRAID_TARGET_CPP_H
#define BRAID_TARGET_CPP_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace braid {

/// How the program is printed.
struct CppEmitOptions {
  /// Print runs of op groups that repeat with different literals (a call
  /// per layer, a forward and a backward per micro-batch) as loops over
  /// tables, so that the text does not grow with layers and micro-batches.
  bool rollRepeats = true;
};

/// Writes one C++ source file for the program `program` (the name of one of
/// the module's programs: an entry point, or a pipeline rank's step; empty:
/// the module's only program): its kernels' calls, generated fused elementwise kernels, the
/// static arena plan and the `braid_program_get` entry point of
/// runtime/include/braid/runtime.h. The text compiles with the host C++
/// compiler (CPU runtime) and with nvcc (CUDA runtime).
mlir::LogicalResult emitProgramAsCpp(mlir::ModuleOp module, llvm::StringRef program,
                                     llvm::raw_ostream &os,
                                     const CppEmitOptions &options = {});

/// One program of a module and its C++ source.
struct EmittedProgram {
  /// Its function's name (a pipeline rank's step, or an entry point).
  std::string name;
  /// The pipeline rank (stage) that runs it: its `braid.pipeline_rank`, 0
  /// without a pipeline. An inference pipeline's stage s has three programs
  /// (@prefill.pp<s>, @decode.pp<s>, @forward.pp<s>), linked into one binary.
  int64_t pipelineRank = 0;
  std::string source;
};

/// Emits every program of `module` (mlir::braid::getPrograms: a pipeline's
/// ranks in rank order, else its entry points), each as emitProgramAsCpp
/// would, byte for byte; what a pipeline's programs share (the
/// communicators every rank creates, which rank dumps a tensor) is computed
/// once rather than once per program.
mlir::FailureOr<llvm::SmallVector<EmittedProgram>>
emitProgramsAsCpp(mlir::ModuleOp module, const CppEmitOptions &options = {});

/// Registers the `--braid-to-cpp` translation: the program --braid-program
/// names (or the module's only one) to the output, or, with
/// --braid-output-dir=DIR, every program to DIR/<name>.cpp from one parse.
void registerToCppTranslation();

} // namespace braid

#endif // BRAID_TARGET_CPP_H
