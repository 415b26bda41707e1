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

#include "braid/Conversion/Passes.h"

#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"

namespace braid {
using namespace mlir;

void buildDistLowering(OpPassManager &pm, const TrainingPipelineOptions &options) {
  pm.addPass(createConvertBraidToDistPass());
  if (options.collectiveMatmul != "never") {
    BraidCollectiveMatmulPassOptions ring;
    ring.mode = options.collectiveMatmul;
    pm.addPass(createBraidCollectiveMatmulPass(ring));
  }
  if (options.scheduleOverlap) {
    BraidScheduleOverlapPassOptions overlap;
    overlap.bucketMb = options.bucketMb;
    overlap.firstBucketMb = options.firstBucketMb;
    overlap.deferParamGather = options.deferParamGather;
    overlap.hardware = options.scheduleHardware;
    overlap.link = options.scheduleLink;
    pm.addPass(createBraidScheduleOverlapPass(overlap));
  }
}

LogicalResult buildTrainingPipeline(OpPassManager &pm,
                                    const TrainingPipelineOptions &options,
                                    std::string *error) {
  bool training = options.optimizer != "none";
  // Pipeline ranks (the grid's pp axis); the grid's other checks are the
  // partitioner's.
  int64_t pp = 1;
  {
    std::string ignored;
    if (FailureOr<mlir::braid::Grid> grid =
            mlir::braid::Grid::parse(options.grid, ignored);
        succeeded(grid))
      if (std::optional<int16_t> axis = grid->find("pp"))
        pp = grid->sizes[*axis];
  }
  bool pipelined = training && (pp > 1 || options.microbatches != 1);
  // Front ends' linalg and tensor ops become braid ops before anything
  // plans them (a module of braid ops passes through unchanged).
  pm.addPass(createRaiseLinalgToBraidPass());
  if (pipelined) {
    mlir::braid::BraidMicrobatchPassOptions microbatch;
    microbatch.count = options.microbatches;
    pm.addPass(mlir::braid::createBraidMicrobatchPass(microbatch));
  }
  mlir::braid::BraidPartitionPassOptions partition;
  partition.gridOption = options.grid;
  partition.plan = options.plan;
  partition.zero = options.zero;
  partition.sequenceParallel = options.sequenceParallel;
  partition.cpAttention = options.cpAttention;
  partition.cpLayout = options.cpLayout;
  partition.recordLayouts = options.recordLayouts;
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
  auto lower = [&] { buildDistLowering(pm, options); };
  if (!training) {
    if (options.lowerToDist)
      lower();
    return success();
  }
  mlir::braid::BraidAutodiffPassOptions autodiff;
  autodiff.recompute = options.recompute;
  if (pipelined) {
    mlir::braid::BraidPipelineStagesPassOptions stages;
    stages.pp = pp;
    stages.virtualStages = options.virtualStages;
    stages.layout.assign(options.ppLayout.begin(), options.ppLayout.end());
    pm.addPass(mlir::braid::createBraidPipelineStagesPass(stages));
  }
  pm.addPass(mlir::braid::createBraidAutodiffPass(autodiff));
  if (pipelined) {
    mlir::braid::BraidPipelinePassOptions pipeline;
    pipeline.schedule = options.schedule;
    pm.addPass(mlir::braid::createBraidPipelinePass(pipeline));
  }
  mlir::braid::BraidOptimizerPassOptions optimizer;
  optimizer.kind = options.optimizer;
  optimizer.lr = options.lr;
  optimizer.weightDecay = options.weightDecay;
  optimizer.maxNorm = options.maxNorm;
  optimizer.eps = options.eps;
  pm.addPass(mlir::braid::createBraidOptimizerPass(optimizer));
  if (options.lowerToDist) {
    lower();
    // Pipeline stages run programs of their own: each group's collectives
    // must come in one order in all of them.
    if (pipelined)
      pm.addPass(createDistCheckCollectiveOrderPass());
  }
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
