//===- braid-run.cpp - compile a braid model and run it -------------------===//
//
//   braid-run model.mlir [--steps N] [--seed S] [--dtype f32|bf16]
//             [--dump DIR] [--trace FILE] [--backend cpu|cuda]
//             [--grid AXIS=SIZE,...] [--plan megatron|data] [--zero 0|1|2|3]
//             [--sequence-parallel] [--microbatches N]
//             [--schedule gpipe|1f1b|interleaved|zb-h1] [--virtual-stages V]
//             [--pp-layout L,...] [--verify] [--verify-tolerance T]
//             [--checkpoint-dir D] [--checkpoint-every K] [--resume D]
//
// Parses the model (keeping its SSA names as value names for dumps and
// traces), lowers it (expert FFNs expanded, optional bf16 storage), emits
// the program as C++ (braid-translate --braid-to-cpp), builds it against the
// runtime with the host compiler (or nvcc for --backend cuda), caches the
// binary by the hash of everything that builds it, and runs it: the program
// prints the loss of every step and its planned and measured peak memory.
//
// --grid dp=2,tp=2 partitions the program for that device grid (--plan,
// --zero and --sequence-parallel say how; TrainingPipelineOptions) and runs it
// on grid-size ranks: with more than one, the program links the MPI runtime
// (braid_runtime_main_mpi; for --backend cuda braid_runtime_main_cuda_mpi,
// GPU ranks over NCCL) and braid-run starts it with mpirun from PATH
// (-np N, and for Open MPI --oversubscribe, plus --allow-run-as-root as root).
// With several ranks, --trace FILE is one file per rank: rank R writes FILE
// with ".rank<R>" before its extension (trace.json -> trace.rank1.json).
//
// --microbatches N splits the batch of a step into N micro-batches whose
// gradients are accumulated before the optimizer step (with or without a
// grid). A pp axis in the grid (--grid pp=2,dp=2,tp=2; axes in any order, pp
// placed outermost, the others as written, the last on neighbouring ranks) pipelines
// the model over its coordinates (--schedule, --virtual-stages and
// --pp-layout say how; the passes check their values). The lowering then
// names one step function per pp coordinate (braid::kPipelineEntriesAttr;
// one when only micro-batched): each is emitted and built as its own program
// (with several, --emit-cpp F writes stage S to F with ".stage<S>" before its
// extension), and the programs start together under one mpirun, MPMD:
// program S on the K = ranks / stages ranks [S*K, (S+1)*K), those whose pp
// coordinate is S.
//
// The work is lib/Driver's (include/braid/Driver): lowering and building in
// Compile.h (the binary cache in Build.h), running in Launch.h (mpirun when
// several ranks), comparing in Verify.h; Run.h strings them together.
//
// --checkpoint-dir, --checkpoint-every and --resume go to the programs
// (runtime/src/checkpoint.h: the format): the state is written every K steps
// and after the last into D/step-<K>, and a run resumes from D's latest
// checkpoint written on any grid; --steps N is then the last step. With
// --verify the 1-rank run resumes from the same checkpoint (and writes
// none), and the steps judged are those after it.
//
// --verify (needs --grid) also builds the unpartitioned, unpipelined program
// (no grid, one micro-batch, the same other options), runs both with the same
// --seed and --steps, --dump and --dump-first-step (into temporary
// directories; the partitioned run into --dump DIR when given, the 1-rank run
// into DIR/reference), and prints
//   verify: loss <max over the steps of |a-b| / |b|>
//   verify: gradients <max over step1.grad.<param> of max|a-b| / max|b|> (<worst>)
//   verify: parameters <max over step1.updated.* of the same, against step 1
//           of the optimizer replayed on the partitioned run's gradients> (<worst>)
//   verify: copies on other ranks <the worst other rank's copy of a tensor
//           above, or pipeline mirror, or loss> (<tensor> on rank <R>)
//   verify: drift after N steps (not judged) <the last step's updated.*>
//   verify: bounds at bf16: loss L, gradients G (...)   with --dtype bf16/f16
// (each tensor measured against its largest value, at least 1e-3 of the
// largest of its set, the worst named with the rank of its worst element;
// Verify.h says why step 1 is what is judged, and how a reduced precision's
// bounds come from a third run, the 1-rank program at f32, into DIR/reference-f32)
//   verify: PASS            or            verify: FAIL (tolerance T)
// with b the 1-rank value; FAIL exits 1 (and keeps the temporary
// dumps, whose directories it names).
//
//===----------------------------------------------------------------------===//

