//===- Optimizer.cpp - the --braid-optimizer pass -------------------------===//

#include "dialects/braid/Transforms/Passes.h"

#include "dialects/braid/IR/BraidOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDOPTIMIZERPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

namespace {
struct BraidOptimizerPass
    : braid::impl::BraidOptimizerPassBase<BraidOptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    if (kind != "adamw" && kind != "sgd") {
      module.emitError("--braid-optimizer: kind must be adamw or sgd, found '")
          << kind << "'";
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>(entry);
    auto names = step ? step->getAttrOfType<ArrayAttr>("braid.gradients")
                      : ArrayAttr();
    if (!names) {
      module.emitError("--braid-optimizer needs the gradients of a step "
                       "function '@")
          << entry << "' (run --braid-autodiff first)";
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    if (ret.getNumOperands() != names.size() + 1) {
      ret.emitError("expected the loss and ")
          << names.size() << " gradients, found " << ret.getNumOperands()
          << " results";
      return signalPassFailure();
    }
    Value loss = ret.getOperand(0);
    SmallVector<Value> grads(ret.getOperands().drop_front());

    // State: the step counter and, for AdamW, both moments in f32.
    OpBuilder b(context);
    b.setInsertionPoint(step);
    Location loc = step.getLoc();
    auto f32 = Float32Type::get(context);
    auto declare = [&](StringRef name, RankedTensorType type) {
      auto state = StateOp::create(b, loc, name, type, InitKind::Zeros);
      return FlatSymbolRefAttr::get(state.getSymNameAttr());
    };
    FlatSymbolRefAttr counter =
        declare("opt.step", RankedTensorType::get({}, f32));

    b.setInsertionPoint(ret);
    Value sumsq = SumSquaresOp::create(b, loc, RankedTensorType::get({}, f32),
                                       grads);
    Value coef = ClipCoefficientOp::create(b, loc, sumsq,
                                           b.getF64FloatAttr(maxNorm));
    IncrementOp::create(b, loc, counter);
    for (auto [name, grad] : llvm::zip(names, grads)) {
      auto param = cast<FlatSymbolRefAttr>(name);
      auto type = cast<RankedTensorType>(grad.getType());
      if (kind == "sgd") {
        SGDUpdateOp::create(b, loc, param, grad, coef, b.getF64FloatAttr(lr),
                            b.getF64FloatAttr(weightDecay));
        continue;
      }
      OpBuilder::InsertPoint updates = b.saveInsertionPoint();
      b.setInsertionPoint(step);
      FlatSymbolRefAttr m =
          declare(("opt.m." + param.getValue()).str(), type.clone(f32));
      FlatSymbolRefAttr v =
          declare(("opt.v." + param.getValue()).str(), type.clone(f32));
      b.restoreInsertionPoint(updates);
      AdamWUpdateOp::create(b, loc, param, grad, coef, m, v, counter,
                            b.getF64FloatAttr(lr), b.getF64FloatAttr(beta1),
                            b.getF64FloatAttr(beta2), b.getF64FloatAttr(eps),
                            b.getF64FloatAttr(weightDecay));
    }
    func::ReturnOp::create(b, ret.getLoc(), loss);
    ret.erase();
    step.setType(FunctionType::get(context, step.getArgumentTypes(),
                                   loss.getType()));
    step->removeAttr("braid.gradients");
  }
};
} // namespace
