//===- EmitAnnounce.cpp - values announced for dumps ----------------------===//
//
// A dump (braid-run --dump) reads the values a step computes by name: the
// emitted program announces each named result once it is complete, with
// where it sits in its global tensor when it is a block of one (a sharded
// parameter's gradient, a ZeRO range, an activation the partitioner recorded
// the layout of), so that dumps of different grids compare.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"

namespace braid::cpp {

void FunctionEmitter::announceResults(Operation &op) {
  // Outside the functions that announce (a pipeline rank's chunks, run per
  // micro-batch), only the ops marked dist.announce do (the gradient
  // reductions a chunk's last backward holds).
  const bool announces = program.announcesIn(fp.func);
  auto marked = [](Operation *o) { return o && o->hasAttr("dist.announce"); };
  auto wait = dyn_cast<dist::WaitOp>(op);
  if (!announces && !marked(&op) &&
      !(wait && llvm::any_of(wait.getTokens(), [&](Value token) {
          return marked(token.getDefiningOp());
        })))
    return;
  auto named = [&](Operation *o) {
    return o && isa<NameLoc>(o->getLoc()) && (announces || marked(o));
  };
  // A transfer's results once its wait has completed them; a reshape's only
  // when it names a value the op before it left unnamed (the end of a
  // transfer's re-layout), other reshapes being views of a value announced
  // already.
  if (wait) {
    for (Value token : wait.getTokens())
      if (named(token.getDefiningOp()))
        for (Value result : token.getDefiningOp()->getResults())
          if (isa<RankedTensorType>(result.getType()))
            announce(result, !announces);
  } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    if (named(&op) && !named(reshape.getInput().getDefiningOp()) &&
        !isa<BlockArgument>(reshape.getInput()))
      announce(reshape.getResult(), !announces);
  } else if (!isa<GetParamOp, func::ReturnOp>(op) && named(&op) &&
             !dist::getToken(&op)) {
    for (Value result : op.getResults())
      announce(result, !announces);
  }
}

void FunctionEmitter::announce(Value result, bool topLevel) {
  auto type = cast<RankedTensorType>(result.getType());
  std::string name = nameOf(result);
  // The call path's scope, or the step's own.
  Code scope = topLevel ? Code::string("") : Code("nullptr");
  // A ZeRO range of a sharded weight's gradient: gathered into its block,
  // then placed as the block (a flat layout cannot say both).
  if (std::optional<ProgramEmitter::ZeroBlockGrad> zero =
          program.zeroBlockGrad(name, type)) {
    addStatement(Code("braid_rt_value_zero_sharded(rt, ")
                 << scope << ", " << Code::string(name) << ", " << ptr(result)
                 << ", " << dtypeName(type) << ", " << type.getNumElements()
                 << ", " << Code::string(zero->group.spec()) << ", "
                 << zero->blockShape.size() << ", " << array(zero->blockShape)
                 << ", " << array(zero->block.globalShape) << ", "
                 << strings(splitSpecs(zero->block, *program.devices)) << ")");
    return;
  }
  std::string partial;
  std::optional<ShardedTensor> sharding = program.gradSharding(name, type);
  if (!sharding)
    sharding = program.activationSharding(result, type, &partial);
  Code call("braid_rt_value");
  if (!partial.empty())
    call << "_partial";
  else if (sharding)
    call << "_sharded";
  call << "(rt, " << scope << ", " << Code::string(name) << ", " << ptr(result)
       << ", " << dtypeName(type) << ", " << type.getRank() << ", "
       << array(type.getShape());
  if (sharding)
    call << ", " << array(sharding->globalShape) << ", "
         << strings(splitSpecs(*sharding, *program.devices));
  if (!partial.empty())
    call << ", " << Code::string(partial);
  addStatement(call << ")");
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
  if (zero != zeroGroups.end() && isZeroRange(type, local, zero->second))
    return ShardedTensor{
        {local.getNumElements()},
        ValueSharding{{AxisList(zero->second.positions.begin(),
                                zero->second.positions.end())},
                      {}}};
  return std::nullopt;
}

