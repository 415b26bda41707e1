//===- VerifierHelpers.h - checks the per-rank piece verifiers share -*- C++ -*-===//
//
// Internal to the dialect's .cpp files: the verifiers of the ops
// --convert-braid-to-dist makes (block attention, sequence chunks,
// vocabulary shards) check operands and results against the types their
// semantics give, with one wording.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_VERIFIERHELPERS_H
#define BRAID_DIALECT_BRAID_IR_VERIFIERHELPERS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace mlir::braid::detail {

inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// `value` must be `type`: "<what> must be <type>, found <its type>".
inline LogicalResult expectType(Operation *op, StringRef what, Value value,
                                Type type) {
  if (value.getType() != type)
    return op->emitOpError() << what << " must be " << type << ", found "
                             << value.getType();
  return success();
}

/// `value` must have `shape`, in element type `element` (its own when not
/// given).
inline LogicalResult expectShape(Operation *op, StringRef what, Value value,
                                 ArrayRef<int64_t> shape, Type element = {}) {
  auto type = cast<RankedTensorType>(value.getType());
  return expectType(op, what, value,
                    RankedTensorType::get(
                        shape, element ? element : type.getElementType()));
}

} // namespace mlir::braid::detail

#endif // BRAID_DIALECT_BRAID_IR_VERIFIERHELPERS_H
