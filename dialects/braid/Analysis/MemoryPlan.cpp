//===- MemoryPlan.cpp - static arena layout of a braid program ------------===//

#include "dialects/braid/Analysis/MemoryPlan.h"

#include "dialects/braid/Analysis/FramePlan.h"
#include "dialects/braid/Analysis/PersistentEffects.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::braid;

namespace {
/// Plans each function of a program once, after the functions it calls
/// (FramePlan.h), so that a call can reserve its callee's frame.
class MemoryPlanner {
public:
  MemoryPlanner(ModuleOp module, ProgramPlan &plan)
      : symbols(module), plan(plan) {}

  /// Plans `func` after every function it calls.
  LogicalResult planRecursively(func::FuncOp func);

private:
  SymbolTable symbols;
  ProgramPlan &plan;
  llvm::DenseSet<Operation *> onStack;
  PersistentEffects effects{symbols};
};
} // namespace

LogicalResult MemoryPlanner::planRecursively(func::FuncOp func) {
  if (plan.functions.count(func))
    return success();
  if (!onStack.insert(func).second)
    return func.emitError("recursive call to '")
           << func.getSymName() << "' cannot be planned";
  WalkResult walk = func.walk([&](func::CallOp call) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal()) {
      call.emitError("cannot plan a call to '")
          << call.getCalleeAttr() << "', which has no body in this module";
      return WalkResult::interrupt();
    }
    return failed(planRecursively(callee)) ? WalkResult::interrupt()
                                           : WalkResult::advance();
  });
  onStack.erase(func);
  if (walk.wasInterrupted())
    return failure();
  FailureOr<std::unique_ptr<FunctionPlan>> frame =
      planFrame(func, plan, symbols, effects, plan.persistentOffsets);
  if (failed(frame))
    return failure();
  plan.functions[func] = std::move(*frame);
  return success();
}

std::optional<int64_t> ProgramPlan::offsetOf(StringRef name) const {
  auto it = persistentOffsets.find(name);
  if (it == persistentOffsets.end())
    return std::nullopt;
  return it->second;
}

namespace {
/// Checks what a plan needs of its entry (a body; a training step's one
/// result, its loss; a finish function with a body) and sets the plan's
/// kind and finish function.
LogicalResult checkEntry(ModuleOp module, ProgramPlan &plan) {
  if (!plan.entry || plan.entry.isExternal())
    return module.emitError("no entry function with a body to plan");
  plan.kind = getEntryKind(plan.entry).value_or(EntryKind::TrainStep);
  FunctionType type = plan.entry.getFunctionType();
  if (plan.kind == EntryKind::TrainStep) {
    auto lossType = type.getNumResults() == 1
                        ? dyn_cast<RankedTensorType>(type.getResult(0))
                        : RankedTensorType();
    if (!lossType || lossType.getRank() != 0 || !lossType.getElementType().isF32())
      return plan.entry.emitError("the step function must return one "
                                  "tensor<f32> (the loss), found ")
             << type;
  }

  if (auto name = plan.entry->getAttrOfType<FlatSymbolRefAttr>(kFinishAttrName)) {
    plan.finish = module.lookupSymbol<func::FuncOp>(name);
    if (!plan.finish || plan.finish.isExternal())
      return plan.entry.emitError("no finish function ")
             << name << " with a body in this module";
  }
  return success();
}

/// The parameters and state `entry` uses, itself or through its callees: a
/// pipeline rank's program holds only its own stages' (the module holds
/// every rank's).
llvm::StringSet<> persistentTensorsUsedBy(ModuleOp module, func::FuncOp entry) {
  llvm::StringSet<> used;
  SymbolTable symbols(module);
  SmallVector<func::FuncOp> work = {entry};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    func::FuncOp f = work.pop_back_val();
    if (!seen.insert(f).second)
      continue;
    f.walk([&](Operation *op) {
      if (auto call = dyn_cast<func::CallOp>(op))
        if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
          work.push_back(callee);
      // Parameters and states are named by an op's own attributes
      // (braid.get_param @p, an update's @p, @m, @v): no need to walk
      // nested attributes, which a step of tens of thousands of ops
      // would pay for on every pipeline stage's plan.
      for (NamedAttribute attr : op->getAttrs())
        if (auto ref = dyn_cast<FlatSymbolRefAttr>(attr.getValue()))
          used.insert(ref.getValue());
    });
  }
  return used;
}

