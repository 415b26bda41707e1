//===- EmitSpmd.cpp - collectives and partitioned ops ---------------------===//
//
// What the SPMD partitioner leaves in a per-rank program besides its
// transfers (which --convert-braid-to-dist has made dist ops: EmitDist.cpp):
// shard.all_slice, bias_add, slice and unslice. Also the sharding of
// parameters, states and inputs the descriptor records.
//
// A rank's coordinate over a group of grid axes is the rank of the group's
// communicator when the axes are listed in grid order; otherwise it is
// assembled from the single-axis coordinates in the listed order, which is
// the order the partitioner numbers blocks in.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/braid/Analysis/OpCost.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

namespace braid::cpp {

/// The block a rank holds when `replicas` consecutive ranks share one.
static Code blockOf(const Code &coordinate, int64_t replicas) {
  if (replicas == 1)
    return coordinate;
  return Code("(") << coordinate << " / " << replicas << ")";
}

bool isSpmdOp(Operation *op) {
  if (isa_and_nonnull<shard::ShardDialect>(op->getDialect()))
    return true;
  return TypeSwitch<Operation *, bool>(op)
      .Case<BiasAddOp, SliceOp, UnsliceOp>([](auto) { return true; })
      .Default([](Operation *) { return false; });
}

FailureOr<std::optional<ShardedTensor>>
readSharding(DictionaryAttr attrs, RankedTensorType type, Operation *anchor) {
  Attribute global = attrs ? attrs.get(kGlobalShapeAttrName) : Attribute();
  Attribute split = attrs ? attrs.get(kSplitAttrName) : Attribute();
  if (!global && !split)
    return std::optional<ShardedTensor>();
  auto globalShape = dyn_cast_or_null<DenseI64ArrayAttr>(global);
  auto splitAxes = dyn_cast_or_null<ArrayAttr>(split);
  int64_t rank = type.getRank();
  if (!globalShape || !splitAxes ||
      static_cast<int64_t>(globalShape.size()) != rank ||
      static_cast<int64_t>(splitAxes.size()) != rank)
    return anchor->emitError("a sharded tensor of type ")
           << type
           << " needs braid.global_shape = array<i64: ...> and braid.split "
              "= [[axes], ...] with one entry per dimension";
  ShardedTensor tensor;
  tensor.globalShape = llvm::to_vector(globalShape.asArrayRef());
  tensor.sharding = ValueSharding::replicated(rank);
  for (int64_t d = 0; d < rank; ++d) {
    auto axes = dyn_cast<ArrayAttr>(splitAxes[d]);
    if (!axes || !llvm::all_of(axes, llvm::IsaPred<StringAttr>))
      return anchor->emitError("braid.split entry ")
             << d << " must be an array of grid axis names, found "
             << splitAxes[d];
    int64_t parts = 1;
    if (!axes.empty()) {
      FailureOr<GridGroup> group = getGridGroup(
          anchor, axes, [&] { return anchor->emitError("braid.split: "); });
      if (failed(group))
        return failure();
      parts = group->size();
      tensor.sharding.split[d].assign(group->positions.begin(),
                                      group->positions.end());
    }
    int64_t whole = tensor.globalShape[d];
    if (type.getDimSize(d) != (whole + parts - 1) / parts)
      return anchor->emitError("local size ")
             << type.getDimSize(d) << " of dimension " << d << " is not ceil("
             << whole << " / " << parts << ") for global size " << whole
             << " split over " << parts << " ranks";
  }
  return std::optional<ShardedTensor>(std::move(tensor));
}

bool isZeroRange(RankedTensorType range, RankedTensorType whole,
                 const GridGroup &group) {
  return range.getRank() == 1 &&
         range.getNumElements() * group.size() == whole.getNumElements() &&
         range.getNumElements() != whole.getNumElements();
}

SmallVector<std::string> splitSpecs(const ShardedTensor &tensor,
                                    const Grid &grid) {
  return llvm::to_vector(llvm::map_range(
      tensor.sharding.split,
      [&](const AxisList &axes) { return grid.describe(axes); }));
}

LogicalResult ProgramEmitter::collectSpmd() {
  if (shard::GridOp gridOp = getProgramGrid(module)) {
    if (llvm::range_size(module.getOps<shard::GridOp>()) != 1)
      return gridOp.emitError("a program runs on one device grid; the module "
                              "declares several");
    FailureOr<SmallVector<std::string>> names = getGridAxisNames(gridOp);
    if (failed(names))
      return failure();
    FailureOr<Grid> parsed = Grid::get(gridOp, [&] { return gridOp.emitError(); });
    if (failed(parsed))
      return failure();
    devices = *parsed;
    for (auto [name, size] : llvm::zip_equal(*names, gridOp.getShape()))
      grid += (grid.empty() ? "" : ",") + name + "=" + std::to_string(size);
    if (auto axis = module->getAttrOfType<StringAttr>(kZigzagAxisAttrName)) {
      if (!llvm::is_contained(*names, axis.getValue()))
        return module.emitError("braid.zigzag_axis '")
               << axis.getValue() << "' is not an axis of the program's grid";
      zigzagAxis = axis.getValue().str();
    }
  }
  for (Operation &op : module.getOps()) {
    if (!isa<ParamOp, StateOp>(op))
      continue;
    auto symbol = cast<SymbolOpInterface>(op);
    auto type = isa<ParamOp>(op) ? cast<ParamOp>(op).getTensorType()
                                 : cast<StateOp>(op).getTensorType();
    FailureOr<std::optional<ShardedTensor>> sharding =
        readSharding(op.getDiscardableAttrDictionary(), type, &op);
    if (failed(sharding))
      return failure();
    if (*sharding)
      shardings[symbol.getName()] = std::move(**sharding);
  }
  // The ZeRO group of each parameter whose update --convert-braid-to-dist
  // sharded (ZeroUpdate.cpp records it), for ZeRO-2 gradient dumps.
  for (ParamOp param : module.getOps<ParamOp>()) {
    auto axes = param->getAttrOfType<ArrayAttr>(kZeroAxesAttrName);
    if (!axes)
      continue;
    FailureOr<GridGroup> group = getGridGroup(
        param, axes, [&] { return param.emitError("braid.zero_axes: "); });
    if (failed(group))
      return failure();
    zeroGroups[param.getSymName()] = *group;
  }
  return success();
}

std::string FunctionEmitter::strings(ArrayRef<std::string> values) {
  std::string content = llvm::join(llvm::map_range(values, quoted), ", ");
  auto [it, inserted] = arrays.try_emplace("strings:" + content, "");
  if (!inserted)
    return it->second;
  it->second = "kS" + std::to_string(nextArray++);
  declarations += "  static const char *const " + it->second + "[] = {" +
                  content + "};\n";
  return it->second;
}

Code FunctionEmitter::coordinate(const GridGroup &group) {
  auto communicatorRank = [](StringRef axes) {
    return Code("coord(rt, ") << Code::string(axes) << ")";
  };
  if (group.inGridOrder())
    return communicatorRank(group.spec());
  Code expr;
  for (auto [name, size] : llvm::zip_equal(group.names, group.sizes)) {
    Code axis = communicatorRank(name);
    expr = expr.empty() ? axis
                        : Code("(") << expr << " * " << size << " + " << axis
                                    << ")";
  }
  return expr;
}

Code FunctionEmitter::blockCall(StringRef kernel, Value from, Value to,
                                ArrayRef<int64_t> whole, int64_t dim,
                                int64_t local, const Code &block) {
  // The tensor viewed as [outer, whole[dim], inner].
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= whole[d];
  for (int64_t d = dim + 1, e = whole.size(); d < e; ++d)
    inner *= whole[d];
  return Code(kernel) << "(rt, " << dtypeName(from.getType()) << ", "
                      << ptr(from) << ", " << ptr(to) << ", " << outer << ", "
                      << whole[dim] << ", " << local << ", " << inner << ", "
                      << block << " * " << local << ")";
}

LogicalResult FunctionEmitter::emitSpmdOp(Operation *op) {
  auto error = [&] { return op->emitError(); };
  // The group of a shard collective, which must be on the program's grid.
  auto collectiveGroup = [&](shard::AllSliceOp c) -> FailureOr<GridGroup> {
    shard::GridOp grid = getProgramGrid(op);
    if (!grid || c.getGrid() != grid.getSymName())
      return op->emitError("runs on grid @")
             << c.getGrid() << ", not the program's grid";
    if (getElementTypeOrSelf(c.getInput().getType()) !=
        getElementTypeOrSelf(c.getResult().getType()))
      return op->emitError("the runtime's collectives keep the element type");
    return getGridGroup(op, c.getGridAttr(), c.getGridAxes(), error);
  };
  // slice and unslice: the block of the rank's coordinate in the group of
  // `axes`, `replicas` consecutive ranks sharing one.
  auto sliceCall = [&](StringRef kernel, Value from, Value to, Value whole,
                       int64_t dim, ArrayAttr axes,
                       int64_t replicas) -> FailureOr<Code> {
    FailureOr<GridGroup> group = getGridGroup(op, axes, error);
    if (failed(group))
      return failure();
    // The block's rows: those of the tensor that is not the whole.
    return blockCall(kernel, from, to, shapeOf(whole), dim,
                     shapeOf(from == whole ? to : from)[dim],
                     blockOf(coordinate(*group), replicas));
  };
  FailureOr<Code> call =
      TypeSwitch<Operation *, FailureOr<Code>>(op)
          .Case<shard::AllReduceOp, shard::AllGatherOp,
                shard::ReduceScatterOp, shard::AllToAllOp>([&](auto) {
            return op->emitError("a transfer reaches the emitter as a dist "
                                 "op: run --convert-braid-to-dist first");
          })
          .Case([&](shard::AllSliceOp s) -> FailureOr<Code> {
            FailureOr<GridGroup> group = collectiveGroup(s);
            if (failed(group))
              return failure();
            int64_t dim = s.getSliceAxis().getSExtValue();
            return blockCall("braid_k_slice", s.getInput(), s.getResult(),
                             shapeOf(s.getInput()), dim,
                             shapeOf(s.getResult())[dim], coordinate(*group));
          })
          .Case([&](BiasAddOp b) {
            return Code("braid_k_bias_add(rt, ")
                   << dtypeName(b.getInput().getType()) << ", "
                   << ptr(b.getInput()) << ", " << ptr(b.getBias()) << ", "
                   << ptr(b.getResult()) << ", " << numElements(b.getResult())
                   << ", " << numElements(b.getBias()) << ")";
          })
          .Case([&](UnsliceOp u) {
            return sliceCall("braid_k_unslice", u.getInput(), u.getResult(),
                             u.getResult(), u.getDim(), u.getAxes(),
                             u.getReplicas());
          })
          .Case([&](SliceOp s) {
            return sliceCall("braid_k_slice", s.getInput(), s.getResult(),
                             s.getInput(), s.getDim(), s.getAxes(),
                             s.getReplicas());
          })
          .Default([&](Operation *other) {
            return other->emitError("braid-translate cannot emit '")
                   << other->getName() << "'";
          });
  if (failed(call))
    return failure();
  emitBracketed(op, *call);
  return success();
}

} // namespace braid::cpp
