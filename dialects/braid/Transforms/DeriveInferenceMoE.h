//===- DeriveInferenceMoE.h - MoE layers in inference programs --*- C++ -*-===//
//
// Private to dialects/braid/Transforms. --braid-derive-inference re-types
// the training step's ops for the prefill, decode and forward programs; the
// mixture-of-experts ops are re-typed here, to a dispatch that drops no
// token.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_DERIVEINFERENCEMOE_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_DERIVEINFERENCEMOE_H

#include "mlir/IR/Operation.h"

namespace mlir::braid {

/// Whether `op` is an MoE op whose capacity --braid-derive-inference sets
/// (braid.dispatch, braid.combine).
bool isCapacityGroupOp(Operation &op);

/// Re-types the braid.dispatch or braid.combine `op`, whose operands have
/// the program's token count, so that no assignment is dropped: every
/// token is its own capacity group (group_size 1) with one slot per expert,
/// which holds the token because its top-k experts are distinct. The
/// dispatch's slots then equal the program's tokens.
LogicalResult retypeWithoutDrops(Operation &op);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_DERIVEINFERENCEMOE_H