/// The layout the partitioner recorded of `value` (Partition.cpp,
/// recordLayouts): of an op's result, or of a function's argument; a call's
/// result is what its callee returns (autodiff's forward functions return
/// the saved activations). Null when none is recorded.
static DictionaryAttr recordedLayout(Value value, SymbolTable &symbols) {
  for (int depth = 0; depth < 16; ++depth) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (!func || arg.getOwner() != &func.getBody().front())
        return {};
      return func.getArgAttrDict(arg.getArgNumber());
    }
    auto result = cast<OpResult>(value);
    if (auto call = dyn_cast<func::CallOp>(result.getOwner())) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        return {};
      auto ret = dyn_cast<func::ReturnOp>(
          callee.getBody().back().getTerminator());
      if (!ret || ret.getNumOperands() != call.getNumResults())
        return {};
      value = ret.getOperand(result.getResultNumber());
      continue;
    }
    auto layouts =
        result.getOwner()->getAttrOfType<ArrayAttr>(kResultLayoutsAttrName);
    if (!layouts || layouts.size() <= result.getResultNumber())
      return {};
    return dyn_cast<DictionaryAttr>(layouts[result.getResultNumber()]);
  }
  return {};
}

/// The grid positions of the axes `names` names, nullopt if one is not a
/// name of the grid's axes.
static std::optional<AxisList> axisPositions(ArrayAttr names,
                                             const Grid &devices) {
  AxisList positions;
  for (Attribute axis : names) {
    auto name = dyn_cast<StringAttr>(axis);
    std::optional<int16_t> position =
        name ? devices.find(name.getValue()) : std::nullopt;
    if (!position)
      return std::nullopt;
    positions.push_back(*position);
  }
  return positions;
}

std::optional<ShardedTensor>
ProgramEmitter::activationSharding(Value value, RankedTensorType type,
                                   std::string *partial) {
  // Passes after the partitioner may have changed an op, so the record is
  // used only where it still describes this local type. Under a zigzag
  // sequence layout a value's sequence may be in zigzag order without being
  // split over the zigzag axis (keys gathered over cp): no layout says so,
  // so such programs dump activations locally.
  if (!devices || !zigzagAxis.empty())
    return std::nullopt;
  DictionaryAttr attrs = recordedLayout(value, symbols);
  auto global = attrs ? attrs.getAs<DenseI64ArrayAttr>(kGlobalShapeAttrName)
                      : DenseI64ArrayAttr();
  auto split = attrs ? attrs.getAs<ArrayAttr>(kSplitAttrName) : ArrayAttr();
  int64_t rank = type.getRank();
  if (!global || !split || static_cast<int64_t>(global.size()) != rank ||
      static_cast<int64_t>(split.size()) != rank)
    return std::nullopt;
  ShardedTensor tensor;
  tensor.globalShape = llvm::to_vector(global.asArrayRef());
  tensor.sharding = ValueSharding::replicated(rank);
  // A partial sum: the group its terms are summed over, in grid order.
  if (auto axes = attrs.getAs<ArrayAttr>(kPartialAttrName)) {
    std::optional<AxisList> positions = axisPositions(axes, *devices);
    if (!positions)
      return std::nullopt;
    llvm::sort(*positions);
    *partial = devices->describe(*positions);
  }
  for (int64_t d = 0; d < rank; ++d) {
    auto axes = dyn_cast<ArrayAttr>(split[d]);
    std::optional<AxisList> positions =
        axes ? axisPositions(axes, *devices) : std::nullopt;
    if (!positions)
      return std::nullopt;
    tensor.sharding.split[d] = *positions;
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
  if (!isZeroRange(type, local, zero->second))
    return std::nullopt;
  return ZeroBlockGrad{zero->second, sharded->second,
                       llvm::to_vector(local.getShape())};
}

} // namespace braid::cpp
