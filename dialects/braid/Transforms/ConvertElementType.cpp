//===- ConvertElementType.cpp - the --braid-convert-element-type pass -----===//

#include "dialects/braid/Transforms/Passes.h"

#include "dialects/braid/IR/BraidOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDCONVERTELEMENTTYPEPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

namespace {

/// What keeps f32 whatever the target: the state a Mamba scan carries
/// (braid.scan_step accumulates h in f32 from one call to the next) and
/// braid.sample's temperature and top-p, followed
/// from the scan back through its layer function's argument and the
/// collectives before the call to the braid.state the entry reads.
struct KeptF32 {
  DenseSet<Value> values;
  DenseSet<StringAttr> states;
};

KeptF32 keptF32(ModuleOp module) {
  KeptF32 kept;
  DenseMap<StringAttr, SmallVector<func::CallOp>> calls;
  module.walk([&](func::CallOp call) {
    calls[call.getCalleeAttr().getAttr()].push_back(call);
  });
  // Marks `value` and what it comes from, up to the state read.
  auto keep = [&](Value value) {
    while (value && kept.values.insert(value).second) {
      Operation *def = value.getDefiningOp();
      if (auto get = dyn_cast_or_null<GetParamOp>(def))
        kept.states.insert(get.getNameAttr().getAttr());
      bool collective = isa_and_nonnull<shard::ShardDialect>(
                            def ? def->getDialect() : nullptr) &&
                        def->getNumOperands() == 1;
      value = collective ? def->getOperand(0) : Value();
    }
  };
  // braid.sample reads its temperature and top-p (the driver's options) as
  // f32 whatever the logits' type.
  module.walk([&](SampleOp sample) {
    keep(sample.getTemperature());
    keep(sample.getTopP());
  });
  module.walk([&](ScanStepOp scan) {
    kept.values.insert(scan.getNewState());
    keep(scan.getState());
    auto arg = dyn_cast<BlockArgument>(scan.getState());
    auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                    : func::FuncOp();
    if (!func || !arg.getOwner()->isEntryBlock())
      return;
    for (func::CallOp call : calls.lookup(func.getSymNameAttr()))
      keep(call.getOperand(arg.getArgNumber()));
  });
  return kept;
}

struct BraidConvertElementTypePass
    : braid::impl::BraidConvertElementTypePassBase<
          BraidConvertElementTypePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    Type target;
    if (to == Precision::BF16)
      target = BFloat16Type::get(context);
    else if (to == Precision::F16)
      target = Float16Type::get(context);
    else {
      emitError(module.getLoc(), "--braid-convert-element-type: 'to' must be bf16 or "
                       "f16, found 'f32' (the model's own)");
      return signalPassFailure();
    }
    // f32 tensors take the target element type; others are left alone.
    auto convert = [&](Type type) -> Type {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || !tensor.getElementType().isF32())
        return type;
      return tensor.clone(target);
    };

    if (!masterWeights)
      for (ParamOp param : module.getOps<ParamOp>())
        param.setType(cast<RankedTensorType>(convert(param.getType())));
    // The states declared before this pass are the model's own, such as the
    // KV cache of --braid-derive-inference's programs (the optimizer's come
    // later): they hold the model's values in its dtype, master weights or
    // not, since nothing trains them.
    const KeptF32 kept = keptF32(module);
    DenseSet<StringAttr> states;
    for (StateOp state : module.getOps<StateOp>()) {
      if (!kept.states.contains(state.getSymNameAttr()))
        state.setType(cast<RankedTensorType>(convert(state.getType())));
      states.insert(state.getSymNameAttr());
    }
    // Master weights: a parameter read keeps its f32 type and feeds a
    // converted copy to the rest of the graph.
    SmallVector<GetParamOp> reads;
    if (masterWeights)
      module.walk([&](GetParamOp get) {
        if (!states.contains(get.getNameAttr().getAttr()))
          reads.push_back(get);
      });
    DenseSet<Operation *> masterReads;
    OpBuilder b(context);
    for (GetParamOp get : reads) {
      b.setInsertionPointAfter(get);
      auto copy = ConvertOp::create(b, get.getLoc(),
                                    convert(get.getResult().getType()),
                                    get.getResult());
      get.getResult().replaceAllUsesExcept(copy, copy);
      masterReads.insert(get);
    }
    // Block arguments first: a collective takes its operand's element type,
    // and the walk below visits an op before the one whose region holds it
    // (a ZeRO-3 gather of a function argument).
    module.walk([&](Block *block) {
      for (BlockArgument arg : block->getArguments())
        if (!kept.values.contains(arg))
          arg.setType(convert(arg.getType()));
    });
    module.walk([&](Operation *op) {
      if (masterWeights && (isa<ConvertOp>(op) || masterReads.contains(op)))
        return;
      // The loss is always f32.
      if (isa<CrossEntropyOp>(op))
        return;
      // A collective moves its operand's elements as they are (the loss's
      // sums stay f32).
      if (isa_and_nonnull<shard::ShardDialect>(op->getDialect()) &&
          op->getNumOperands() == 1 && op->getNumResults() == 1) {
        auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
        auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
        if (in && out)
          op->getResult(0).setType(out.clone(in.getElementType()));
        return;
      }
      for (OpResult result : op->getResults())
        if (!kept.values.contains(result))
          result.setType(convert(result.getType()));
    });
    for (auto func : module.getOps<func::FuncOp>()) {
      SmallVector<Type> inputs(func.getArgumentTypes());
      for (Type &type : inputs)
        type = convert(type);
      SmallVector<Type> results(func.getResultTypes());
      if (!func.isExternal()) {
        // The arguments as converted above (a scan's state kept f32).
        inputs = llvm::to_vector(func.getBody().front().getArgumentTypes());
        results = llvm::to_vector(
            func.getBody().front().getTerminator()->getOperandTypes());
      }
      func.setType(FunctionType::get(context, inputs, results));
    }
  }
};
} // namespace
