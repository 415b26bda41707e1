//===- Groups.cpp - what every protocol family's lowering shares -----------===//
//
// A group in the form dist ops state it, the rank's coordinate over a
// group, and the replacement of a lowered op by its expansion.
//
//===----------------------------------------------------------------------===//

#include "BraidToDist.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::braid;

namespace braid::conversion {

void replaceLowered(Operation *op, Value result) {
  Operation *producer = result.getDefiningOp();
  producer->setLoc(op->getLoc());
  if (auto layouts = op->getAttrOfType<ArrayAttr>(kResultLayoutsAttrName);
      layouts && result.getType() == op->getResult(0).getType()) {
    SmallVector<Attribute> moved(producer->getNumResults(),
                                 DictionaryAttr::get(op->getContext()));
    moved[cast<OpResult>(result).getResultNumber()] = layouts[0];
    producer->setAttr(kResultLayoutsAttrName,
                      ArrayAttr::get(op->getContext(), moved));
  }
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
}

DistGroup getDistGroup(OpBuilder &b, Operation *anchor,
                       const GridGroup &group) {
  SmallVector<int16_t> axes(group.positions.begin(), group.positions.end());
  return {FlatSymbolRefAttr::get(getProgramGrid(anchor).getSymNameAttr()),
          b.getDenseI16ArrayAttr(axes)};
}

Value buildCoordinate(OpBuilder &b, Location loc, Operation *anchor,
                      const GridGroup &group) {
  FlatSymbolRefAttr grid =
      FlatSymbolRefAttr::get(getProgramGrid(anchor).getSymNameAttr());
  auto of = [&](ArrayRef<unsigned> positions) -> Value {
    SmallVector<int16_t> axes(positions.begin(), positions.end());
    return dist::CoordinateOp::create(b, loc, b.getIndexType(), grid,
                                      b.getDenseI16ArrayAttr(axes));
  };
  if (group.inGridOrder())
    return of(group.positions);
  // Listed out of grid order: composed from each axis's coordinate, the
  // first listed axis the slowest (the order the partitioner numbers
  // blocks in).
  Value c;
  for (auto [position, size] : llvm::zip_equal(group.positions, group.sizes)) {
    Value axis = of({position});
    c = c ? arith::AddIOp::create(
                b, loc,
                arith::MulIOp::create(
                    b, loc, c, arith::ConstantIndexOp::create(b, loc, size)),
                axis)
          : axis;
  }
  return c;
}

FailureOr<GridGroup> getChunkGroup(Operation *op, StringRef attr) {
  auto names = op->getAttrOfType<ArrayAttr>(attr);
  FailureOr<GridGroup> group =
      getGridGroup(op, names, [&] { return op->emitError(); });
  if (failed(group))
    return failure();
  if (!group->inGridOrder()) {
    op->emitError() << attr << " " << names
                    << " must list grid axes in grid order (the order of the "
                       "communicator's ranks, which hold the chunks in turn)";
    return failure();
  }
  return group;
}

} // namespace braid::conversion
