//===- TrainingPipeline.cpp - --braid-training-pipeline -------------------===//
//
// The order matters: the step is partitioned over the grid first, so that
// everything after it works on one rank's program (and autodiff derives
// the backward collectives from the forward ones); expert FFNs are expanded before anything differentiates
// or emits them; element types change before autodiff so that the backward
// pass is built at the precision the forward runs in (and, with master
// weights, flows back to f32 through the converts); the optimizer consumes
// the gradients autodiff makes the step return.
//
//===----------------------------------------------------------------------===//

#include "braid/Pipelines.h"

#include "dialects/braid/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"

namespace braid {
using namespace mlir;

LogicalResult buildTrainingPipeline(OpPassManager &pm,
                                    const TrainingPipelineOptions &options,
                                    std::string *error) {
  bool training = options.optimizer != "none";
  mlir::braid::BraidPartitionPassOptions partition;
  partition.gridOption = options.grid;
  partition.entry = options.entry;
  partition.plan = options.plan;
  partition.zero = options.zero;
  partition.sequenceParallel = options.sequenceParallel;
  partition.cpAttention = options.cpAttention;
  pm.addPass(mlir::braid::createBraidPartitionPass(partition));
  pm.addNestedPass<func::FuncOp>(mlir::braid::createBraidExpandExpertFFNPass());
  // Other element types (bf16, f16) are checked by the conversion pass,
  // which reports what it cannot do.
  if (options.dtype != "f32") {
    mlir::braid::BraidConvertElementTypePassOptions convert;
    convert.to = options.dtype;
    convert.masterWeights = training;
    pm.addPass(mlir::braid::createBraidConvertElementTypePass(convert));
  }
  if (!training)
    return success();
  mlir::braid::BraidAutodiffPassOptions autodiff;
  autodiff.entry = options.entry;
  autodiff.recompute = options.recompute;
  pm.addPass(mlir::braid::createBraidAutodiffPass(autodiff));
  mlir::braid::BraidOptimizerPassOptions optimizer;
  optimizer.entry = options.entry;
  optimizer.kind = options.optimizer;
  optimizer.lr = options.lr;
  optimizer.weightDecay = options.weightDecay;
  optimizer.maxNorm = options.maxNorm;
  optimizer.eps = options.eps;
  pm.addPass(mlir::braid::createBraidOptimizerPass(optimizer));
  return success();
}

void registerTrainingPipeline() {
  PassPipelineRegistration<TrainingPipelineOptions>(
      "braid-training-pipeline",
      "Lower a model to the training (or forward) step braid-translate "
      "emits",
      [](OpPassManager &pm, const TrainingPipelineOptions &options) {
        (void)buildTrainingPipeline(pm, options);
      });
}

} // namespace braid
