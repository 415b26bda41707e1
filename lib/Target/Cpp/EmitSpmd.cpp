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
#include "dialects/braid/IR/BraidOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

namespace braid::cpp {

/// The block a rank holds when `replicas` consecutive ranks share one.
static std::string blockOf(const std::string &coordinate, int64_t replicas) {
  if (replicas == 1)
    return coordinate;
  return "(" + coordinate + " / " + std::to_string(replicas) + ")";
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
  Attribute global = attrs ? attrs.get("braid.global_shape") : Attribute();
  Attribute split = attrs ? attrs.get("braid.split") : Attribute();
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
    if (auto axis = module->getAttrOfType<StringAttr>("braid.zigzag_axis")) {
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
    auto axes = param->getAttrOfType<ArrayAttr>("braid.zero_axes");
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

std::optional<ShardedTensor> ProgramEmitter::gradSharding(StringRef name,
                                                     RankedTensorType type) {
  if (!name.consume_front("grad."))
    return std::nullopt;
  auto param = symbols.lookup<ParamOp>(name);
  if (!param)
    return std::nullopt;
  RankedTensorType local = param.getTensorType();
  auto sharded = shardings.find(name);
  if (sharded != shardings.end() && type.getShape() == local.getShape())
    return sharded->second;
  // A ZeRO-2 gradient: this rank's range of the flat parameter.
  auto zero = zeroGroups.find(name);
  if (zero != zeroGroups.end() && type.getRank() == 1 &&
      type.getNumElements() * zero->second.size() == local.getNumElements() &&
      type.getNumElements() != local.getNumElements())
    return ShardedTensor{
        {local.getNumElements()},
        ValueSharding{{AxisList(zero->second.positions.begin(),
                                zero->second.positions.end())},
                      {}}};
  return std::nullopt;
}

std::optional<ShardedTensor>
ProgramEmitter::activationSharding(Value value, RankedTensorType type,
                                   std::string *partial) {
  // What the partitioner recorded of the op's results (Partition.cpp,
  // recordLayouts) or of a function's arguments; a call's result is what
  // its callee returns (autodiff's forward functions return the saved
  // activations). Passes after the partitioner may have changed an op, so
  // the record is used only where it still describes this local type.
  // Under a zigzag sequence layout a value's sequence may be in zigzag
  // order without being split over the zigzag axis (keys gathered over
  // cp): no layout says so, so such programs dump activations locally.
  if (!devices || !zigzagAxis.empty())
    return std::nullopt;
  DictionaryAttr attrs;
  for (int depth = 0; depth < 16 && !attrs; ++depth) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (!func || arg.getOwner() != &func.getBody().front())
        return std::nullopt;
      attrs = func.getArgAttrDict(arg.getArgNumber());
      if (!attrs)
        return std::nullopt;
      break;
    }
    auto result = cast<OpResult>(value);
    if (auto call = dyn_cast<func::CallOp>(result.getOwner())) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        return std::nullopt;
      auto ret = dyn_cast<func::ReturnOp>(
          callee.getBody().back().getTerminator());
      if (!ret || ret.getNumOperands() != call.getNumResults())
        return std::nullopt;
      value = ret.getOperand(result.getResultNumber());
      continue;
    }
    auto layouts =
        result.getOwner()->getAttrOfType<ArrayAttr>("braid.result_layouts");
    if (!layouts || layouts.size() <= result.getResultNumber())
      return std::nullopt;
    attrs = dyn_cast<DictionaryAttr>(layouts[result.getResultNumber()]);
  }
  auto global = attrs ? attrs.getAs<DenseI64ArrayAttr>("braid.global_shape")
                      : DenseI64ArrayAttr();
  auto split = attrs ? attrs.getAs<ArrayAttr>("braid.split") : ArrayAttr();
  int64_t rank = type.getRank();
  if (!global || !split || static_cast<int64_t>(global.size()) != rank ||
      static_cast<int64_t>(split.size()) != rank)
    return std::nullopt;
  ShardedTensor tensor;
  tensor.globalShape = llvm::to_vector(global.asArrayRef());
  tensor.sharding = ValueSharding::replicated(rank);
  // A partial sum: the group its terms are summed over, in grid order.
  if (auto axes = attrs.getAs<ArrayAttr>("braid.partial")) {
    AxisList positions;
    for (Attribute axis : axes) {
      auto name = dyn_cast<StringAttr>(axis);
      std::optional<int16_t> position =
          name ? devices->find(name.getValue()) : std::nullopt;
      if (!position)
        return std::nullopt;
      positions.push_back(*position);
    }
    llvm::sort(positions);
    *partial = devices->describe(positions);
  }
  for (int64_t d = 0; d < rank; ++d) {
    auto axes = dyn_cast<ArrayAttr>(split[d]);
    if (!axes)
      return std::nullopt;
    for (Attribute axis : axes) {
      auto name = dyn_cast<StringAttr>(axis);
      std::optional<int16_t> position =
          name ? devices->find(name.getValue()) : std::nullopt;
      if (!position)
        return std::nullopt;
      tensor.sharding.split[d].push_back(*position);
    }
    int64_t parts = devices->size(tensor.sharding.split[d]);
    int64_t whole = tensor.globalShape[d];
    if (type.getDimSize(d) != (whole + parts - 1) / parts)
      return std::nullopt;
  }
  return tensor;
}