/// Lays out the arena's persistent part: the parameters and state the
/// entry uses, in declaration order, then its inputs and its outputs.
LogicalResult layOutPersistent(ModuleOp module, ProgramPlan &plan) {
  llvm::StringSet<> used = persistentTensorsUsedBy(module, plan.entry);
  int64_t offset = 0;
  auto place = [&](SmallVector<PersistentTensor> &list, StringRef name,
                   RankedTensorType type) {
    list.push_back({name.str(), type, offset});
    offset += alignBuffer(getTensorBytes(type));
  };
  for (ParamOp param : module.getOps<ParamOp>())
    if (used.contains(param.getSymName()))
      place(plan.params, param.getSymName(), param.getTensorType());
  for (StateOp state : module.getOps<StateOp>())
    if (used.contains(state.getSymName()))
      place(plan.states, state.getSymName(), state.getTensorType());
  for (BlockArgument arg : plan.entry.getArguments()) {
    auto argType = dyn_cast<RankedTensorType>(arg.getType());
    if (!argType || !argType.hasStaticShape())
      return plan.entry.emitError("step argument #")
             << arg.getArgNumber() << " must be a static tensor, found "
             << arg.getType();
    place(plan.inputs, "", argType);
  }
  for (auto [index, result] : llvm::enumerate(plan.entry.getFunctionType().getResults())) {
    auto resultType = dyn_cast<RankedTensorType>(result);
    if (!resultType || !resultType.hasStaticShape())
      return plan.entry.emitError("result #")
             << index << " of an entry point must be a static tensor, found "
             << result;
    place(plan.outputs, "", resultType);
  }
  plan.persistentBytes = offset;
  for (const SmallVector<PersistentTensor> *list : {&plan.params, &plan.states})
    for (const PersistentTensor &tensor : *list)
      plan.persistentOffsets.try_emplace(tensor.name, tensor.offset);
  return success();
}
} // namespace

FailureOr<ProgramPlan> mlir::braid::planProgram(ModuleOp module,
                                                func::FuncOp entry,
                                                PlanDetail detail) {
  ProgramPlan plan;
  plan.entry = entry;
  if (failed(checkEntry(module, plan)) || failed(layOutPersistent(module, plan)))
    return failure();

  plan.detail = detail;
  if (detail == PlanDetail::Persistent)
    return plan;
  MemoryPlanner planner(module, plan);
  if (failed(planner.planRecursively(plan.entry)))
    return failure();
  int64_t frame = plan.get(plan.entry).frameBytes;
  if (plan.finish) {
    if (failed(planner.planRecursively(plan.finish)))
      return failure();
    frame = std::max(frame, plan.get(plan.finish).frameBytes);
  }
  plan.arenaBytes = plan.persistentBytes + frame;
  return plan;
}

FailureOr<int64_t> mlir::braid::peakArenaBytes(ModuleOp module,
                                               PlanDetail detail) {
  SmallVector<func::FuncOp> programs = getPrograms(module);
  if (programs.empty())
    return module.emitError("no entry point to plan (a public func.func "
                            "marked braid.entry)");
  int64_t most = 0;
  for (func::FuncOp program : programs) {
    FailureOr<ProgramPlan> plan = planProgram(module, program, detail);
    if (failed(plan))
      return failure();
    most = std::max(most, plan->arenaBytes);
  }
  return most;
}