#include "../../lib/Planner/PlanFile.h"
#include "braid/Driver/Run.h"
#include "braid/InitAllDialects.h"
#include "braid/Pipelines.h"
#include "test/lib/Transforms/InjectFault.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
namespace cl = llvm::cl;

/// braid-run's own options: --help lists these, not the hundreds of LLVM's
/// that linking MLIR registers.
static cl::OptionCategory runCategory("braid-run options");

static cl::opt<std::string> inputFile(cl::Positional, cl::cat(runCategory), cl::desc("<model.mlir>"),
                                      cl::init("-"));
static cl::opt<int> steps("steps", cl::cat(runCategory),
                          cl::desc("The last step to run (1 to N; after --resume, from the "
                                   "checkpoint's step on)"),
                          cl::init(1));
static cl::opt<uint64_t> seed("seed", cl::cat(runCategory), cl::desc("Initialization seed"),
                              cl::init(0));
static cl::opt<std::string> dtype("dtype", cl::cat(runCategory),
                                  cl::desc("Float storage: f32 (as written) "
                                           "or bf16"),
                                  cl::init("f32"));
static cl::opt<std::string> dumpDir("dump", cl::cat(runCategory),
                                    cl::desc("Write every named tensor as "
                                             ".npy into this directory"));
static cl::opt<std::string>
    traceFile("trace", cl::cat(runCategory),
              cl::desc("Write a Perfetto/Chrome trace (with several ranks, one "
                       "per rank: trace.rank1.json for trace.json)"));
static cl::opt<std::string> backend("backend", cl::cat(runCategory), cl::desc("cpu or cuda"),
                                    cl::init("cpu"));
static cl::opt<std::string> entry("entry", cl::cat(runCategory), cl::desc("Step function"),
                                  cl::init("step"));
static cl::opt<std::string> emitCpp("emit-cpp", cl::cat(runCategory),
                                    cl::desc("Also write the generated C++ "
                                             "source to this file"));
static cl::opt<bool> scheduleOverlap(
    "schedule-overlap", cl::cat(runCategory),
    cl::desc("Start transfers early and wait for them late "
             "(--braid-schedule-overlap); off keeps the lowering's order"),
    cl::init(true));
static cl::opt<double> bucketMb(
    "bucket-mb", cl::cat(runCategory),
    cl::desc("With --schedule-overlap, MiB a bucket of gradient reductions closes at "
             "(PyTorch DDP's bucket_cap_mb; 0: no buckets)"),
    cl::init(25.0));
static cl::opt<double> firstBucketMb(
    "first-bucket-mb", cl::cat(runCategory),
    cl::desc("With --schedule-overlap, MiB the first bucket of a function closes at"),
    cl::init(1.0));
static cl::opt<bool> deferParamGather(
    "defer-param-gather", cl::cat(runCategory),
    cl::desc("With --schedule-overlap, gather ZeRO-1/2's updated parameters in the next "
             "step, before each one's first read (Megatron's overlap-param-gather)"),
    cl::init(true));
static cl::opt<std::string> scheduleHardware(
    "schedule-hardware", cl::cat(runCategory),
    cl::desc("With --schedule-overlap, the hardware its list scheduler times compute "
             "and links on: a name (lib/CostModel/hardware) or a .json file; under "
             "BRAID_LINK, its links time the transfers"),
    cl::init("h100-sxm"));