std::optional<ProgramEmitter::ZeroBlockGrad>
ProgramEmitter::zeroBlockGrad(StringRef name, RankedTensorType type) {
  if (!name.consume_front("grad."))
    return std::nullopt;
  auto param = symbols.lookup<ParamOp>(name);
  auto sharded = shardings.find(name);
  auto zero = zeroGroups.find(name);
  if (!param || sharded == shardings.end() || zero == zeroGroups.end())
    return std::nullopt;
  RankedTensorType local = param.getTensorType();
  if (type.getRank() != 1 || type.getNumElements() == local.getNumElements() ||
      type.getNumElements() * zero->second.size() != local.getNumElements())
    return std::nullopt;
  return ZeroBlockGrad{zero->second, sharded->second, llvm::to_vector(local.getShape())};
}

std::string FunctionEmitter::strings(ArrayRef<std::string> values) {
  std::string content = llvm::join(llvm::map_range(values, quoted), ", ");
  auto [it, inserted] = arrays.try_emplace("strings:" + content, "");
  if (!inserted)
    return it->second;
  it->second = "kS" + std::to_string(nextArray++);
  body += "  static const char *const " + it->second + "[] = {" + content +
          "};\n";
  return it->second;
}

std::string FunctionEmitter::coordinate(const GridGroup &group) {
  if (group.inGridOrder())
    return "coord(rt, " + quoted(group.spec()) + ")";
  std::string expr;
  for (auto [name, size] : llvm::zip_equal(group.names, group.sizes)) {
    std::string axis = "coord(rt, " + quoted(name) + ")";
    expr = expr.empty()
               ? axis
               : "(" + expr + " * " + std::to_string(size) + " + " + axis + ")";
  }
  return expr;
}

void FunctionEmitter::announce(Value result, raw_ostream &os, bool topLevel) {
  auto type = cast<RankedTensorType>(result.getType());
  std::string name = nameOf(result);
  // A ZeRO range of a sharded weight's gradient: gathered into its block,
  // then placed as the block (a flat layout cannot say both).
  if (std::optional<ProgramEmitter::ZeroBlockGrad> zero = program.zeroBlockGrad(name, type)) {
    os << "  braid_rt_value_zero_sharded(rt, " << (topLevel ? "\"\"" : "nullptr") << ", "
       << quoted(name) << ", " << ptr(result) << ", " << dtypeName(type) << ", "
       << type.getNumElements() << ", " << quoted(zero->group.spec()) << ", "
       << zero->blockShape.size() << ", " << array(zero->blockShape) << ", "
       << array(zero->block.globalShape) << ", "
       << strings(splitSpecs(zero->block, *program.devices)) << ");\n";
    return;
  }
  os << "  braid_rt_value";
  std::string partial;
  std::optional<ShardedTensor> sharding = program.gradSharding(name, type);
  if (!sharding)
    sharding = program.activationSharding(result, type, &partial);
  if (!partial.empty())
    os << "_partial";
  else if (sharding)
    os << "_sharded";
  os << "(rt, " << (topLevel ? "\"\"" : "nullptr") << ", " << quoted(name) << ", "
     << ptr(result) << ", "
     << dtypeName(type) << ", " << type.getRank() << ", "
     << array(type.getShape());
  if (sharding)
    os << ", " << array(sharding->globalShape) << ", "
       << strings(splitSpecs(*sharding, *program.devices));
  if (!partial.empty())
    os << ", " << quoted(partial);
  os << ");\n";
}

/// Sizes of a tensor of `shape` around dimension `dim`: the product of the
/// dimensions before it and of those after it.
static std::pair<int64_t, int64_t> outerInner(ArrayRef<int64_t> shape,
                                              int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (int64_t d = dim + 1, e = shape.size(); d < e; ++d)
    inner *= shape[d];
  return {outer, inner};
}

