//===- Optimizer.cpp - the --braid-optimizer pass -------------------------===//

#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/Sharding.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDOPTIMIZERPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

namespace {
/// The grid axes a parameter is not split over (its gradient, a partial sum
/// over them, is summed there).
AxisList replicatedAxes(SymbolTable &symbols, const Grid &grid,
                        StringRef param) {
  AxisList used;
  if (auto op = symbols.lookup<ParamOp>(param))
    if (auto split = op->getAttrOfType<ArrayAttr>(kSplitAttrName))
      for (Attribute dim : split)
        for (Attribute name : cast<ArrayAttr>(dim))
          used.push_back(*grid.find(cast<StringAttr>(name).getValue()));
  // Pipeline ranks hold different chunks, not copies.
  std::optional<int16_t> pp = grid.find("pp");
  AxisList replicated;
  for (int16_t axis : grid.allAxes())
    if (!llvm::is_contained(used, axis) && axis != pp)
      replicated.push_back(axis);
  return replicated;
}

/// Moves a value's name (its NameLoc) to the value that replaces it, so
/// dumps show the reduced gradient under the gradient's name.
void moveName(Value from, Value to) {
  Operation *source = from.getDefiningOp();
  Operation *dest = to.getDefiningOp();
  if (!source || !dest || source == dest)
    return;
  if (auto name = dyn_cast<NameLoc>(source->getLoc())) {
    dest->setLoc(name);
    source->setLoc(name.getChildLoc());
  }
}

struct BraidOptimizerPass
    : braid::impl::BraidOptimizerPassBase<BraidOptimizerPass> {
  using Base::Base;

  /// The module's symbols, looked up by hash: one lookup per parameter in
  /// a linear scan of the module made the pass quadratic in the layers.
  std::optional<SymbolTable> symbols;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    symbols.emplace(module);
    if (kind == OptimizerKind::None) {
      emitError(module.getLoc(), "--braid-optimizer: kind must be adamw or sgd, found "
                       "'none' (the pipeline's optimizer=none runs no "
                       "optimizer)");
      return signalPassFailure();
    }
    // A pipelined module has a step function per pipeline rank, each
    // updating its own parameters.
    FailureOr<SmallVector<func::FuncOp>> steps =
        getRankSteps(module, EntryKind::TrainStep, "--braid-optimizer");
    if (failed(steps))
      return signalPassFailure();
    for (func::FuncOp step : *steps)
      if (failed(updateStep(step)))
        return signalPassFailure();
  }