static cl::opt<std::string> collectiveMatmul(
    "collective-matmul", cl::cat(runCategory),
    cl::desc("With --grid, an all-gather before matrix products as a ring of shifts and "
             "product chunks (--braid-collective-matmul): auto (the cost model "
             "chooses), always or never"),
    cl::init("auto"));
static cl::opt<bool> rollRepeats(
    "roll-repeats", cl::cat(runCategory),
    cl::desc("Print repeated statement groups of the generated program "
             "(layers, micro-batches) as loops over tables; off prints every "
             "statement"),
    cl::init(true));
static cl::opt<bool> compileOnly("compile-only", cl::cat(runCategory),
                                 cl::desc("Build the program, do not run it"));
static cl::opt<std::string>
    optimizer("optimizer", cl::cat(runCategory),
              cl::desc("Training: adamw or sgd; none runs the forward pass "
                       "only"),
              cl::init("adamw"));
static cl::opt<double> lr("lr", cl::cat(runCategory), cl::desc("Learning rate"), cl::init(1e-3));
static cl::opt<double> weightDecay("weight-decay", cl::cat(runCategory),
                                   cl::desc("Decoupled weight decay"),
                                   cl::init(0.1));
static cl::opt<double> adamEps("eps", cl::cat(runCategory), cl::desc("AdamW epsilon"),
                               cl::init(1e-8));
static cl::opt<double> maxNorm("max-norm", cl::cat(runCategory),
                               cl::desc("Clip gradients to this global norm "
                                        "(<= 0: no clipping)"),
                               cl::init(1.0));
static cl::opt<std::string>
    recompute("recompute", cl::cat(runCategory),
              cl::desc("Activation recompute: none, selective or full"),
              cl::init("none"));
static cl::opt<bool> quiet("quiet", cl::cat(runCategory), cl::desc("Only print the losses and "
                                             "peaks"));
static cl::opt<std::string>
    gridSpec("grid", cl::cat(runCategory),
             cl::desc("Partition the program for this device grid, "
                      "AXIS=SIZE,... over pp, dp, ep, cp and tp in any order "
                      "(pp placed outermost; the last axis on neighbouring "
                      "ranks) "
                      "(e.g. pp=2,dp=2,tp=2), and "
                      "run it on that many ranks (mpirun when more than one)"));
static cl::opt<std::string>
    plan("plan", cl::cat(runCategory),
         cl::desc("With --grid, how unannotated weights are sharded: megatron "
                  "(tensor, vocabulary and expert parallel) or data "
                  "(replicated)"),
         cl::init("megatron"));
static cl::opt<int> zeroStage("zero", cl::cat(runCategory),
                              cl::desc("With --grid, the ZeRO stage over dp: "
                                       "0, 1 (optimizer state), 2 (+ "
                                       "gradients) or 3 (+ parameters)"),
                              cl::init(0));
static cl::opt<std::string> cpAttention(
    "cp-attention", cl::cat(runCategory),
    cl::desc("Attention under a cp grid axis: allgather, ulysses or ring"),
    cl::init("allgather"));
static cl::opt<std::string> cpLayout(
    "cp-layout", cl::cat(runCategory),
    cl::desc("The sequence's cut over a cp grid axis: contiguous, zigzag "
             "(rank i holds chunks i and 2cp-1-i: balanced causal attention) "
             "or auto (zigzag where the model allows it)"),
    cl::init("auto"));
static cl::opt<bool> sequenceParallel(
    "sequence-parallel", cl::cat(runCategory),
    cl::desc("With --grid, shard norms and residuals over tp along the "
             "sequence"));
static cl::opt<int> microbatches(
    "microbatches", cl::cat(runCategory),
    cl::desc("Micro-batches per step: the batch is split into this many, "
             "whose gradients are accumulated before the optimizer step"),
    cl::init(1));
