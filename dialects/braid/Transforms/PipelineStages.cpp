//===- PipelineStages.cpp - the --braid-pipeline-stages pass --------------===//
//
// Decides which model chunk every op of the step belongs to and records it
// on the op (`braid.stage`), so that later passes (autodiff, which carries
// the stamp to the backward ops, and the pipeline pass, which cuts the step
// along the stamps) need no analysis of their own. Layers are the unit of
// assignment; everything else follows the data: an op belongs to the latest
// chunk among those that produce its operands, and an op computed from
// parameters and inputs alone (a parameter read, the embedding) to the chunk
// that uses it, cloned when several chunks do.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/EntryPass.h"
#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/Pipelining.h"

#include "braid/Support/Debug.h"
#include "dialects/braid/Analysis/PipelineSchedule.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/EntryPoints.h"
#include "dialects/braid/IR/BraidOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "braid-pipeline-stages"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDPIPELINESTAGESPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

/// The layout the model's layer calls give with their `braid.stage`
/// attributes (layers per chunk), none when no call has one, or failure with
/// a located error when they are partial, out of range, decreasing or leave
/// a chunk empty.
static FailureOr<SmallVector<int64_t>>
layoutFromAttributes(ArrayRef<func::CallOp> calls, int64_t chunks) {
  SmallVector<int64_t> counts(chunks, 0);
  int64_t given = 0, last = 0;
  for (func::CallOp call : calls) {
    auto attr = call->getAttrOfType<IntegerAttr>(kStageAttrName);
    if (!attr)
      continue;
    ++given;
    int64_t stage = attr.getInt();
    if (stage < 0 || stage >= chunks)
      return call.emitError("layer stage ")
             << stage << " is not one of the " << chunks << " model chunks";
    if (stage < last)
      return call.emitError("layer stage ")
             << stage << " follows a layer of stage " << last
             << ": stages must be contiguous runs of layers in order";
    last = stage;
    ++counts[stage];
  }
  if (given == 0)
    return SmallVector<int64_t>();
  if (given != static_cast<int64_t>(calls.size()))
    for (func::CallOp call : calls)
      if (!call->hasAttr(kStageAttrName))
        return call.emitError("this layer has no braid.stage while others "
                              "do: give every layer its stage, or none");
  for (auto [stage, n] : llvm::enumerate(counts))
    if (n == 0)
      return func::CallOp(calls.front()).emitError("no layer is assigned to model chunk ")
             << stage << " of " << chunks;
  return counts;
}

namespace {
/// Stamps the step's ops with chunks, given the chunk of each layer call.
class Stamper {
public:
  Stamper(func::FuncOp step, int64_t lastChunk)
      : step(step), lastChunk(lastChunk) {}

  void run(const llvm::DenseMap<Operation *, int64_t> &layerChunk);

private:
  func::FuncOp step;
  int64_t lastChunk;

  static std::optional<int64_t> stampOf(Operation *op) {
    if (auto attr = op->getAttrOfType<IntegerAttr>(kStageAttrName))
      return attr.getInt();
    return std::nullopt;
  }
  static void stamp(Operation *op, int64_t chunk) {
    op->setAttr(kStageAttrName,
                IntegerAttr::get(IntegerType::get(op->getContext(), 64), chunk));
  }
};
} // namespace

void Stamper::run(const llvm::DenseMap<Operation *, int64_t> &layerChunk) {
  Block &body = step.getBody().front();
  // Forward: layers have their chunk; an op with an operand from a chunk
  // goes with the latest such chunk; the rest float for now.
  llvm::SmallPtrSet<Operation *, 32> floating;
  for (Operation &op : body.without_terminator()) {
    op.removeAttr(kStageAttrName);
    if (auto it = layerChunk.find(&op); it != layerChunk.end()) {
      stamp(&op, it->second);
      continue;
    }
    std::optional<int64_t> chunk;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp(); def && !floating.count(def))
        chunk = std::max(chunk.value_or(0), *stampOf(def));
    if (chunk)
      stamp(&op, *chunk);
    else
      floating.insert(&op);
  }
  // Backward: a floating op goes with its users, one copy per chunk using
  // it; unused ones (and the loss, returned) with the last chunk.
  SmallVector<Operation *> order;
  for (Operation &op : body.without_terminator())
    if (floating.count(&op))
      order.push_back(&op);
  for (Operation *op : llvm::reverse(order)) {
    std::map<int64_t, SmallVector<OpOperand *>> uses;
    for (Value result : op->getResults())
      for (OpOperand &use : result.getUses()) {
        Operation *user = use.getOwner();
        int64_t chunk = isa<func::ReturnOp>(user) ? lastChunk : *stampOf(user);
        uses[chunk].push_back(&use);
      }
    if (uses.empty()) {
      stamp(op, lastChunk);
      continue;
    }
    // The first chunk keeps the op; the others get clones.
    auto it = uses.begin();
    stamp(op, it->first);
    LLVM_DEBUG(if (uses.size() > 1) llvm::dbgs()
               << "'" << op->getName() << "' at " << op->getLoc()
               << " reads only parameters and inputs and " << uses.size()
               << " chunks use it: chunk " << it->first
               << " computes it, each other one a copy\n");
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    for (++it; it != uses.end(); ++it) {
      Operation *clone = b.clone(*op);
      stamp(clone, it->first);
      for (OpOperand *use : it->second)
        use->set(clone->getResult(
            cast<OpResult>(use->get()).getResultNumber()));
    }
  }
}

