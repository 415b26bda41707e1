//===- Pipelining.h - shared by the pipeline passes -------------*- C++ -*-===//
//
// Private to dialects/braid/Transforms: the attributes by which
// --braid-pipeline-stages, --braid-autodiff and --braid-pipeline hand the
// step's model chunks to one another, the parameter views both autodiff and
// the pipeline make again where they read them, and the layer-backward split
// of the zero-bubble schedule.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_PIPELINING_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_PIPELINING_H

#include "dialects/braid/IR/BraidAttributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::braid {

/// A view of the rank's parameters: a parameter read (braid.get_param), or
/// the mixed-precision compute copy of one (braid.convert of a
/// braid.get_param). A piece of the step that reads one makes it again
/// rather than keeping another piece's alive: a compute copy kept from the
/// forward for the backward, or from a chunk's forward for its backward,
/// holds a copy of the weights per step or per micro-batch in flight, where
/// casting again costs an elementwise pass over them.
bool isParamView(Operation *op);

/// Clones the ops that make the parameter view `view` at `b`'s insertion
/// point (those `map` does not map yet, the read before its copy) and
/// returns the clone of `view`; `onClone` sees each op cloned.
Value cloneParamView(OpBuilder &b, Value view, IRMapping &map,
                     function_ref<void(Operation *)> onClone = {});

/// ZB-H1: every call of a layer's backward function in `step` becomes a call
/// of its input-gradient half and one of its weight-gradient half (the
/// values the second reads of the first passed between them), so that the
/// weight gradients of a layer can wait. Calls whose layer has no weight or
/// no input operand, or whose backward returns an argument, stay whole.
void splitLayerBackwards(ModuleOp module, func::FuncOp step);

/// Stamps every op of the one-block function `f` with its model chunk
/// (`braid.stage`), given the chunk of each layer call (`layerChunk`): an op
/// goes with the latest chunk among its operands', an op computed from
/// parameters and inputs alone with the chunks that use it (cloned for each
/// further one), an unused one with `lastChunk`.
void stampChunks(func::FuncOp f,
                 const llvm::DenseMap<Operation *, int64_t> &layerChunk,
                 int64_t lastChunk);

/// `type` with its leading (batch) dimension divided by `count`, or failure
/// when `count` does not divide it.
FailureOr<RankedTensorType> shrinkLeading(RankedTensorType type, int64_t count);

/// Re-types `f` (and the functions it calls) to one micro-batch of `count`,
/// given its micro-batch's argument types `inputs`: --braid-microbatch's
/// re-typing (views, dispatch capacity groups, the loss's denominator).
LogicalResult microbatchFunction(ModuleOp module, func::FuncOp f,
                                 TypeRange inputs, int64_t count);

/// Fails with "--<flag>: the step must be one block" unless it is: the
/// pipeline passes cut the step's one block into model chunks.
inline LogicalResult checkOneBlock(func::FuncOp step, StringRef flag) {
  if (step.getBody().hasOneBlock())
    return success();
  return step.emitError("--") << flag << ": the step must be one block";
}

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_PIPELINING_H
