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
#include "dialects/dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

namespace braid {
using namespace mlir;
using mlir::braid::CollectiveMatmulMode;
using mlir::braid::OptimizerKind;
using mlir::braid::Precision;

// Each pass's options, set from the pipeline's that mean the same (the
// pass's others keep their defaults, which are the pipeline's too).

/// Whether the grid option names the axis `name` (the grid's other checks
/// are the partitioner's).
static bool hasGridAxis(StringRef gridOption, StringRef name) {
  std::string ignored;
  FailureOr<mlir::braid::Grid> grid = mlir::braid::Grid::parse(gridOption, ignored);
  return succeeded(grid) && grid->find(name);
}

static pass_options::Partition partitionOptions(const TrainingPipelineOptions &o) {
  pass_options::Partition partition;
  partition.gridOption = o.grid;
  partition.plan = o.plan;
  // Without the axis they shard over they do nothing (the pipeline's check
  // warns): the partitioner, which refuses sequence parallelism on a grid
  // without tp, is not asked.
  partition.zero = hasGridAxis(o.grid, "dp") ? o.zero.getValue() : 0;
  partition.sequenceParallel = o.sequenceParallel && hasGridAxis(o.grid, "tp");
  partition.cpAttention = o.cpAttention;
  partition.cpLayout = o.cpLayout;
  partition.recordLayouts = o.recordLayouts;
  partition.gatherLogits = o.gatherLogits;
  return partition;
}

static pass_options::Optimizer optimizerOptions(const TrainingPipelineOptions &o) {
  pass_options::Optimizer optimizer;
  optimizer.kind = o.optimizer;
  optimizer.lr = o.lr;
  optimizer.weightDecay = o.weightDecay;
  optimizer.maxNorm = o.maxNorm;
  optimizer.eps = o.eps;
  return optimizer;
}

static pass_options::ScheduleOverlap overlapOptions(const TrainingPipelineOptions &o) {
  pass_options::ScheduleOverlap overlap;
  overlap.bucketMb = o.bucketMb;
  overlap.firstBucketMb = o.firstBucketMb;
  overlap.deferParamGather = o.deferParamGather;
  overlap.hardware = o.scheduleHardware;
  overlap.link = o.scheduleLink;
  return overlap;
}

void buildDistLowering(OpPassManager &pm, const TrainingPipelineOptions &options) {
  pm.addPass(createConvertBraidToDistPass());
  if (options.collectiveMatmul != CollectiveMatmulMode::Never) {
    pass_options::CollectiveMatmul ring;
    ring.mode = options.collectiveMatmul;
    pm.addPass(mlir::dist::createBraidCollectiveMatmulPass(ring));
  }
  if (options.scheduleOverlap)
    pm.addPass(mlir::dist::createBraidScheduleOverlapPass(overlapOptions(options)));
}

/// The ranks of the grid's pp axis (1 without one; the grid's other checks
/// are the partitioner's).
static int64_t pipelineRanks(StringRef gridOption) {
  std::string ignored;
  FailureOr<mlir::braid::Grid> grid = mlir::braid::Grid::parse(gridOption, ignored);
  if (failed(grid))
    return 1;
  std::optional<int16_t> axis = grid->find("pp");
  return axis ? grid->sizes[*axis] : 1;
}

LogicalResult buildTrainingPipeline(OpPassManager &pm,
                                    const TrainingPipelineOptions &options,
                                    std::string *error) {
  OptionProblems problems =
      checkTrainingPipelineOptions(options, OptionSpelling::Keyword, /*useOnGrid=*/false);
  if (!problems.error.empty()) {
    if (error)
      *error = problems.error;
    return failure();
  }
  bool training = options.optimizer != OptimizerKind::None;
  int64_t pp = pipelineRanks(options.grid);
  bool pipelined = training && (pp > 1 || options.microbatches != 1);
  // Front ends' linalg and tensor ops become braid ops before anything
  // plans them (a module of braid ops passes through unchanged).
  pm.addPass(createRaiseLinalgToBraidPass());
  if (pipelined) {
    pass_options::Microbatch microbatch;
    microbatch.count = options.microbatches;
    pm.addPass(mlir::braid::createBraidMicrobatchPass(microbatch));
  }
  // Inference programs (--braid-derive-inference) are pipelined without a
  // backward: micro-batched before partitioning as the step is, cut into
  // stages after it (both leave a module without them unchanged).
  bool pipelinedInference = !training && (pp > 1 || options.microbatches != 1);
  if (pipelinedInference) {
    pass_options::MicrobatchInference microbatch;
    microbatch.count = options.microbatches;
    pm.addPass(mlir::braid::createBraidMicrobatchInferencePass(microbatch));
  }
  pm.addPass(mlir::braid::createBraidPartitionPass(partitionOptions(options)));
  pm.addNestedPass<func::FuncOp>(mlir::braid::createBraidExpandExpertFFNPass());
  if (options.dtype != Precision::F32) {
    mlir::braid::BraidConvertElementTypePassOptions convert;
    convert.to = options.dtype;
    convert.masterWeights = training;
    pm.addPass(mlir::braid::createBraidConvertElementTypePass(convert));
  }
  if (!training) {
    if (pipelinedInference) {
      pass_options::PipelineInference stages;
      stages.layout.assign(options.ppLayout.begin(), options.ppLayout.end());
      pm.addPass(mlir::braid::createBraidPipelineInferencePass(stages));
    }
    if (options.lowerToDist)
      buildDistLowering(pm, options);
    return success();
  }
  if (pipelined) {
    pass_options::PipelineStages stages;
    stages.pp = pp;
    stages.virtualStages = options.virtualStages;
    stages.layout.assign(options.ppLayout.begin(), options.ppLayout.end());
    pm.addPass(mlir::braid::createBraidPipelineStagesPass(stages));
  }
  pass_options::Autodiff autodiff;
  autodiff.recompute = options.recompute;
  pm.addPass(mlir::braid::createBraidAutodiffPass(autodiff));
  if (pipelined) {
    pass_options::Pipeline pipeline;
    pipeline.schedule = options.schedule;
    pm.addPass(mlir::braid::createBraidPipelinePass(pipeline));
  }
  pm.addPass(mlir::braid::createBraidOptimizerPass(optimizerOptions(options)));
  if (options.lowerToDist) {
    buildDistLowering(pm, options);
    // Pipeline stages run programs of their own: each group's collectives
    // must come in one order in all of them.
    if (pipelined)
      pm.addPass(mlir::dist::createDistCheckCollectiveOrderPass());
  }
  return success();
}

void registerTrainingPipeline() {
  // PassPipelineRegistration's, except that the options are checked as a
  // whole and a bad one fails the pipeline before the module is touched (a
  // pass would fail on the module, which braid-opt then prints whole).
  registerPassPipeline(
      "braid-training-pipeline",
      "Lower a model to the training (or forward) step braid-translate emits",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) -> LogicalResult {
        TrainingPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        OptionProblems problems =
            checkTrainingPipelineOptions(options, OptionSpelling::Keyword);
        for (const std::string &warning : problems.warnings)
          llvm::errs() << "warning: --braid-training-pipeline: " << warning << "\n";
        if (!problems.error.empty())
          return errorHandler("--braid-training-pipeline: " + problems.error);
        std::string error;
        if (failed(buildTrainingPipeline(pm, options, &error)))
          return errorHandler("--braid-training-pipeline: " + error);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> printOptions) {
        printOptions(TrainingPipelineOptions());
      });
}

} // namespace braid