LogicalResult FunctionEmitter::emitSpmdOp(Operation *op, raw_ostream &os) {
  std::string call;
  auto p = [&](Value v) { return ptr(v); };
  auto n = [](int64_t v) { return std::to_string(v); };
  auto dt = [](Value v) { return dtypeName(v.getType()); };
  auto error = [&] { return op->emitError(); };
  // Statements after the first one start on a new line.
  auto add = [&](const std::string &statement) {
    call += (call.empty() ? "" : ";\n  ") + statement;
  };
  // The group of a shard collective, which must be on the program's grid.
  auto collectiveGroup = [&](auto c) -> FailureOr<GridGroup> {
    shard::GridOp grid = getProgramGrid(op);
    if (!grid || c.getGrid() != grid.getSymName())
      return op->emitError("runs on grid @")
             << c.getGrid() << ", not the program's grid";
    if (getElementTypeOrSelf(c.getInput().getType()) !=
        getElementTypeOrSelf(c.getResult().getType()))
      return op->emitError("the runtime's collectives keep the element type");
    return getGridGroup(op, c.getGridAttr(), c.getGridAxes(), error);
  };

  // The group named by a braid op's attribute.
  auto namedGroup = [&](ArrayAttr axes) {
    return getGridGroup(op, axes, error);
  };

  LogicalResult result =
      TypeSwitch<Operation *, LogicalResult>(op)
          .Case<shard::AllReduceOp, shard::AllGatherOp,
                shard::ReduceScatterOp, shard::AllToAllOp>([&](auto) {
            return op->emitError("a transfer reaches the emitter as a dist "
                                 "op: run --convert-braid-to-dist first");
          })
          .Case([&](shard::AllSliceOp s) {
            FailureOr<GridGroup> group = collectiveGroup(s);
            if (failed(group))
              return failure();
            int64_t dim = s.getSliceAxis().getSExtValue();
            auto [outer, inner] = outerInner(shapeOf(s.getInput()), dim);
            int64_t local = shapeOf(s.getResult())[dim];
            add("braid_k_slice(rt, " + dt(s.getInput()) + ", " +
                p(s.getInput()) + ", " + p(s.getResult()) + ", " + n(outer) +
                ", " + n(shapeOf(s.getInput())[dim]) + ", " + n(local) + ", " +
                n(inner) + ", " + coordinate(*group) + " * " + n(local) + ")");
            return success();
          })
          .Case([&](BiasAddOp b) {
            add("braid_k_bias_add(rt, " + dt(b.getInput()) + ", " +
                p(b.getInput()) + ", " + p(b.getBias()) + ", " +
                p(b.getResult()) + ", " + n(numElements(b.getResult())) + ", " +
                n(numElements(b.getBias())) + ")");
            return success();
          })
          .Case([&](UnsliceOp u) {
            FailureOr<GridGroup> group = namedGroup(u.getAxes());
            if (failed(group))
              return failure();
            int64_t dim = u.getDim();
            auto [outer, inner] = outerInner(shapeOf(u.getInput()), dim);
            int64_t local = shapeOf(u.getInput())[dim];
            add("braid_k_unslice(rt, " + dt(u.getInput()) + ", " +
                p(u.getInput()) + ", " + p(u.getResult()) + ", " + n(outer) +
                ", " + n(shapeOf(u.getResult())[dim]) + ", " + n(local) + ", " +
                n(inner) + ", " + blockOf(coordinate(*group), u.getReplicas()) +
                " * " + n(local) + ")");
            return success();
          })
          .Case([&](SliceOp sl) {
            FailureOr<GridGroup> group = namedGroup(sl.getAxes());
            if (failed(group))
              return failure();
            int64_t dim = sl.getDim();
            auto [outer, inner] = outerInner(shapeOf(sl.getInput()), dim);
            int64_t local = shapeOf(sl.getResult())[dim];
            add("braid_k_slice(rt, " + dt(sl.getInput()) + ", " +
                p(sl.getInput()) + ", " + p(sl.getResult()) + ", " + n(outer) +
                ", " + n(shapeOf(sl.getInput())[dim]) + ", " + n(local) + ", " +
                n(inner) + ", " + blockOf(coordinate(*group), sl.getReplicas()) +
                " * " + n(local) + ")");
            return success();
          })
          .Default([&](Operation *other) {
            return other->emitError("braid-translate cannot emit '")
                   << other->getName() << "'";
          });
  if (failed(result))
    return failure();
  emitBracketed(op, call, os);
  return success();
}

} // namespace braid::cpp
