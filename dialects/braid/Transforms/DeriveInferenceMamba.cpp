//===- DeriveInferenceMamba.cpp - Mamba layers in inference programs ------===//
//
// A Mamba mixer is a recurrence: a decode step needs, per sequence, the
// last K-1 inputs of the causal convolution and the selective scan's state
// after the sequence's last row. --braid-derive-inference keeps both as
// persistent states (`cache.layers.<n>.conv`, `.ssm`) beside the KV cache,
// and replaces each braid.conv1d / braid.selective_scan of prefill and
// decode by its step op, which starts from the state (from zero at a
// sequence's position 0), computes the new rows and leaves the state taken
// at the sequence's last real row, so that a batch of prompts of different
// lengths carries each one's own state, not its padding's.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/DeriveInferenceMamba.h"

#include "dialects/braid/IR/BraidOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::braid;

bool mlir::braid::carriesMambaState(Operation *op) {
  return isa<Conv1dOp, SelectiveScanOp>(op);
}

bool mlir::braid::reachesOp(func::FuncOp f, SymbolTable &symbols,
                            llvm::function_ref<bool(Operation *)> matches) {
  bool found = false;
  f.walk([&](Operation *op) {
    if (matches(op))
      found = true;
    else if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
          callee && callee != f)
        found |= reachesOp(callee, symbols, matches);
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}

bool mlir::braid::hasMambaState(func::FuncOp f, SymbolTable &symbols) {
  // Before or after its ops became steps (a callee is threaded first).
  return reachesOp(f, symbols, [](Operation *op) {
    return isa<Conv1dOp, SelectiveScanOp, ConvStepOp, ScanStepOp>(op);
  });
}

std::pair<std::string, RankedTensorType>
mlir::braid::mambaStateOf(Operation *op, int64_t batch) {
  if (auto conv = dyn_cast<Conv1dOp>(op)) {
    RankedTensorType x = conv.getInput().getType();
    int64_t kernel = conv.getWeight().getType().getDimSize(1);
    return {"conv", x.clone({batch, kernel - 1, x.getDimSize(2)})};
  }
  auto scan = cast<SelectiveScanOp>(op);
  RankedTensorType x = scan.getInput().getType();
  int64_t state = scan.getA().getType().getDimSize(1);
  // The recurrence runs in f32 whatever the operands' type.
  return {"ssm",
          RankedTensorType::get({batch, x.getDimSize(2), state},
                                Float32Type::get(op->getContext()))};
}

void mlir::braid::replaceWithStep(Operation *op, Value state, Value positions,
                                  Value lastRows, Value slots) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value rows;
  if (auto conv = dyn_cast<Conv1dOp>(op)) {
    rows = ConvStepOp::create(b, loc, conv.getInput().getType(), state.getType(), state,
                              conv.getInput(), conv.getWeight(), conv.getBias(),
                              positions, lastRows, slots)
               .getResult();
  } else {
    auto scan = cast<SelectiveScanOp>(op);
    rows = ScanStepOp::create(b, loc, scan.getInput().getType(), state.getType(),
                              state, scan.getInput(), scan.getDelta(),
                              scan.getA(), scan.getB(), scan.getC(),
                              scan.getD(), positions, lastRows, slots,
                              scan.getDeltaSoftplus())
               .getResult();
  }
  op->getResult(0).replaceAllUsesWith(rows);
  op->erase();
}
