//===- ModelStats.cpp - size, FLOPs and memory of a braid model -----------===//

#include "dialects/braid/Analysis/ModelStats.h"

#include "dialects/braid/Analysis/OpCost.h"
#include "dialects/braid/IR/BraidOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::braid;

namespace {
/// Cost of one execution of a function, including the functions it calls.
struct FunctionCost {
  int64_t matmulFlops = 0;
  int64_t otherFlops = 0;
  int64_t activationBytes = 0;
};

class ModelWalker {
public:
  ModelWalker(ModuleOp module, ModelStats &stats)
      : symbols(module), stats(stats) {}

  /// Walks `func`, where `params` names the parameter each value is bound to
  /// (from braid.get_param or through call arguments). Returns the cost of one
  /// execution; `depth` is 0 for the step function and 1 for layer functions.
  FailureOr<FunctionCost> walk(func::FuncOp func,
                               DenseMap<Value, StringAttr> params, int depth);

  /// Parameters used as expert weights, with the fraction k/E of them a token
  /// uses, and parameters used as embedding tables.
  llvm::StringMap<double> expertFraction;
  llvm::StringSet<> embeddingTables;

private:
  SymbolTable symbols;
  ModelStats &stats;
  llvm::DenseSet<Operation *> onStack;
  llvm::StringMap<unsigned> layerIndex;

  void noteExpertWeights(ExpertFFNOp op,
                         const DenseMap<Value, StringAttr> &params);
};
} // namespace

void ModelWalker::noteExpertWeights(ExpertFFNOp op,
                                    const DenseMap<Value, StringAttr> &params) {
  // k of E experts see each token; without the dispatch in sight, assume all.
  double fraction = 1.0;
  if (auto dispatch = op.getInput().getDefiningOp<DispatchOp>())
    fraction = double(dispatch.getIndices().getType().getShape()[1]) /
               double(dispatch.getResult().getType().getShape()[0]);
  for (Value weight : {op.getWUp(), op.getWDown(), op.getWGate()})
    if (weight)
      if (StringAttr name = params.lookup(weight))
        expertFraction[name.getValue()] = fraction;
}

FailureOr<FunctionCost>
ModelWalker::walk(func::FuncOp func, DenseMap<Value, StringAttr> params,
                  int depth) {
  if (!onStack.insert(func).second)
    return func.emitError("recursive call to '")
           << func.getSymName() << "' cannot be analysed";
  FunctionCost total;
  WalkResult result = func.walk([&](Operation *op) -> WalkResult {
    if (auto get = dyn_cast<GetParamOp>(op)) {
      params[get.getResult()] = get.getNameAttr().getAttr();
      return WalkResult::advance();
    }
    if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      for (Value table : {embedding.getTable(), embedding.getPositionTable()})
        if (table)
          if (StringAttr name = params.lookup(table))
            embeddingTables.insert(name.getValue());
      if (stats.tokensPerStep == 0)
        stats.tokensPerStep =
            embedding.getTokens().getType().getNumElements();
    }
    if (auto ffn = dyn_cast<ExpertFFNOp>(op))
      noteExpertWeights(ffn, params);

    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal()) {
        call.emitError("cannot analyse a call to '")
            << call.getCalleeAttr() << "', which has no body in this module";
        return WalkResult::interrupt();
      }
      DenseMap<Value, StringAttr> calleeParams;
      for (auto [arg, operand] :
           llvm::zip_equal(callee.getArguments(), call.getOperands()))
        if (StringAttr name = params.lookup(operand))
          calleeParams[arg] = name;
      FailureOr<FunctionCost> cost = walk(callee, calleeParams, depth + 1);
      if (failed(cost))
        return WalkResult::interrupt();
      total.matmulFlops += cost->matmulFlops;
      total.otherFlops += cost->otherFlops;
      total.activationBytes += cost->activationBytes;
      if (depth == 0) {
        // A call from the step function is one layer.
        ++stats.layers;
        stats.layerForwardMatmulFlops += cost->matmulFlops;
        auto [it, inserted] =
            layerIndex.try_emplace(callee.getSymName(), stats.layerKinds.size());
        if (inserted)
          stats.layerKinds.push_back({callee.getSymName().str(), 0,
                                      cost->matmulFlops, cost->otherFlops,
                                      cost->activationBytes});
        ++stats.layerKinds[it->second].calls;
      }
      return WalkResult::advance();
    }

    OpCost cost = getForwardCost(op);
    if (depth > 0 && isa<AttentionOp>(op))
      stats.layerAttentionMatmulFlops += cost.matmulFlops;
    total.matmulFlops += cost.matmulFlops;
    total.otherFlops += cost.otherFlops;
    if (op->getDialect() && isa<BraidDialect>(op->getDialect()) &&
        !isa<GetParamOp>(op)) {
      total.activationBytes += cost.savedBytes;
      for (Value result : op->getResults())
        if (auto shaped = dyn_cast<ShapedType>(result.getType()))
          total.activationBytes +=
              shaped.getNumElements() * getElementBytes(shaped);
    }
    return WalkResult::advance();
  });
  onStack.erase(func);
  if (result.wasInterrupted())
    return failure();
  return total;
}

FailureOr<ModelStats> mlir::braid::computeModelStats(ModuleOp module,
                                                     func::FuncOp step) {

  ModelStats stats;
  ModelWalker walker(module, stats);
  FailureOr<FunctionCost> cost = walker.walk(step, DenseMap<Value, StringAttr>(), /*depth=*/0);
  if (failed(cost))
    return failure();
  if (stats.tokensPerStep == 0)
    return step.emitError("the step function has no braid.embedding, so the "
                          "number of tokens per step is unknown");
  stats.forwardMatmulFlops = cost->matmulFlops;
  stats.forwardOtherFlops = cost->otherFlops;

  for (ParamOp param : module.getOps<ParamOp>()) {
    RankedTensorType type = param.getTensorType();
    int64_t size = type.getNumElements();
    stats.parameters += size;
    stats.parameterBytes += size * getElementBytes(type);
    auto expert = walker.expertFraction.find(param.getSymName());
    stats.activeParameters +=
        expert == walker.expertFraction.end() ? size : size * expert->second;
    if (walker.embeddingTables.contains(param.getSymName()))
      stats.embeddingParameters += size;
  }
  return stats;
}
