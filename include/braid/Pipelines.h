//===- Pipelines.h - Braid's registered pass pipelines ----------*- C++ -*-===//
//
// A pipeline is an options struct, a function that adds its passes to a pass
// manager, and its registration for braid-opt (`--braid-training-pipeline`).
// braid-run builds its pass manager with the same function, and takes the
// struct's options as its own flags (addToCommandLine), as the C API takes
// them in their textual form: each option is defined here once. An option
// the pipeline hands to a pass takes that pass's default (Passes.td), and a
// choice is one of BraidBase.td's enums, so that its keywords are the
// passes', the plan file's and braid-plan's.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_PIPELINES_H
#define BRAID_PIPELINES_H

#include "braid/Conversion/Passes.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/Transforms/Passes.h"
#include "dialects/dist/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace braid {

/// The options of the passes the pipeline runs. A value-initialized one
/// holds the pass's defaults, which are the pipeline's: each default is
/// written once, in Passes.td.
namespace pass_options {
using Partition = mlir::braid::BraidPartitionPassOptions;
using Autodiff = mlir::braid::BraidAutodiffPassOptions;
using Optimizer = mlir::braid::BraidOptimizerPassOptions;
using Microbatch = mlir::braid::BraidMicrobatchPassOptions;
using PipelineStages = mlir::braid::BraidPipelineStagesPassOptions;
using Pipeline = mlir::braid::BraidPipelinePassOptions;
using MicrobatchInference = mlir::braid::BraidMicrobatchInferencePassOptions;
using PipelineInference = mlir::braid::BraidPipelineInferencePassOptions;
using CollectiveMatmul = mlir::dist::BraidCollectiveMatmulPassOptions;
using ScheduleOverlap = mlir::dist::BraidScheduleOverlapPassOptions;
} // namespace pass_options