  LogicalResult updateStep(func::FuncOp step) {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    auto names = step ? step->getAttrOfType<ArrayAttr>(kGradientsAttrName)
                      : ArrayAttr();
    if (!names)
      return module.emitError("--braid-optimizer needs the gradients of a "
                              "step function '@")
             << step.getSymName() << "' (run --braid-autodiff first)";
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    if (ret.getNumOperands() != names.size() + 1)
      return ret.emitError("expected the loss and ")
             << names.size() << " gradients, found " << ret.getNumOperands()
             << " results";
    Value loss = ret.getOperand(0);
    SmallVector<Value> grads(ret.getOperands().drop_front());

    // State: the step counter and, for AdamW, both moments in f32.
    OpBuilder b(context);
    b.setInsertionPoint(step);
    Location loc = step.getLoc();
    auto f32 = Float32Type::get(context);
    // Pipeline ranks share the declarations (each program holds its own).
    auto declare = [&](StringRef name, RankedTensorType type) {
      if (auto state = symbols->lookup<StateOp>(name))
        return FlatSymbolRefAttr::get(state.getSymNameAttr());
      auto state = StateOp::create(b, loc, name, type, InitKind::Zeros);
      symbols->insert(state);
      return FlatSymbolRefAttr::get(state.getSymNameAttr());
    };
    FlatSymbolRefAttr counter =
        declare("opt.step", RankedTensorType::get({}, f32));

    b.setInsertionPoint(ret);
    FailureOr<std::optional<Grid>> gridOf = Grid::of(module);
    if (failed(gridOf))
      return failure();
    std::optional<Grid> grid = *gridOf;
    SmallVector<ArrayAttr> zeroAxes(grads.size());
    Value sumsq;
    if (grid) {
      SmallVector<int64_t> copies(grads.size(), 1);
      if (auto attr = step->getAttrOfType<DenseI64ArrayAttr>(
              kGradientCopiesAttrName))
        copies.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
      if (failed(reduceGradients(b, *grid, names, grads, copies, zeroAxes,
                                 sumsq)))
        return failure();
    } else {
      sumsq = SumSquaresOp::create(b, loc, RankedTensorType::get({}, f32),
                                   grads);
    }
    Value coef = ClipCoefficientOp::create(b, loc, sumsq,
                                           b.getF64FloatAttr(maxNorm));
    IncrementOp::create(b, loc, counter);
    for (auto [name, grad, zeroAttr] : llvm::zip(names, grads, zeroAxes)) {
      auto param = cast<FlatSymbolRefAttr>(name);
      auto type = cast<RankedTensorType>(grad.getType());
      if (kind == OptimizerKind::SGD) {
        SGDUpdateOp::create(b, loc, param, grad, coef, b.getF64FloatAttr(lr),
                            b.getF64FloatAttr(weightDecay), zeroAttr,
                            /*offset=*/Value(), /*range=*/IntegerAttr());
        continue;
      }
      // ZeRO-1/2: the moments hold this rank's range of the flat parameter.
      RankedTensorType moments = type.clone(f32);
      if (zeroAttr) {
        auto paramOp = symbols->lookup<ParamOp>(param.getValue());
        int64_t n = grid->size(*grid->find("dp"));
        moments = RankedTensorType::get(
            {paramOp.getTensorType().getNumElements() / n}, f32);
      }
      OpBuilder::InsertPoint updates = b.saveInsertionPoint();
      b.setInsertionPoint(step);
      FlatSymbolRefAttr m =
          declare(("opt.m." + param.getValue()).str(), moments);
      FlatSymbolRefAttr v =
          declare(("opt.v." + param.getValue()).str(), moments);
      // The moments lie over the grid like their parameter.
      auto paramOp = symbols->lookup<ParamOp>(param.getValue());
      if (!zeroAttr && paramOp->hasAttr(kSplitAttrName))
        for (FlatSymbolRefAttr state : {m, v})
          for (StringRef attr : {kSplitAttrName, kGlobalShapeAttrName})
            symbols->lookup(state.getValue())
                ->setAttr(attr, paramOp->getAttr(attr));
      if (zeroAttr)
        for (FlatSymbolRefAttr state : {m, v}) {
          Operation *op = symbols->lookup(state.getValue());
          op->setAttr(kSplitAttrName, b.getArrayAttr({zeroAttr}));
          op->setAttr(kGlobalShapeAttrName,
                      b.getDenseI64ArrayAttr(
                          {moments.getNumElements() *
                           grid->size(*grid->find("dp"))}));
        }
      b.restoreInsertionPoint(updates);
      AdamWUpdateOp::create(b, loc, param, grad, coef, m, v, counter,
                            b.getF64FloatAttr(lr), b.getF64FloatAttr(beta1),
                            b.getF64FloatAttr(beta2), b.getF64FloatAttr(eps),
                            b.getF64FloatAttr(weightDecay), zeroAttr,
                            /*offset=*/Value(), /*range=*/IntegerAttr());
    }
    func::ReturnOp::create(b, ret.getLoc(), loss);
    ret.erase();
    step.setType(FunctionType::get(context, step.getArgumentTypes(),
                                   loss.getType()));
    step->removeAttr(kGradientsAttrName);
    step->removeAttr(kGradientCopiesAttrName);
    return success();
  }

