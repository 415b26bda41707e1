//===- MicrobatchInference.cpp - the --braid-microbatch-inference pass ----===//
//
// A pipeline of inference programs runs each program once per micro-batch of
// its sequences. As for training (--braid-microbatch), the programs are
// re-typed to one micro-batch rather than sliced inside; what is new here is
// the KV cache, which is state: each micro-batch's sequences get a cache of
// their own (split into one state per micro-batch after partitioning, by
// --braid-pipeline-inference), so the cache states shrink with the inputs.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/Pipelining.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#define DEBUG_TYPE "braid-microbatch-inference"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDMICROBATCHINFERENCEPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

/// The inference programs of `module` (prefill, decode, forward), in order.
static SmallVector<func::FuncOp> inferencePrograms(ModuleOp module) {
  SmallVector<func::FuncOp> programs;
  for (func::FuncOp entry : getEntries(module))
    if (getEntryKind(entry) != EntryKind::TrainStep)
      programs.push_back(entry);
  return programs;
}

/// Shrinks every state the programs read (their KV caches) to one
/// micro-batch's sequences: the declaration and each read.
static LogicalResult shrinkStates(ModuleOp module,
                                  ArrayRef<func::FuncOp> programs,
                                  int64_t count) {
  SymbolTable symbols(module);
  llvm::SmallPtrSet<Operation *, 8> shrunk;
  for (func::FuncOp program : programs) {
    WalkResult walk = program.walk([&](GetParamOp read) {
      auto state = symbols.lookup<StateOp>(read.getName());
      if (!state)
        return WalkResult::advance();
      auto type = cast<RankedTensorType>(state.getType());
      if (shrunk.insert(state).second) {
        FailureOr<RankedTensorType> local = shrinkLeading(type, count);
        if (failed(local)) {
          state.emitError("the sequences (")
              << (type.getRank() ? type.getDimSize(0) : 0) << ") of state @"
              << state.getSymName() << " are not a multiple of the " << count
              << " micro-batches";
          return WalkResult::interrupt();
        }
        state.setType(*local);
      }
      read.getResult().setType(state.getType());
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return success();
}

namespace mlir::braid {
namespace {
struct BraidMicrobatchInferencePass
    : impl::BraidMicrobatchInferencePassBase<BraidMicrobatchInferencePass> {
  using BraidMicrobatchInferencePassBase::BraidMicrobatchInferencePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (count < 1) {
      emitError(module.getLoc(), "--braid-microbatch-inference: count must be at least "
                       "1, found ")
          << static_cast<int64_t>(count);
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> programs = inferencePrograms(module);
    if (count == 1 || programs.empty())
      return;
    if (failed(shrinkStates(module, programs, count)))
      return signalPassFailure();
    for (func::FuncOp program : programs) {
      SmallVector<Type> inputs;
      for (BlockArgument arg : program.getArguments()) {
        auto type = cast<RankedTensorType>(arg.getType());
        FailureOr<RankedTensorType> local = shrinkLeading(type, count);
        if (failed(local)) {
          program.emitError("the sequences (")
              << (type.getRank() ? type.getDimSize(0) : 0) << ") of input #"
              << arg.getArgNumber() << " of @" << program.getSymName()
              << " are not a multiple of the " << static_cast<int64_t>(count)
              << " micro-batches";
          return signalPassFailure();
        }
        inputs.push_back(*local);
      }
      if (failed(microbatchFunction(module, program, inputs, count)))
        return signalPassFailure();
      program->setAttr(kMicrobatchesAttrName,
                       IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                        static_cast<int64_t>(count)));
    }
  }
};
} // namespace
} // namespace mlir::braid
