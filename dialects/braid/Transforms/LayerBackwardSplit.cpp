//===- LayerBackwardSplit.cpp - ZB-H1's input/weight backward halves ------===//
//
// A layer's backward function returns the cotangents of its activation
// inputs and of its parameters together. The zero-bubble schedule runs the
// first as soon as it can (the previous stage waits for them) and the second
// later, so each backward function is cut in two: the ops the input
// cotangents need, and the rest, which read what they need of the first
// half from it.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Pipelining.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <optional>
#include <vector>

using namespace mlir;
using namespace mlir::braid;

void mlir::braid::splitLayerBackwards(ModuleOp module, func::FuncOp step) {
  MLIRContext *context = module.getContext();
  Block &body = step.getBody().front();
  // Per callee and weight mask: the two halves and how many values pass
  // from the first to the second.
  struct Halves {
    func::FuncOp input, weight;
    SmallVector<unsigned> inputResults, weightResults;
  };
  std::map<std::pair<Operation *, std::vector<bool>>, std::optional<Halves>>
      made;
  // Values computed from parameters alone: their cotangents are weight
  // gradients.
  llvm::DenseSet<Value> weights;
  for (Operation &op : body.without_terminator())
    if (!op.hasAttr(kBackwardAttrName) && op.getNumResults() > 0 &&
        llvm::all_of(op.getOperands(),
                     [&](Value v) { return weights.contains(v); }) &&
        !isa<func::CallOp>(op))
      for (Value r : op.getResults())
        weights.insert(r);

  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    auto call = dyn_cast<func::CallOp>(op);
    if (!call || !op.hasAttr(kBackwardAttrName) ||
        !call.getCallee().ends_with(".bwd"))
      continue;
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    // The forward call it differentiates: the one whose results it reads
    // (saved values) and whose operands are its leading operands.
    StringRef base = call.getCallee().drop_back(4);
    func::CallOp forwardCall;
    for (Value operand : call.getOperands())
      if (auto f = operand.getDefiningOp<func::CallOp>();
          f && (f.getCallee() == base || f.getCallee() == (base + ".fwd").str()))
        forwardCall = f;
    if (!callee || !forwardCall)
      continue;
    // Result k of the backward is the cotangent of the k-th differentiable
    // forward operand.
    std::vector<bool> mask;
    for (Value operand : forwardCall.getOperands())
      if (isa<FloatType>(getElementTypeOrSelf(operand.getType())))
        mask.push_back(weights.contains(operand));
    if (mask.size() != call.getNumResults() ||
        llvm::none_of(mask, [](bool w) { return w; }) ||
        llvm::all_of(mask, [](bool w) { return w; }))
      continue;
    auto key = std::make_pair(callee.getOperation(), mask);
    if (!made.count(key)) {
      made[key] = std::nullopt;
      Block &fb = callee.getBody().front();
      auto ret = cast<func::ReturnOp>(fb.getTerminator());
      if (llvm::any_of(ret.getOperands(),
                       [](Value v) { return isa<BlockArgument>(v); }))
        continue;
      // The input half: what the input cotangents need.
      llvm::SetVector<Operation *> needed;
      BackwardSliceOptions slice;
      slice.inclusive = true;
      slice.omitBlockArguments = true;
      for (auto [k, v] : llvm::enumerate(ret.getOperands()))
        if (!mask[k])
          (void)getBackwardSlice(v, &needed, slice);
      // A weight gradient the input half computes anyway is its result.
      Halves halves;
      for (auto [k, v] : llvm::enumerate(ret.getOperands()))
        if (!mask[k] || needed.count(v.getDefiningOp()))
          halves.inputResults.push_back(k);
        else
          halves.weightResults.push_back(k);
      if (halves.weightResults.empty())
        continue;
      // What the weight half reads of the input half passes between them.
      llvm::SetVector<Value> mid;
      for (Operation &o : fb.without_terminator())
        if (!needed.count(&o))
          for (Value operand : o.getOperands())
            if (operand.getDefiningOp() && needed.count(operand.getDefiningOp()))
              mid.insert(operand);
      OpBuilder b(context);
      b.setInsertionPointAfter(callee);
      auto makeHalf = [&](StringRef suffix, bool inputHalf) {
        SmallVector<Type> ins(fb.getArgumentTypes());
        if (!inputHalf)
          for (Value v : mid)
            ins.push_back(v.getType());
        SmallVector<Value> outs;
        for (unsigned k : inputHalf ? halves.inputResults : halves.weightResults)
          outs.push_back(ret.getOperand(k));
        if (inputHalf)
          llvm::append_range(outs, mid);
        SmallVector<Type> outTypes;
        for (Value v : outs)
          outTypes.push_back(v.getType());
        auto f = func::FuncOp::create(
            b, callee.getLoc(), (callee.getSymName() + suffix).str(),
            b.getFunctionType(ins, outTypes));
        f.setPrivate();
        Block *entry = f.addEntryBlock();
        OpBuilder fbld = OpBuilder::atBlockBegin(entry);
        IRMapping map;
        map.map(fb.getArguments(),
                entry->getArguments().take_front(fb.getNumArguments()));
        if (!inputHalf)
          map.map(mid.getArrayRef(),
                  entry->getArguments().drop_front(fb.getNumArguments()));
        for (Operation &o : fb.without_terminator())
          if (inputHalf ? needed.count(&o) > 0
                        : (needed.count(&o) == 0 &&
                           llvm::none_of(o.getResults(), [&](Value r) {
                             return map.contains(r);
                           })))
            fbld.clone(o, map);
        SmallVector<Value> results;
        for (Value v : outs)
          results.push_back(map.lookupOrDefault(v));
        func::ReturnOp::create(fbld, callee.getLoc(), results);
        return f;
      };
      halves.input = makeHalf("_input", true);
      halves.weight = makeHalf("_weight", false);
      made[key] = halves;
    }
    std::optional<Halves> &halves = made[key];
    if (!halves)
      continue;
    OpBuilder b(call);
    b.setListener(nullptr);
    auto input = func::CallOp::create(b, call.getLoc(), halves->input,
                                      call.getOperands());
    SmallVector<Value> weightOperands(call.getOperands());
    llvm::append_range(weightOperands, input.getResults().drop_front(
                                           halves->inputResults.size()));
    auto weight = func::CallOp::create(b, call.getLoc(), halves->weight,
                                       weightOperands);
    for (Operation *made : {input.getOperation(), weight.getOperation()})
      made->setDiscardableAttrs(call->getDiscardableAttrDictionary());
    for (auto [i, k] : llvm::enumerate(halves->inputResults))
      call.getResult(k).replaceAllUsesWith(input.getResult(i));
    for (auto [i, k] : llvm::enumerate(halves->weightResults))
      call.getResult(k).replaceAllUsesWith(weight.getResult(i));
    call.erase();
  }
}