static cl::opt<std::string>
    schedule("schedule", cl::cat(runCategory),
             cl::desc("With a pp grid axis, the pipeline schedule: gpipe, "
                      "1f1b, interleaved or zb-h1"),
             cl::init("1f1b"));
static cl::opt<int>
    virtualStages("virtual-stages", cl::cat(runCategory),
                  cl::desc("With a pp grid axis, model chunks per pipeline "
                           "rank (--schedule interleaved)"),
                  cl::init(1));
static cl::opt<std::string>
    ppLayout("pp-layout", cl::cat(runCategory),
             cl::desc("With a pp grid axis, layers per model chunk, e.g. "
                      "7,8,8,7 (default: balanced by cost, or the layers' "
                      "braid.stage attributes)"));
/// --pp-layout, parsed (and checked) before any work.
static SmallVector<int64_t> layerCounts;
static cl::opt<bool> verifyRuns(
    "verify", cl::cat(runCategory),
    cl::desc("With --grid: also run the unpartitioned program on one rank "
             "(same seed and steps) and compare losses, gradients and updated "
             "parameters; exit 1 when they differ by more than "
             "--verify-tolerance (with --dtype bf16: bounds from bf16 "
             "rounding, measured against the 1-rank program at f32)"));
static cl::opt<double>
    verifyTolerance("verify-tolerance", cl::cat(runCategory),
                    cl::desc("Largest relative difference --verify accepts"),
                    cl::init(1e-5));

static cl::opt<std::string> checkpointDir(
    "checkpoint-dir", cl::cat(runCategory),
    cl::desc("Write checkpoints (parameters, optimizer state, step, seed) into this "
             "directory: after every --checkpoint-every steps and after the last"));
static cl::opt<int64_t> checkpointEvery(
    "checkpoint-every", cl::cat(runCategory),
    cl::desc("With --checkpoint-dir, steps between checkpoints (0: only after the last)"),
    cl::init(0));
static cl::opt<std::string> resumeFrom(
    "resume", cl::cat(runCategory),
    cl::desc("Continue from the latest checkpoint in this directory (or from this "
             "checkpoint), written on any grid; --steps is then the last step"));

static cl::opt<std::string> planFile(
    "plan-file", cl::cat(runCategory),
    cl::desc("Run the plan braid-plan --plan-file wrote: its grid, ZeRO stage, "
             "recompute, micro-batches, schedule, virtual stages and layout "
             "(the reduced plan on CPU ranks, the full one with --backend "
             "cuda)"));

static cl::opt<std::string> injectFault(
    "inject-fault", cl::cat(runCategory),
    cl::desc("Testing --verify: break the partitioned program in one known "
             "way before it is emitted (--braid-test-inject-fault kinds)"),
    cl::Hidden);

