//===- PrintMemoryPlan.cpp - the --braid-print-memory-plan pass -----------===//

#include "dialects/braid/Transforms/Passes.h"

#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDPRINTMEMORYPLANPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

/// The name a value is known by: its op's `loc("name")`, else `#<position>`.
static std::string nameOf(Value value, const FunctionPlan &fp) {
  if (auto result = dyn_cast<OpResult>(value)) {
    Operation *op = result.getOwner();
    std::string name = "#" + std::to_string(fp.position.lookup(op));
    if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
      name = loc.getName().str();
    if (op->getNumResults() > 1)
      name += "." + std::to_string(result.getResultNumber());
    return name;
  }
  return "arg" + std::to_string(cast<BlockArgument>(value).getArgNumber());
}

namespace {
struct BraidPrintMemoryPlanPass
    : braid::impl::BraidPrintMemoryPlanPassBase<BraidPrintMemoryPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const char *flag = "--braid-print-memory-plan";
    FailureOr<func::FuncOp> program =
        this->program.empty() ? getProgram(module, pipelineRank, flag)
                              : getProgramNamed(module, this->program, flag);
    if (failed(program))
      return signalPassFailure();
    FailureOr<ProgramPlan> plan = planProgram(module, *program);
    if (failed(plan))
      return signalPassFailure();
    llvm::raw_ostream &os = llvm::outs();
    os << "arena_bytes: " << plan->arenaBytes << "\n";
    os << "persistent_bytes: " << plan->persistentBytes << "\n";
    // A pipeline rank's step: how many micro-batches' activations its
    // schedule keeps alive at once (the plan above holds them).
    if (auto live = plan->entry->getAttrOfType<IntegerAttr>(
            kPeakLiveMicrobatchesAttrName))
      os << "peak_live_microbatches: " << live.getInt() << "\n";
    for (const PersistentTensor &p : plan->params)
      os << "param @" << p.name << " offset " << p.offset << " bytes "
         << getTensorBytes(p.type) << "\n";
    for (const PersistentTensor &p : plan->states)
      os << "state @" << p.name << " offset " << p.offset << " bytes "
         << getTensorBytes(p.type) << "\n";
    for (auto [i, input] : llvm::enumerate(plan->inputs))
      os << "input #" << i << " offset " << input.offset << " bytes "
         << getTensorBytes(input.type) << "\n";
    // A training step's one output is its loss.
    if (plan->kind == EntryKind::TrainStep)
      os << "loss offset " << plan->outputs.front().offset << " bytes 4\n";
    else
      for (auto [i, output] : llvm::enumerate(plan->outputs))
        os << "output #" << i << " offset " << output.offset << " bytes "
           << getTensorBytes(output.type) << "\n";
    for (auto &[op, fp] : plan->functions) {
      os << "func @" << fp->func.getSymName() << " frame_bytes "
         << fp->frameBytes << "\n";
      for (const FrameBuffer &buffer : fp->buffers)
        os << "  buffer " << nameOf(buffer.value, *fp) << " offset "
           << buffer.offset << " bytes " << buffer.bytes << " live "
           << buffer.firstOp << ".." << buffer.lastOp << "\n";
      SmallVector<std::pair<Operation *, int64_t>> calls(
          fp->calleeFrame.begin(), fp->calleeFrame.end());
      llvm::sort(calls, [](auto &a, auto &b) {
        return a.first->isBeforeInBlock(b.first);
      });
      for (auto [call, offset] : calls)
        os << "  call @" << cast<func::CallOp>(call).getCallee() << " at "
           << fp->position.lookup(call) << " frame_offset " << offset << "\n";
    }
    os.flush();
    markAllAnalysesPreserved();
  }
};
} // namespace
