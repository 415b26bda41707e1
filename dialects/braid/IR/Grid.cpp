//===- Grid.cpp - the device grid, its groups and value shardings ---------===//

#include "dialects/braid/IR/Grid.h"

#include "dialects/braid/IR/BraidAttributes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::braid;

//===----------------------------------------------------------------------===//
// Grid
//===----------------------------------------------------------------------===//

FailureOr<Grid> Grid::parse(StringRef text, std::string &error) {
  Grid grid;
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [name, value] = item.trim().split('=');
    int64_t size = 0;
    if (value.getAsInteger(10, size) || size < 1) {
      error = ("grid axis '" + item + "' must be NAME=SIZE with SIZE >= 1").str();
      return failure();
    }
    if (name != "pp" && name != "dp" && name != "ep" && name != "tp" &&
        name != "cp") {
      error = ("unknown grid axis '" + name +
               "' (the axes are pp, dp, ep, cp and tp)")
                  .str();
      return failure();
    }
    if (grid.find(name)) {
      error = ("grid axis '" + name + "' appears twice").str();
      return failure();
    }
    // Axes may be written in any order. Pipeline stages are programs of
    // their own, each on a contiguous block of ranks, so pp is placed
    // outermost; the other axes keep the order written (the last varies
    // fastest over the ranks).
    size_t at = name == "pp" ? 0 : grid.names.size();
    grid.names.insert(grid.names.begin() + at, name.str());
    grid.sizes.insert(grid.sizes.begin() + at, size);
  }
  if (grid.names.empty()) {
    error = "the grid has no axes";
    return failure();
  }
  return grid;
}

FailureOr<Grid> Grid::required(Operation *op) {
  FailureOr<std::optional<Grid>> grid = of(op->getParentOfType<ModuleOp>());
  if (failed(grid))
    return failure();
  if (*grid)
    return **grid;
  return op->emitError("a collective or sharded op, but the module has no "
                       "shard.grid with braid.axes");
}

FailureOr<std::optional<Grid>> Grid::of(ModuleOp module) {
  for (auto op : module.getOps<shard::GridOp>()) {
    auto names = op->getAttrOfType<ArrayAttr>(kAxesAttrName);
    if (!names || names.size() != op.getShape().size())
      continue;
    Grid grid;
    grid.symbol = op.getSymName().str();
    for (auto [i, name, size] :
         llvm::enumerate(names.getValue(), op.getShape())) {
      // (The braid.axes verifier checked the names.)
      auto text = cast<StringAttr>(name);
      // The upstream verifier admits 0 and ?: a group over such an axis has
      // no ranks or no known number of them (sizes divide shapes).
      if (ShapedType::isDynamic(size) || size < 1) {
        InFlightDiagnostic diag = op.emitError("grid axis ")
                                  << i << " (" << text.getValue()
                                  << ") has size ";
        if (ShapedType::isDynamic(size))
          diag << "?";
        else
          diag << size;
        return diag << ": a partitioned module's grid needs static sizes of "
                       "at least 1";
      }
      grid.names.push_back(text.str());
      grid.sizes.push_back(size);
    }
    return std::optional<Grid>(std::move(grid));
  }
  return std::optional<Grid>();
}

int64_t Grid::size(ArrayRef<int16_t> axes) const {
  int64_t n = 1;
  for (int16_t axis : axes)
    n *= sizes[axis];
  return n;
}

AxisList Grid::allAxes() const {
  AxisList axes;
  for (unsigned i = 0; i < names.size(); ++i)
    axes.push_back(i);
  return axes;
}

std::optional<int16_t> Grid::find(StringRef name) const {
  for (auto [i, n] : llvm::enumerate(names))
    if (n == name)
      return static_cast<int16_t>(i);
  return std::nullopt;
}

std::string Grid::describe(ArrayRef<int16_t> axes) const {
  return llvm::join(llvm::map_range(axes, [&](int16_t a) { return names[a]; }),
                    ",");
}