struct TrainingPipelineOptions
    : public mlir::PassPipelineOptions<TrainingPipelineOptions> {
  // The choices (dtype, optimizer, recompute, plan, ...) are BraidBase.td's
  // enums: each option lists its keywords in --help and refuses others.
  Option<mlir::braid::Precision> dtype{
      *this, "dtype",
      llvm::cl::desc("Float storage: f32 is the model as written; bf16 and "
                     "f16 are mixed precision, with f32 master weights when "
                     "training"),
      llvm::cl::init(mlir::braid::Precision::F32)};
  Option<mlir::braid::OptimizerKind> optimizer{
      *this, "optimizer",
      llvm::cl::desc("The update rule; none keeps the forward step only"),
      llvm::cl::init(pass_options::Optimizer().kind)};
  Option<mlir::braid::Recompute> recompute{
      *this, "recompute", llvm::cl::desc("Activation recompute"),
      llvm::cl::init(pass_options::Autodiff().recompute)};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(pass_options::Optimizer().lr)};
  Option<double> weightDecay{
      *this, "weight-decay", llvm::cl::desc("Decoupled weight decay"),
      llvm::cl::init(pass_options::Optimizer().weightDecay)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW epsilon"),
                     llvm::cl::init(pass_options::Optimizer().eps)};
  Option<double> maxNorm{*this, "max-norm",
                         llvm::cl::desc("Global-norm clipping (<= 0: off)"),
                         llvm::cl::init(pass_options::Optimizer().maxNorm)};
  // SPMD partitioning (empty grid: one rank, nothing partitioned).
  Option<std::string> grid{
      *this, "grid",
      llvm::cl::desc("Device grid as AXIS=SIZE,... over pp, dp, ep, cp and tp in "
                     "any order (pp placed outermost; the last axis on "
                     "neighbouring ranks), e.g. pp=2,dp=2,tp=2; empty: one rank"),
      llvm::cl::value_desc("axis=size,..."),
      llvm::cl::init(pass_options::Partition().gridOption)};
  Option<mlir::braid::ShardPlan> plan{
      *this, "plan",
      llvm::cl::desc("How unannotated weights are sharded: megatron (tensor "
                     "parallel over tp, vocabulary parallel, experts over "
                     "ep) or data (replicated)"),
      llvm::cl::init(pass_options::Partition().plan)};
  Option<int> zero{*this, "zero",
                   llvm::cl::desc("ZeRO stage over dp: 0, 1 (optimizer "
                                  "state), 2 (+ gradients), 3 (+ parameters)"),
                   llvm::cl::init(pass_options::Partition().zero)};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("Shard norms and residuals over tp along the sequence"),
      llvm::cl::init(pass_options::Partition().sequenceParallel)};
  Option<mlir::braid::CpAttention> cpAttention{
      *this, "cp-attention", llvm::cl::desc("Attention under a cp axis"),
      llvm::cl::init(pass_options::Partition().cpAttention)};
  Option<mlir::braid::CpLayout> cpLayout{
      *this, "cp-layout", llvm::cl::desc("The sequence's cut over cp"),
      llvm::cl::init(pass_options::Partition().cpLayout)};
  // Pipeline parallelism (a pp axis in the grid) and micro-batching.
  Option<int> microbatches{
      *this, "microbatches",
      llvm::cl::desc("Micro-batches per step: the batch is split into this "
                     "many, whose gradients are accumulated before the "
                     "optimizer step"),
      llvm::cl::init(pass_options::Microbatch().count)};
  Option<mlir::braid::ScheduleKind> schedule{
      *this, "schedule", llvm::cl::desc("Pipeline schedule"),
      llvm::cl::init(pass_options::Pipeline().schedule)};
  Option<int> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Model chunks per pipeline rank (interleaved 1F1B)"),
      llvm::cl::init(pass_options::PipelineStages().virtualStages)};
  ListOption<int64_t> ppLayout{
      *this, "pp-layout",
      llvm::cl::desc("Layers per model chunk, e.g. 7,8,8,7 (empty: balanced "
                     "by cost, or the layers' braid.stage attributes)"),
      llvm::cl::value_desc("layers,...")};
  // The per-rank program's transfers as dist ops (--convert-braid-to-dist),
  // what the emitter takes. Off, the pipeline stops at the partitioned braid
  // and shard ops (for tools that rewrite those first).
  Option<bool> lowerToDist{
      *this, "lower-to-dist",
      llvm::cl::desc("Lower every transfer to dist ops at the end"),
      llvm::cl::init(true)};
  // After the lowering: an all-gather feeding matrix products as a ring of
  // shifts and product chunks (--braid-collective-matmul).
  Option<mlir::braid::CollectiveMatmulMode> collectiveMatmul{
      *this, "collective-matmul",
      llvm::cl::desc("All-gathers before matrix products as rings of shifts "
                     "and product chunks (auto: where the cost model "
                     "predicts them faster)"),
      llvm::cl::init(pass_options::CollectiveMatmul().mode)};
  // After the lowering: transfers started early and waited for late
  // (--braid-schedule-overlap).
  Option<bool> scheduleOverlap{
      *this, "schedule-overlap",
      llvm::cl::desc("Start transfers early and wait for them late "
                     "(--braid-schedule-overlap)"),
      llvm::cl::init(true)};
  // The scheduler's buckets of reductions (PyTorch DDP's bucket_cap_mb and
  // first bucket).
  Option<double> bucketMb{
      *this, "bucket-mb",
      llvm::cl::desc("MiB a bucket of gradient reductions closes at (0: no buckets)"),
      llvm::cl::init(pass_options::ScheduleOverlap().bucketMb)};
  Option<double> firstBucketMb{
      *this, "first-bucket-mb",
      llvm::cl::desc("MiB the first bucket of a function closes at"),
      llvm::cl::init(pass_options::ScheduleOverlap().firstBucketMb)};
  // ZeRO-1/2's gathers of updated parameters in the next step (Megatron's
  // overlap-param-gather).
  Option<bool> deferParamGather{
      *this, "defer-param-gather",
      llvm::cl::desc("Gather ZeRO-1/2's updated parameters in the next step, "
                     "before each one's first read"),
      llvm::cl::init(pass_options::ScheduleOverlap().deferParamGather)};
  // The overlap scheduler's timing model: the hardware whose compute and
  // links it times, and for CPU ranks under the link emulator the links
  // (braid-run passes BRAID_LINK).
  Option<std::string> scheduleHardware{
      *this, "schedule-hardware",
      llvm::cl::desc("Hardware the overlap scheduler times ops on: a name "
                     "(lib/CostModel/hardware) or a .json file"),
      llvm::cl::init(pass_options::ScheduleOverlap().hardware)};
  // Where each split or partial value lies in its global tensor, recorded
  // on its op (braid.result_layouts) so that dumps of activations assemble
  // the global tensor; the driver (braid-run, the C API) turns it on, the
  // IR stays plain without it.
  Option<bool> recordLayouts{
      *this, "record-layouts",
      llvm::cl::desc("Record each partitioned value's place in its global "
                     "tensor, for global dumps of activations"),
      llvm::cl::init(pass_options::Partition().recordLayouts)};
  // Whether the inference programs gather their vocabulary-split logits at
  // the return; off, each rank returns its block for a sampler that never
  // gathers them (runtime/src/sampling_parallel.h).
  Option<bool> gatherLogits{
      *this, "gather-logits",
      llvm::cl::desc("Gather the inference programs' vocabulary-split logits "
                     "at the return (false: each rank returns its block of "
                     "the vocabulary)"),
      llvm::cl::init(pass_options::Partition().gatherLogits)};
  Option<std::string> scheduleLink{
      *this, "schedule-link",
      llvm::cl::desc("Links per grid axis the overlap scheduler times transfers "
                     "on instead, as BRAID_LINK gives them (tp:2us,20GB/s;dp:...)"),
      llvm::cl::init(pass_options::ScheduleOverlap().link)};

  /// Makes these options flags of the tool's top-level command line
  /// (braid-run's --grid, --zero, ...: the options are defined once, here),
  /// each in the category `categoryOf` gives for its name; one it gives none
  /// stays the pipeline's. Each flag's help ends with its default, as the
  /// pipeline prints it. Call before llvm::cl::ParseCommandLineOptions on an
  /// object that outlives it; its parseFromString then knows only the
  /// options left to it.
  void addToCommandLine(
      llvm::function_ref<llvm::cl::OptionCategory *(llvm::StringRef name)>
          categoryOf);
};

