//===- InferenceBuild.h - lowering and linking inference programs -*- C++ -*-===//
//
// What braid-run --generate (Generate.cpp) and --serve (Serve.cpp) share:
// the derived programs lowered for a grid, emitted and linked into one
// binary per pipeline stage, and a directory for a run's logits.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_DRIVER_INFERENCEBUILD_H
#define BRAID_LIB_DRIVER_INFERENCEBUILD_H

#include "braid/Driver/Run.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace braid::driver {

class Progress;

/// Lowers the inference programs for `grid` (empty: one rank) with the
/// training pipeline and no optimizer (--inject-fault's passes between the
/// partitioning and the lowering to dist ops, as for training).
mlir::LogicalResult lowerPrograms(mlir::ModuleOp module, const TrainingPipelineOptions &given,
                                  llvm::StringRef grid, const CompileOptions &compile,
                                  Progress *progress);

/// The module's programs emitted and linked into one binary per pipeline
/// stage, in stage order (--emit-cpp F when `emit`).
mlir::FailureOr<llvm::SmallVector<std::string>>
buildPrograms(mlir::ModuleOp module, const RunOptions &options, bool mpi, bool emit);

/// A fresh directory for a run's --logits-out.
mlir::FailureOr<std::string> logitsDirectory();

} // namespace braid::driver

#endif // BRAID_LIB_DRIVER_INFERENCEBUILD_H
