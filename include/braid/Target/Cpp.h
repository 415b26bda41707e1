//===- Cpp.h - emit a braid program as C++/CUDA source ----------*- C++ -*-===//
#ifndef BRAID_TARGET_CPP_H
#define BRAID_TARGET_CPP_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

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

/// Registers the `--braid-to-cpp` translation.
void registerToCppTranslation();

} // namespace braid

#endif // BRAID_TARGET_CPP_H