void mlir::braid::stampChunks(
    func::FuncOp f, const llvm::DenseMap<Operation *, int64_t> &layerChunk,
    int64_t lastChunk) {
  Stamper(f, lastChunk).run(layerChunk);
}

namespace mlir::braid {
namespace {
struct BraidPipelineStagesPass
    : TrainStepPass<BraidPipelineStagesPass,
                    impl::BraidPipelineStagesPassBase> {
  using EntryPass::EntryPass;

  LogicalResult runOnEntry(ModuleOp module, func::FuncOp step) {
    if (failed(checkOneBlock(step, getArgument())))
      return failure();
    Location loc = step.getLoc();
    if (pp < 1 || virtualStages < 1)
      return emitError(loc, "--braid-pipeline-stages: pp and virtual-stages "
                            "must be at least 1, found ")
             << static_cast<int64_t>(pp) << " and "
             << static_cast<int64_t>(virtualStages);
    int64_t chunks = pp * virtualStages;
    FailureOr<SmallVector<int64_t>> costs = computeLayerCosts(module, step);
    if (failed(costs))
      return failure();
    SmallVector<func::CallOp> calls;
    for (auto call : step.getBody().front().getOps<func::CallOp>())
      calls.push_back(call);
    assert(calls.size() == costs->size() && "a cost per layer call");

    SmallVector<int64_t> counts(layout.begin(), layout.end());
    if (counts.empty()) {
      FailureOr<SmallVector<int64_t>> given =
          layoutFromAttributes(calls, chunks);
      if (failed(given))
        return failure();
      counts = *given;
    }
    FailureOr<SmallVector<LayerChunk>> split =
        counts.empty() ? balanceLayers(*costs, chunks, loc)
                       : layoutLayers(*costs, counts, chunks, loc);
    if (failed(split))
      return failure();

    LLVM_DEBUG({
      llvm::dbgs() << "layer costs (forward FLOPs, the embedding with the "
                      "first layer, the head and loss with the last):";
      for (int64_t cost : *costs)
        llvm::dbgs() << " " << cost;
      llvm::dbgs() << "\n"
                   << chunks << " model chunks ("
                   << static_cast<int64_t>(pp) << " ranks x "
                   << static_cast<int64_t>(virtualStages) << ") "
                   << (!layout.empty() ? "as the layout option gives them"
                       : !counts.empty()
                           ? "as the layers' braid.stage attributes give them"
                           : "balanced: the largest chunk's cost is the "
                             "smallest possible, earlier chunks taking as "
                             "many layers as that allows")
                   << "\n";
      for (auto [chunk, c] : llvm::enumerate(*split))
        llvm::dbgs() << "  chunk " << chunk << " (rank "
                     << static_cast<int64_t>(chunk) % static_cast<int64_t>(pp)
                     << "): layers " << c.begin << ".." << c.end - 1
                     << ", cost " << c.cost << "\n";
    });
    llvm::DenseMap<Operation *, int64_t> layerChunk;
    SmallVector<int64_t> layers;
    for (auto [chunk, c] : llvm::enumerate(*split)) {
      layers.push_back(c.end - c.begin);
      for (int64_t i = c.begin; i < c.end; ++i)
        layerChunk[calls[i]] = chunk;
    }
    stampChunks(step, layerChunk, chunks - 1);
    MLIRContext *context = &getContext();
    Builder b(context);
    step->setAttr(kPipelineAttrName,
                  b.getDictionaryAttr({
                      b.getNamedAttr("pp", b.getI64IntegerAttr(pp)),
                      b.getNamedAttr("virtual_stages",
                                     b.getI64IntegerAttr(virtualStages)),
                      b.getNamedAttr("layers", b.getDenseI64ArrayAttr(layers)),
                  }));
    return success();
  }
};
} // namespace
} // namespace mlir::braid
