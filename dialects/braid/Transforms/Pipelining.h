//===- Pipelining.h - shared by the pipeline passes -------------*- C++ -*-===//
//
// Private to dialects/braid/Transforms: the attributes by which
// --braid-pipeline-stages, --braid-autodiff and --braid-pipeline hand the
// step's model chunks to one another, and the layer-backward split of the
// zero-bubble schedule.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_PIPELINING_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_PIPELINING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::braid {

/// The model chunk of an op of the step (i64).
inline constexpr StringLiteral kStageAttr = "braid.stage";
/// Marks the step's ops that the reverse pass created (unit).
inline constexpr StringLiteral kBackwardAttr = "braid.backward";

/// ZB-H1: every call of a layer's backward function in `step` becomes a call
/// of its input-gradient half and one of its weight-gradient half (the
/// values the second reads of the first passed between them), so that the
/// weight gradients of a layer can wait. Calls whose layer has no weight or
/// no input operand, or whose backward returns an argument, stay whole.
void splitLayerBackwards(ModuleOp module, func::FuncOp step);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_PIPELINING_H
