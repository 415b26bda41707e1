//===- Microbatch.cpp - the --braid-microbatch pass -----------------------===//
//
// Gradient accumulation and pipelining run the step once per micro-batch.
// Rather than slicing inside the step, the step itself is re-typed to one
// micro-batch: the leading dimension of its inputs shrinks by `count` and the
// new shapes are carried through every op (their shape inference) and every
// layer function it calls. What depends on the batch besides shapes is the
// loss's normalization, which stays the global batch's: each micro-batch's
// loss is its share, so that the shares (and their gradients) sum to the
// step's.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/EntryPass.h"
#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/Pipelining.h"
#include "dialects/braid/Transforms/Retype.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidDialect.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDMICROBATCHPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

FailureOr<RankedTensorType> mlir::braid::shrinkLeading(RankedTensorType type,
                                                       int64_t count) {
  if (type.getRank() == 0 || type.isDynamicDim(0) ||
      type.getDimSize(0) % count != 0)
    return failure();
  SmallVector<int64_t> shape(type.getShape());
  shape[0] /= count;
  return type.clone(shape);
}

namespace {
class Microbatcher {
public:
  Microbatcher(ModuleOp module, int64_t count)
      : symbols(module), count(count) {}

  /// Re-types `f` for arguments of `inputs` types and returns its results'
  /// (`call`: where it is called from, for errors).
  FailureOr<SmallVector<Type>> retype(func::FuncOp f, TypeRange inputs,
                                      Operation *call = nullptr);

private:
  /// The module's functions, hashed: one lookup per call, not a scan.
  SymbolTable symbols;
  int64_t count;
  /// Functions already re-typed, with the argument types they got.
  llvm::DenseMap<Operation *, SmallVector<Type>> done;

  LogicalResult retypeOp(Operation &op);
};
} // namespace

LogicalResult Microbatcher::retypeOp(Operation &op) {
  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal())
      return call.emitError("cannot micro-batch a call to ")
             << call.getCalleeAttr() << ", which has no body";
    FailureOr<SmallVector<Type>> results =
        retype(callee, call.getOperandTypes(), call);
    if (failed(results))
      return failure();
    for (auto [result, type] : llvm::zip(call.getResults(), *results))
      result.setType(type);
    return success();
  }
  // The loss: this micro-batch's share of the global mean.
  if (auto ce = dyn_cast<CrossEntropyOp>(op))
    if (!ce.getDenominator())
      ce.setDenominatorAttr(IntegerAttr::get(
          IntegerType::get(op.getContext(), 64),
          cast<RankedTensorType>(ce.getLabels().getType()).getNumElements() *
              count));
  // Views keep their element count: the batch is the leading factor of the
  // leading dimension on both sides (row-major, batch outermost).
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    auto type = cast<RankedTensorType>(reshape.getType());
    FailureOr<RankedTensorType> local = shrinkLeading(type, count);
    if (failed(local))
      return reshape.emitError("cannot micro-batch this reshape: its leading "
                               "dimension (")
             << type.getDimSize(0) << ") is not a multiple of " << count;
    reshape.getResult().setType(*local);
    return success();
  }
  // Capacity is per group of tokens (braid.dispatch): a micro-batch must
  // hold whole groups, and keeps their slots, so that micro-batching cannot
  // change which tokens are dropped.
  if (auto dispatch = dyn_cast<DispatchOp>(op)) {
    auto type = cast<RankedTensorType>(dispatch.getType());
    int64_t tokens = dispatch.getInput().getType().getDimSize(0);
    int64_t global = tokens * count;
    if (!dispatch.getGroupSize())
      return dispatch.emitError("cannot micro-batch this dispatch: its ")
             << global
             << " tokens form one capacity group (no group_size), which "
                "micro-batches would cut";
    int64_t groupSize = static_cast<int64_t>(*dispatch.getGroupSize());
    if (tokens % groupSize != 0)
      return dispatch.emitError("cannot micro-batch this dispatch: ")
             << count << " micro-batches of " << tokens
             << " tokens cut its capacity groups of " << groupSize;
    SmallVector<int64_t> shape(type.getShape());
    shape[1] = shape[1] / (global / groupSize) * (tokens / groupSize);
    dispatch.getResult().setType(type.clone(shape));
    return success();
  }
  if (op.getNumOperands() == 0)
    return success(); // parameter reads, constants: no batch
  return reinferResultTypes(op, "cannot micro-batch",
                            "cannot micro-batch this op: its result types do "
                            "not follow from the micro-batch's operands");
}

FailureOr<SmallVector<Type>> Microbatcher::retype(func::FuncOp f,
                                                  TypeRange inputs,
                                                  Operation *call) {
  if (auto it = done.find(f); it != done.end()) {
    if (TypeRange(it->second) != inputs)
      return (call ? call : f.getOperation())
                 ->emitError("cannot micro-batch @")
             << f.getSymName()
             << ": it is called with different shapes once micro-batched";
    return SmallVector<Type>(f.getResultTypes());
  }
  done[f] = SmallVector<Type>(inputs);
  if (failed(retypeFunction(
          f, inputs, "cannot micro-batch a function of several blocks",
          [&](Operation &op) { return retypeOp(op); })))
    return failure();
  return SmallVector<Type>(f.getResultTypes());
}

LogicalResult mlir::braid::microbatchFunction(ModuleOp module, func::FuncOp f,
                                              TypeRange inputs, int64_t count) {
  return Microbatcher(module, count).retype(f, inputs);
}

namespace mlir::braid {
namespace {
struct BraidMicrobatchPass
    : TrainStepPass<BraidMicrobatchPass, impl::BraidMicrobatchPassBase> {
  using EntryPass::EntryPass;

  LogicalResult runOnEntry(ModuleOp module, func::FuncOp step) {
    if (count < 1)
      return emitError(step.getLoc(),
                       "--braid-microbatch: count must be at least 1, found ")
             << static_cast<int64_t>(count);
    if (count == 1)
      return success();
    SmallVector<Type> inputs;
    for (BlockArgument arg : step.getArguments()) {
      FailureOr<RankedTensorType> local =
          shrinkLeading(cast<RankedTensorType>(arg.getType()), count);
      if (failed(local))
        return step.emitError("the batch (")
               << cast<RankedTensorType>(arg.getType()).getDimSize(0)
               << ") of input #" << arg.getArgNumber()
               << " is not a multiple of the " << static_cast<int64_t>(count)
               << " micro-batches";
      inputs.push_back(*local);
    }
    if (failed(Microbatcher(module, static_cast<int64_t>(count))
                   .retype(step, inputs)))
      return failure();
    step->setAttr(kMicrobatchesAttrName,
                  IntegerAttr::get(IntegerType::get(&getContext(), 64), count));
    return success();
  }
};
} // namespace
} // namespace mlir::braid
