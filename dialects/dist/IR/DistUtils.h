//===- DistUtils.h - what the dist lowering and dist passes share -*- C++ -*-===//
//
// Small helpers that both the lowering to dist (lib/Conversion/BraidToDist)
// and the passes over dist programs (dialects/dist/Transforms) use, so that
// neither reaches into the other.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_DIST_IR_DISTUTILS_H
#define BRAID_DIALECT_DIST_IR_DISTUTILS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::dist {

/// The group a transfer runs over, as a key ("grid:0,1,"): transfers with
/// equal keys share a communicator.
inline std::string transferGroupKey(Operation *op) {
  std::string key;
  if (auto grid = op->getAttrOfType<FlatSymbolRefAttr>("grid"))
    key = grid.getValue().str();
  key += ":";
  if (auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes"))
    for (int16_t axis : axes.asArrayRef())
      key += std::to_string(axis) + ",";
  return key;
}

/// `loc` without its name: the ops of an expansion but the one that
/// produces the replaced op's result (which keeps the name dumps use).
inline Location unnamed(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getChildLoc();
  return loc;
}

} // namespace mlir::dist

#endif // BRAID_DIALECT_DIST_IR_DISTUTILS_H
