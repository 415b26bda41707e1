//===- ShapeErrors.h - helpers of braid's shape inference -------*- C++ -*-===//
//
// Internal to the dialect's .cpp files. inferReturnTypes runs from builders
// (no location: failures are silent) and from the verifier (located); these
// helpers report like emitOpError so every diagnostic names its op.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_SHAPEERRORS_H
#define BRAID_DIALECT_BRAID_IR_SHAPEERRORS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Value.h"

namespace mlir::braid::detail {

/// Emits "'<op>' op <message>" at `loc` when there is a location.
template <typename OpTy>
struct ShapeErrors {
  std::optional<Location> loc;

  template <typename... Args>
  LogicalResult operator()(Args &&...args) const {
    return emitOptionalError(loc, "'", OpTy::getOperationName(), "' op ",
                             std::forward<Args>(args)...);
  }

  /// Checks that `type` has `rank`, naming the operand by its role.
  LogicalResult expectRank(RankedTensorType type, int64_t rank,
                           StringRef role, StringRef layout) const {
    if (type.getRank() == rank)
      return success();
    return (*this)(role, " must be ", layout, ", found ", type);
  }

  /// MoE capacity groups: `tokens` cut into whole groups of `groupSize` (one
  /// group when absent), and `slots` per expert into the same number of
  /// equal capacities.
  LogicalResult expectMoeGroups(int64_t tokens, int64_t slots,
                                std::optional<uint64_t> groupSize) const {
    if (!groupSize)
      return success();
    int64_t size = static_cast<int64_t>(*groupSize);
    if (tokens % size != 0)
      return (*this)(tokens, " tokens do not cut into capacity groups of ",
                     size);
    int64_t groups = tokens / size;
    if (slots % groups != 0)
      return (*this)(slots, " slots per expert do not divide into ", groups,
                     " groups of ", size, " tokens");
    return success();
  }

  /// Checks that all given types share one element type.
  LogicalResult expectSameElementType(ArrayRef<RankedTensorType> types) const {
    for (RankedTensorType t : types.drop_front())
      if (t && t.getElementType() != types.front().getElementType())
        return (*this)("operands must share one element type, found ",
                       types.front().getElementType(), " and ",
                       t.getElementType());
    return success();
  }
};

/// The ranked type of an optional operand, or null.
inline RankedTensorType typeOf(Value value) {
  return value ? dyn_cast<RankedTensorType>(value.getType()) : nullptr;
}

} // namespace mlir::braid::detail

#endif // BRAID_DIALECT_BRAID_IR_SHAPEERRORS_H
