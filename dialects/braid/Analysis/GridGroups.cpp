//===- GridGroups.cpp - grid groups and block re-layouts ------------------===//
//
// The SPMD half of MemoryPlan.h: which grid axes a collective or a
// partitioned op runs over (GridGroup), the re-layout a collective needs when
// its blocks are not contiguous per rank (which --convert-braid-to-dist makes
// explicit IR).
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Analysis/MemoryPlan.h"

#include "dialects/braid/IR/BraidOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::braid;

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<ShapedType>(value.getType()).getShape();
}

static int64_t align(int64_t bytes) {
  return llvm::alignTo(bytes, kBufferAlignment);
}

int64_t GridGroup::size() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

bool GridGroup::inGridOrder() const { return llvm::is_sorted(positions); }

std::string GridGroup::spec() const { return llvm::join(names, ","); }

shard::GridOp mlir::braid::getProgramGrid(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op)
                                  : op->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  auto grids = module.getOps<shard::GridOp>();
  return grids.empty() ? shard::GridOp() : *grids.begin();
}

FailureOr<SmallVector<std::string>>
mlir::braid::getGridAxisNames(shard::GridOp grid) {
  auto names = grid->getAttrOfType<ArrayAttr>("braid.axes");
  SmallVector<std::string> out;
  if (names && static_cast<int64_t>(names.size()) == grid.getRank())
    for (Attribute name : names)
      if (auto str = dyn_cast<StringAttr>(name); str && !str.empty())
        out.push_back(str.str());
  if (static_cast<int64_t>(out.size()) != grid.getRank())
    return grid.emitError("the runtime needs the grid's axes named: "
                          "braid.axes = [...] with ")
           << grid.getRank() << " non-empty strings";
  for (int64_t size : grid.getShape())
    if (ShapedType::isDynamic(size))
      return grid.emitError("the runtime needs a grid of static shape");
  return out;
}

/// The group of `positions` (grid axis indices) of `grid`.
static FailureOr<GridGroup>
groupOf(shard::GridOp grid, ArrayRef<int64_t> positions,
        function_ref<InFlightDiagnostic()> emitError) {
  auto fail = [&](const Twine &message) -> FailureOr<GridGroup> {
    if (emitError)
      emitError() << message;
    return failure();
  };
  auto names = grid->getAttrOfType<ArrayAttr>("braid.axes");
  if (!names || static_cast<int64_t>(names.size()) != grid.getRank())
    return fail("grid @" + grid.getSymName() +
                " does not name its axes (braid.axes)");
  if (positions.empty())
    return fail("names no grid axes");
  GridGroup group;
  for (int64_t p : positions) {
    if (p < 0 || p >= grid.getRank() ||
        llvm::is_contained(group.positions, static_cast<unsigned>(p)))
      return fail("grid axis " + Twine(p) + " is not a distinct axis of @" +
                  grid.getSymName());
    int64_t size = grid.getShape()[p];
    if (ShapedType::isDynamic(size))
      return fail("grid @" + grid.getSymName() + " has a dynamic axis");
    group.names.push_back(cast<StringAttr>(names[p]).str());
    group.sizes.push_back(size);
    group.positions.push_back(p);
  }
  return group;
}

FailureOr<GridGroup>
mlir::braid::getGridGroup(Operation *op, FlatSymbolRefAttr grid,
                          ArrayRef<int16_t> axes,
                          function_ref<InFlightDiagnostic()> emitError) {
  auto gridOp = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, grid);
  if (!gridOp) {
    if (emitError)
      emitError() << "no shard.grid " << grid;
    return failure();
  }
  return groupOf(gridOp, llvm::to_vector(llvm::map_range(
                             axes, [](int16_t a) { return int64_t(a); })),
                 emitError);
}

FailureOr<GridGroup>
mlir::braid::getGridGroup(Operation *op, ArrayAttr names,
                          function_ref<InFlightDiagnostic()> emitError) {
  shard::GridOp grid = getProgramGrid(op);
  if (!grid) {
    if (emitError)
      emitError() << "names grid axes but the module has no shard.grid";
    return failure();
  }
  auto gridNames = grid->getAttrOfType<ArrayAttr>("braid.axes");
  SmallVector<int64_t> positions;
  for (Attribute name : names) {
    auto it = gridNames ? llvm::find(gridNames, name) : nullptr;
    if (!gridNames || it == gridNames.end()) {
      if (emitError)
        emitError() << name << " is not an axis of grid @"
                    << grid.getSymName();
      return failure();
    }
    positions.push_back(it - gridNames.begin());
  }
  return groupOf(grid, positions, emitError);
}

/// Drops the unit dimensions of a transpose (they move nothing).
static Transpose squeeze(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> index(shape.size(), -1);
  Transpose out;
  for (auto [d, size] : llvm::enumerate(shape))
    if (size != 1) {
      index[d] = out.shape.size();
      out.shape.push_back(size);
    }
  for (int64_t p : perm)
    if (index[p] >= 0)
      out.perm.push_back(index[p]);
  return out;
}

std::optional<BlockRelayout>
mlir::braid::getBlockRelayout(ArrayRef<int64_t> shape, int64_t dim,
                              const GridGroup &group) {
  // The tensor as [outer, a_1 .. a_k, L, inner] (listed axes, major to
  // minor); the rank blocks as [g_1 .. g_k, outer, L, inner] (the same axes
  // in grid order).
  int64_t k = group.sizes.size();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (int64_t d = dim + 1, e = shape.size(); d < e; ++d)
    inner *= shape[d];
  SmallVector<int64_t> tensorShape = {outer};
  llvm::append_range(tensorShape, group.sizes);
  tensorShape.append({shape[dim] / group.size(), inner});

  SmallVector<int64_t> byGrid = llvm::to_vector(llvm::seq<int64_t>(0, k));
  llvm::stable_sort(byGrid, [&](int64_t a, int64_t b) {
    return group.positions[a] < group.positions[b];
  });
  SmallVector<int64_t> perm;
  for (int64_t listed : byGrid)
    perm.push_back(1 + listed);
  perm.append({0, k + 1, k + 2});

  BlockRelayout relayout;
  relayout.toBlocks = squeeze(tensorShape, perm);
  if (llvm::is_sorted(relayout.toBlocks.perm))
    return std::nullopt;
  SmallVector<int64_t> blockShape, inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm)) {
    blockShape.push_back(tensorShape[p]);
    inverse[p] = i;
  }
  relayout.fromBlocks = squeeze(blockShape, inverse);
  return relayout;
}