  /// On a grid: each gradient is a partial sum over the axes its parameter
  /// is replicated on; sums it there (ZeRO-1 and 2: reduce-scatters it over
  /// dp into this rank's range of the flat gradient, the range the rank
  /// updates: with the all-gather of the updated parameter, 2 x (n-1)/n of
  /// the parameter per rank and step, as plain DP's all-reduce; an
  /// all-reduce of the whole gradient would add as much again. The two
  /// stages differ in when the reduce-scatter may run, which is the overlap
  /// scheduler's business), marks ZeRO-1/2 updates,
  /// and computes the global sum of squares, each element counted once
  /// (`copies`: how many pipeline ranks hold each gradient whole, as a tied
  /// embedding's first and last stage do).
  LogicalResult reduceGradients(OpBuilder &b, const Grid &grid,
                                ArrayAttr names, SmallVector<Value> &grads,
                                ArrayRef<int64_t> copies,
                                SmallVector<ArrayAttr> &zeroAxes,
                                Value &sumsq) {
    ModuleOp module = getOperation();
    Location loc = module.getLoc();
    auto f32 = RankedTensorType::get({}, b.getF32Type());
    int64_t stage = 0;
    if (auto attr = module->getAttrOfType<IntegerAttr>(kZeroAttrName))
      stage = attr.getInt();
    std::optional<int16_t> dp = grid.find("dp");
    // Gradients grouped by how many ranks hold each of their elements.
    std::map<int64_t, SmallVector<Value>> byReplicas;
    for (auto [i, name] : llvm::enumerate(names)) {
      StringRef param = cast<FlatSymbolRefAttr>(name).getValue();
      Value grad = grads[i];
      auto type = cast<RankedTensorType>(grad.getType());
      AxisList replicated = replicatedAxes(*symbols, grid, param);
      bool sharded = (stage == 1 || stage == 2) && dp &&
                     llvm::is_contained(replicated, *dp) &&
                     type.getNumElements() % grid.sizes[*dp] == 0;
      AxisList summed = replicated;
      if (sharded)
        llvm::erase(summed, *dp);
      Value reduced = grad;
      if (!summed.empty())
        reduced = shard::AllReduceOp::create(b, loc, type, grid.symbol,
                                             summed, reduced);
      int64_t replicas = grid.size(summed) * copies[i];
      if (sharded) {
        int64_t n = grid.sizes[*dp];
        Value flat = ReshapeOp::create(
            b, loc, RankedTensorType::get({type.getNumElements()},
                                          type.getElementType()),
            reduced);
        reduced = shard::ReduceScatterOp::create(
            b, loc,
            RankedTensorType::get({type.getNumElements() / n},
                                  type.getElementType()),
            FlatSymbolRefAttr::get(b.getContext(), grid.symbol),
            b.getDenseI16ArrayAttr({*dp}), flat,
            shard::ReductionKindAttr::get(b.getContext(),
                                          shard::ReductionKind::Sum),
            b.getIndexAttr(0));
      }
      if (sharded)
        zeroAxes[i] = grid.nameAttr(b.getContext(), {*dp});
      moveName(grad, reduced);
      grads[i] = reduced;
      byReplicas[replicas].push_back(reduced);
    }
    for (auto &[replicas, group] : byReplicas) {
      Value part = SumSquaresOp::create(b, loc, f32, group);
      if (replicas > 1)
        part = MulOp::create(
            b, loc, part,
            FillOp::create(b, loc, f32,
                           b.getF64FloatAttr(1.0 / static_cast<double>(replicas))));
      sumsq = sumsq ? AddOp::create(b, loc, sumsq, part).getResult() : part;
    }
    sumsq = shard::AllReduceOp::create(b, loc, f32, grid.symbol,
                                       grid.allAxes(), sumsq);
    return success();
  }
};
} // namespace