/// How a message names one of the pipeline's options: as the flag of a tool
/// (braid-run's `--zero 5`) or as the keyword of the pipeline's text
/// (`zero=5`: the C API's and Python's options, braid-opt's
/// --braid-training-pipeline="zero=5").
enum class OptionSpelling { Keyword, Flag };

/// `--zero` or `zero`.
std::string spellOption(llvm::StringRef name, OptionSpelling spelling);
/// `--zero 5` or `zero=5`.
std::string spellOption(llvm::StringRef name, const llvm::Twine &value,
                        OptionSpelling spelling);

/// What checkTrainingPipelineOptions found.
struct OptionProblems {
  /// The first value outside its documented range, or an option given that
  /// cannot act on this grid (a pipeline schedule without a pipeline): the
  /// run stops. Empty when there is none.
  std::string error;
  /// Options that have no effect on this grid but change nothing the user
  /// would otherwise get (ZeRO without a dp axis): the run goes on.
  llvm::SmallVector<std::string> warnings;
};

/// Checks `options` before any pass runs, in the user's terms: each message
/// names the option as `spelling` does, its value and what is accepted, where
/// the pass that takes it would name itself and its own option.
/// Without `useOnGrid`, only the values themselves are checked (ranges, the
/// grid's syntax, the timing model's hardware and links), not what the grid
/// makes of them: buildTrainingPipeline's check, which also sees the
/// driver's derived options (the 1-rank reference of --verify keeps the
/// schedule the user gave for the pipelined run).
OptionProblems checkTrainingPipelineOptions(const TrainingPipelineOptions &options,
                                            OptionSpelling spelling,
                                            bool useOnGrid = true);

/// The module attribute the pipeline pass leaves on a pipelined module: the
/// step function of each pipeline rank (an array of symbol references, index
/// = the rank's coordinate on the pp axis). braid-translate emits each as its
/// own program (`--braid-entry`), and braid-run launches them side by side.
inline constexpr llvm::StringLiteral kPipelineEntriesAttr =
    mlir::braid::kPipelineEntriesAttrName;

/// Lowers a model description to the step braid-translate emits: expert FFNs
/// expanded, floats converted when asked, for training the backward pass and
/// the optimizer appended, and every transfer made a dist op. Fails with
/// `error` (options named as keywords: checkTrainingPipelineOptions) when an
/// option is out of range or cannot act on the grid; what depends on the
/// model is checked by the passes, which fail with a diagnostic when run.
mlir::LogicalResult buildTrainingPipeline(mlir::OpPassManager &pm,
                                          const TrainingPipelineOptions &options,
                                          std::string *error = nullptr);

/// The pipeline's last part, what `lower-to-dist` adds: every transfer a dist
/// op, collective matmuls, the overlap schedule. The driver runs it after the
/// passes that break a program on purpose (braid-run's --inject-fault).
void buildDistLowering(mlir::OpPassManager &pm, const TrainingPipelineOptions &options);

void registerTrainingPipeline();

} // namespace braid

#endif // BRAID_PIPELINES_H