ArrayAttr Grid::nameAttr(MLIRContext *context, ArrayRef<int16_t> axes) const {
  SmallVector<Attribute> attrs;
  for (int16_t axis : axes)
    attrs.push_back(StringAttr::get(context, names[axis]));
  return ArrayAttr::get(context, attrs);
}

void Grid::declare(OpBuilder &b, Location loc) const {
  auto op = shard::GridOp::create(b, loc, symbol, sizes);
  SmallVector<Attribute> attrs;
  for (const std::string &name : names)
    attrs.push_back(b.getStringAttr(name));
  op->setAttr(kAxesAttrName, b.getArrayAttr(attrs));
}

//===----------------------------------------------------------------------===//
// ValueSharding
//===----------------------------------------------------------------------===//

bool ValueSharding::isReplicated() const {
  return partial.empty() &&
         llvm::all_of(split, [](const AxisList &a) { return a.empty(); });
}

AxisList ValueSharding::usedAxes() const {
  AxisList used(partial);
  for (const AxisList &axes : split)
    llvm::append_range(used, axes);
  return used;
}

std::string ValueSharding::describe(const Grid &grid) const {
  std::string text = "[";
  for (auto [i, axes] : llvm::enumerate(split)) {
    if (i)
      text += ", ";
    text += axes.empty() ? "-" : grid.describe(axes);
  }
  text += "]";
  if (!partial.empty())
    text += " partial(" + grid.describe(partial) + ")";
  return text;
}

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

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
  auto names = grid->getAttrOfType<ArrayAttr>(kAxesAttrName);
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
  FailureOr<Grid> g = Grid::get(gridOp, emitError);
  if (failed(g))
    return failure();
  if (axes.empty()) {
    if (emitError)
      emitError() << "names no grid axes";
    return failure();
  }
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis < 0 || axis >= static_cast<int64_t>(g->names.size()) ||
        llvm::is_contained(axes.take_front(i), axis)) {
      if (emitError)
        emitError() << "grid axis " << axis << " is not a distinct axis of @"
                    << g->symbol;
      return failure();
    }
  return g->group(axes);
}

FailureOr<GridGroup>
mlir::braid::getGridGroup(Operation *op, ArrayAttr names,
                          function_ref<InFlightDiagnostic()> emitError) {
  shard::GridOp gridOp = getProgramGrid(op);
  if (!gridOp) {
    if (emitError)
      emitError() << "names grid axes but the module has no shard.grid";
    return failure();
  }
  FailureOr<Grid> g = Grid::get(gridOp, emitError);
  if (failed(g))
    return failure();
  AxisList axes;
  for (Attribute name : names) {
    auto text = dyn_cast<StringAttr>(name);
    std::optional<int16_t> axis = text ? g->find(text.getValue()) : std::nullopt;
    if (!axis) {
      if (emitError)
        emitError() << name << " is not an axis of grid @" << g->symbol;
      return failure();
    }
    axes.push_back(*axis);
  }
  return getGridGroup(op, FlatSymbolRefAttr::get(gridOp.getSymNameAttr()), axes,
                      emitError);
}

GridGroup Grid::group(ArrayRef<int16_t> axes) const {
  GridGroup group;
  for (int16_t axis : axes) {
    group.names.push_back(names[axis]);
    group.sizes.push_back(sizes[axis]);
    group.positions.push_back(axis);
  }
  return group;
}

FailureOr<Grid> Grid::get(shard::GridOp op,
                          function_ref<InFlightDiagnostic()> emitError) {
  auto names = op->getAttrOfType<ArrayAttr>(kAxesAttrName);
  if (!names || static_cast<int64_t>(names.size()) != op.getRank() ||
      !llvm::all_of(names, llvm::IsaPred<StringAttr>) ||
      llvm::any_of(op.getShape(), ShapedType::isDynamic)) {
    if (emitError)
      emitError() << "grid @" << op.getSymName()
                  << " needs braid.axes naming each of its static axes";
    return failure();
  }
  Grid grid;
  grid.symbol = op.getSymName().str();
  for (auto [name, size] : llvm::zip_equal(names, op.getShape())) {
    grid.names.push_back(cast<StringAttr>(name).str());
    grid.sizes.push_back(size);
  }
  return grid;
}