/// The training pipeline's options from braid-run's flags.
static void pipelineOptions(::braid::TrainingPipelineOptions &pipeline) {
  pipeline.entry = entry;
  pipeline.dtype = dtype;
  pipeline.optimizer = optimizer;
  pipeline.recompute = recompute;
  pipeline.lr = lr;
  pipeline.weightDecay = weightDecay;
  pipeline.maxNorm = maxNorm;
  pipeline.eps = adamEps;
  pipeline.scheduleOverlap = scheduleOverlap;
  pipeline.bucketMb = bucketMb;
  pipeline.firstBucketMb = firstBucketMb;
  pipeline.deferParamGather = deferParamGather;
  pipeline.scheduleHardware = scheduleHardware;
  pipeline.collectiveMatmul = collectiveMatmul.getValue();
  pipeline.grid = gridSpec.getValue();
  pipeline.plan = plan;
  pipeline.zero = zeroStage.getValue();
  pipeline.sequenceParallel = sequenceParallel;
  pipeline.cpAttention = cpAttention;
  pipeline.cpLayout = cpLayout;
  pipeline.microbatches = microbatches;
  pipeline.schedule = schedule;
  pipeline.virtualStages = virtualStages;
  pipeline.ppLayout = ArrayRef<int64_t>(layerCounts);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(argc, argv, "Braid: compile and run a model\n");
  using ::braid::driver::fail;

  // A plan file sets the plan's options; giving one of them as well would
  // leave which one runs unclear.
  if (!planFile.empty()) {
    for (cl::Option *opt : std::initializer_list<cl::Option *>{
             &gridSpec, &zeroStage, &recompute, &microbatches, &schedule, &virtualStages,
             &ppLayout, &sequenceParallel})
      if (opt->getNumOccurrences())
        return fail("--plan-file sets --" + opt->ArgStr + "; give one or the other");
    llvm::Expected<::braid::plan::RunFlags> flags =
        ::braid::plan::readPlanFile(planFile, backend == "cuda" ? "plan" : "reduced");
    if (!flags)
      return fail(llvm::toString(flags.takeError()));
    gridSpec.setValue(flags->grid);
    zeroStage.setValue(flags->zero);
    recompute.setValue(flags->recompute);
    microbatches.setValue(int(flags->microbatches));
    schedule.setValue(flags->schedule);
    virtualStages.setValue(int(flags->virtualStages));
    ppLayout.setValue(flags->ppLayout);
    sequenceParallel.setValue(flags->sequenceParallel);
    if (!flags->dtype.empty() && !dtype.getNumOccurrences())
      dtype.setValue(flags->dtype);
  }

  // What only the command line can get wrong; the driver checks the values.
  if (gridSpec.getNumOccurrences() && gridSpec.empty())
    return fail("--grid needs AXIS=SIZE[,AXIS=SIZE...]");
  if (checkpointEvery.getNumOccurrences() && checkpointDir.empty())
    return fail("--checkpoint-every needs --checkpoint-dir");
  if (!ppLayout.empty()) {
    SmallVector<StringRef> counts;
    StringRef(ppLayout).split(counts, ',');
    for (StringRef count : counts) {
      int64_t n;
      if (count.trim().getAsInteger(10, n) || n < 1)
        return fail("--pp-layout must list positive layer counts (e.g. 2,3), "
                    "found '" +
                    ppLayout + "'");
      layerCounts.push_back(n);
    }
  }
  ::braid::TrainingPipelineOptions pipeline;
  pipelineOptions(pipeline);
  ::braid::driver::RunOptions options;
  options.compile.backend = backend;
  options.compile.rollRepeats = rollRepeats;
  options.compile.emitCpp = emitCpp;
  options.compile.quiet = quiet;
  if (!injectFault.empty())
    options.compile.breakProgram = [](OpPassManager &pm) {
      pm.addPass(::braid::test::createInjectFaultPass(injectFault));
    };
  options.steps = steps;
  if (seed.getNumOccurrences())
    options.seed = seed;
  options.dumpDir = dumpDir;
  options.traceFile = traceFile;
  options.compileOnly = compileOnly;
  options.verify = verifyRuns;
  options.verifyTolerance = verifyTolerance;
  options.checkpointDir = checkpointDir;
  options.checkpointEvery = checkpointEvery;
  options.resumeFrom = resumeFrom;
  if (failed(::braid::driver::checkOptions(pipeline, options)))
    return 1;

  DialectRegistry registry;
  ::braid::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // A located message is enough for users of braid-run; the IR of the op in
  // error is for compiler developers (braid-opt prints it).
  context.printOpOnDiagnostic(false);

  std::string error;
  auto file = openInputFile(inputFile, &error);
  if (!file)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = ::braid::driver::parseModel(sourceMgr, &context);
  if (!module)
    return 1;
  return ::braid::driver::runModel(*module, pipeline, options);
}
