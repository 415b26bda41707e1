//===- ModelStats.h - size, FLOPs and memory of a braid model ---*- C++ -*-===//
//
// Walks the step function of a model, following calls into layer functions
// (so a 96-layer model is analysed from its 96 call sites, not 96 copies),
// and totals parameters, FLOPs per token and activation bytes per layer.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_MODELSTATS_H
#define BRAID_DIALECT_BRAID_ANALYSIS_MODELSTATS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::braid {

/// Figures of one layer function, per call.
struct LayerKindStats {
  std::string function;
  int64_t calls = 0;
  int64_t forwardMatmulFlops = 0;
  int64_t forwardOtherFlops = 0;
  /// Bytes of every value computed inside the function plus what its ops save
  /// for backward: the activation memory of one layer without recompute.
  int64_t activationBytes = 0;
};

struct ModelStats {
  int64_t parameters = 0;
  /// Parameters a token passes through: expert weights count k/E of their
  /// size (k experts chosen of E).
  double activeParameters = 0;
  int64_t embeddingParameters = 0;
  int64_t parameterBytes = 0;
  /// Tokens processed per step (elements of the tokens fed to the embedding).
  int64_t tokensPerStep = 0;
  /// Per step, whole forward pass.
  int64_t forwardMatmulFlops = 0;
  int64_t forwardOtherFlops = 0;
  /// Per step, the part of the forward pass inside layer functions: what
  /// full activation recompute runs a second time.
  int64_t layerForwardMatmulFlops = 0;
  /// Per step, the attention products inside layer functions: what selective
  /// recompute runs a second time.
  int64_t layerAttentionMatmulFlops = 0;
  /// Number of layer calls from the step function.
  int64_t layers = 0;
  llvm::SmallVector<LayerKindStats> layerKinds;
};

/// Analyses the model of `module` whose step function is `step` (an entry
/// point, EntryPoints.h). Emits a located error and fails on what it cannot
/// analyse (calls without a body, recursion, no token input).
FailureOr<ModelStats> computeModelStats(ModuleOp module, func::FuncOp step);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_MODELSTATS_H
