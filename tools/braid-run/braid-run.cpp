//===- braid-run.cpp - compile a braid model and run it -------------------===//
//
//   braid-run model.mlir [--steps N] [--seed S] [--dtype f32|bf16]
//             [--dump DIR] [--trace FILE] [--backend cpu|cuda]
//             [--grid AXIS=SIZE,...] [--plan megatron|data] [--zero 0|1|2|3]
//             [--sequence-parallel] [--microbatches N]
//             [--schedule gpipe|1f1b|interleaved|zb-h1] [--virtual-stages V]
//             [--pp-layout L,...] [--verify] [--verify-tolerance T]
//             [--checkpoint-dir D] [--checkpoint-every K] [--resume D]
//             [--cpu-threads N]
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
// Building is Build.cpp (cached by hash), running Launch.cpp (mpirun when
// several ranks), comparing Verify.cpp.
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
#include "Build.h"
#include "Launch.h"
#include "NpyReader.h"
#include "Verify.h"

#include "test/lib/Transforms/InjectFault.h"

#include "braid/Conversion/Passes.h"
#include "braid/InitAllDialects.h"
#include "dialects/braid/IR/BraidOps.h"
#include "braid/Pipelines.h"
#include "braid/Target/Cpp.h"
#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/Sharding.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/AsmParser/AsmParserState.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>

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
// Not --threads: LLVM's libraries register that name.
static cl::opt<int> threads(
    "cpu-threads", cl::cat(runCategory),
    cl::desc("CPU threads of each rank's kernels (passed to the programs as "
             "--threads; default 0: the machine's cores shared by the ranks "
             "started on it, at least 1)"),
    cl::init(0));
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

/// Names every op after the SSA name of its first result in the source, so
/// that dumps and traces use the names the model was written with; the
/// original file location stays inside the NameLoc for diagnostics.
static void nameOpsFromSource(ModuleOp module, const AsmParserState &state) {
  module.walk([&](Operation *op) {
    const AsmParserState::OperationDefinition *def = state.getOpDef(op);
    if (!def || def->resultGroups.empty())
      return;
    llvm::SMRange range = def->resultGroups.front().definition.loc;
    StringRef name(range.Start.getPointer(),
                   range.End.getPointer() - range.Start.getPointer());
    name = name.ltrim("%");
    name = name.take_until([](char c) { return c == '#' || c == ':'; });
    if (!name.empty() && !llvm::all_of(name, llvm::isDigit))
      op->setLoc(NameLoc::get(StringAttr::get(op->getContext(), name),
                              op->getLoc()));
  });
}

static int fail(const Twine &message) {
  llvm::errs() << "braid-run: " << message << "\n";
  return 1;
}

/// The number of ranks of a grid "dp=2,tp=2" (names [A-Za-z_][A-Za-z0-9_]*,
/// distinct, sizes >= 1: the runtime's rules); fails with a message. Which
/// axes the partitioner accepts is the pipeline's business.
static FailureOr<int64_t> gridRanks(StringRef spec) {
  auto bad = [&](const Twine &why) -> FailureOr<int64_t> {
    fail("bad --grid '" + spec + "': " + why);
    return failure();
  };
  SmallVector<StringRef> parts;
  spec.split(parts, ',');
  llvm::StringSet<> seen;
  int64_t ranks = 1;
  for (StringRef part : parts) {
    auto [name, size] = part.split('=');
    name = name.trim();
    size = size.trim();
    bool validName =
        !name.empty() && (llvm::isAlpha(name[0]) || name[0] == '_') &&
        llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
    if (!part.contains('=') || !validName)
      return bad("'" + part.trim() + "' is not AXIS=SIZE");
    int64_t n;
    if (size.getAsInteger(10, n) || n < 1)
      return bad("axis " + name + " needs a positive size, got '" + size + "'");
    if (!seen.insert(name).second)
      return bad("axis " + name + " appears twice");
    ranks *= n;
    if (ranks > (int64_t(1) << 24))
      return bad("too many ranks");
  }
  return ranks;
}

/// The grid as the partitioner lays it out (Grid::parse: axes in any order,
/// pp placed outermost, the others as written), so that the runtime's --grid
/// names the program's grid. A grid the partitioner refuses stays as written:
/// the pipeline reports it.
static std::string partitionerGrid(StringRef spec) {
  std::string error;
  FailureOr<mlir::braid::Grid> grid = mlir::braid::Grid::parse(spec, error);
  if (failed(grid))
    return spec.str();
  std::string out;
  for (auto [name, size] : llvm::zip(grid->names, grid->sizes))
    out += (out.empty() ? "" : ",") + name + "=" + std::to_string(size);
  return out;
}

/// FILE with ".stage<S>" before its extension (prog.cpp -> prog.stage0.cpp),
/// as the runtime names per-rank files (a leading dot starts no extension).
static std::string stageFile(StringRef file, size_t stage) {
  std::string suffix = ".stage" + std::to_string(stage);
  StringRef name = llvm::sys::path::filename(file);
  size_t dot = name.rfind('.');
  if (dot == StringRef::npos || dot == 0)
    return (file + suffix).str();
  size_t at = file.size() - name.size() + dot;
  return (file.take_front(at) + suffix + file.drop_front(at)).str();
}

/// The step functions to build as programs: one per pp coordinate when the
/// lowering pipelined or micro-batched the step (kPipelineEntriesAttr; the
/// partitioner placed pp outermost, so the ranks of a stage are contiguous),
/// else --entry alone.
static FailureOr<SmallVector<std::string>> programEntries(ModuleOp module) {
  Attribute attr = module->getAttr(::braid::kPipelineEntriesAttr);
  if (!attr)
    return SmallVector<std::string>{entry};
  SmallVector<std::string> names;
  if (auto entries = dyn_cast<ArrayAttr>(attr))
    for (Attribute e : entries)
      if (auto ref = dyn_cast<FlatSymbolRefAttr>(e))
        names.push_back(ref.getValue().str());
  if (names.empty() || names.size() != cast<ArrayAttr>(attr).size()) {
    module.emitError() << "expected " << ::braid::kPipelineEntriesAttr
                       << " to be a non-empty array of symbol references, "
                          "found "
                       << attr;
    return failure();
  }
  int64_t pp = 1;
  if (std::optional<mlir::braid::Grid> grid = mlir::braid::Grid::of(module))
    if (std::optional<int16_t> axis = grid->find("pp"))
      pp = grid->sizes[*axis];
  if (int64_t(names.size()) != pp) {
    fail("the pipelined program has " + Twine(names.size()) +
         " stages, not one per coordinate of its grid's pp axis (" +
         Twine(pp) + ")");
    return failure();
  }
  return names;
}

/// Lowers `module` (`reference`: the --verify reference, unpartitioned and
/// unpipelined) with float storage `elementType`, emits its programs as C++ (also into --emit-cpp when
/// `emit`) and builds them for `ranks` ranks (cached); returns the binaries,
/// one per pipeline stage (one when not pipelined).
static FailureOr<SmallVector<std::string>>
compile(ModuleOp module, bool reference, int64_t ranks, bool emit,
        StringRef elementType) {
  PassManager pm(module.getContext());
  ::braid::TrainingPipelineOptions pipeline;
  pipeline.entry = entry;
  pipeline.dtype = elementType.str();
  pipeline.optimizer = optimizer;
  pipeline.recompute = recompute;
  pipeline.lr = lr;
  pipeline.weightDecay = weightDecay;
  pipeline.maxNorm = maxNorm;
  pipeline.eps = adamEps;
  // A fault is injected into the partitioned braid and shard ops, before
  // their transfers become dist ops.
  const bool inject = !reference && !injectFault.empty();
  pipeline.lowerToDist = !inject;
  pipeline.scheduleOverlap = scheduleOverlap;
  pipeline.bucketMb = bucketMb;
  pipeline.firstBucketMb = firstBucketMb;
  pipeline.deferParamGather = deferParamGather;
  pipeline.scheduleHardware = scheduleHardware;
  // The program is scheduled for the links it runs on.
  const char *links = std::getenv("BRAID_LINK");
  pipeline.scheduleLink = links && !reference ? links : "";
  pipeline.collectiveMatmul = collectiveMatmul.getValue();
  std::string grid = reference ? "" : gridSpec.getValue();
  pipeline.grid = grid;
  pipeline.plan = plan;
  // How a grid is used means nothing without one (the 1-rank reference).
  pipeline.zero = grid.empty() ? 0 : zeroStage.getValue();
  pipeline.sequenceParallel = !grid.empty() && sequenceParallel;
  pipeline.cpAttention = cpAttention;
  pipeline.cpLayout = cpLayout;
  // The reference takes the whole batch at once: micro-batches accumulate
  // the same gradients, so one micro-batch is what they are measured against.
  if (!reference) {
    pipeline.microbatches = microbatches;
    pipeline.schedule = schedule;
    pipeline.virtualStages = virtualStages;
    pipeline.ppLayout = ArrayRef<int64_t>(layerCounts);
  }
  std::string error;
  if (failed(::braid::buildTrainingPipeline(pm, pipeline, &error))) {
    fail(error.empty() ? "cannot build the pass pipeline" : error);
    return failure();
  }
  if (failed(pm.run(module)))
    return failure();
  if (inject) {
    PassManager broken(module.getContext());
    broken.addPass(::braid::test::createInjectFaultPass(injectFault));
    broken.addPass(::braid::createConvertBraidToDistPass());
    if (scheduleOverlap) {
      ::braid::BraidScheduleOverlapPassOptions overlap;
      overlap.entry = entry;
      overlap.bucketMb = bucketMb;
      overlap.firstBucketMb = firstBucketMb;
      overlap.deferParamGather = deferParamGather;
      overlap.hardware = pipeline.scheduleHardware;
      overlap.link = pipeline.scheduleLink;
      broken.addPass(::braid::createBraidScheduleOverlapPass(overlap));
    }
    if (failed(broken.run(module)))
      return failure();
  }

  FailureOr<SmallVector<std::string>> entries = programEntries(module);
  if (failed(entries))
    return failure();
  // One file per program when there are several (micro-batching alone
  // leaves one).
  const bool staged = entries->size() > 1;
  // Every source is emitted (and written) before any is built, so that
  // --emit-cpp shows all stages when one fails to build.
  SmallVector<std::string> sources;
  for (auto [stage, name] : llvm::enumerate(*entries)) {
    std::string &source = sources.emplace_back();
    llvm::raw_string_ostream os(source);
    ::braid::CppEmitOptions options;
    options.rollRepeats = rollRepeats;
    if (failed(::braid::emitProgramAsCpp(module, name, os, options)))
      return failure();
    if (emit && !emitCpp.empty()) {
      auto out = openOutputFile(
          staged ? stageFile(emitCpp, stage) : emitCpp.getValue(), &error);
      if (!out) {
        fail(error);
        return failure();
      }
      out->os() << source;
      out->keep();
    }
  }
  // The stages' programs build concurrently, one host compiler per core:
  // GPT-3 175B on pp8 is eight builds of about two seconds each.
  SmallVector<FailureOr<std::string>> built(sources.size(), failure());
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
    for (auto [source, binary] : llvm::zip_equal(sources, built))
      pool.async([&, &source = source, &binary = binary] {
        binary = ::braid::run::buildProgram(source, backend, ranks > 1, quiet);
      });
    pool.wait();
  }
  SmallVector<std::string> binaries;
  for (FailureOr<std::string> &binary : built) {
    if (failed(binary))
      return failure();
    binaries.push_back(*binary);
  }
  return binaries;
}

/// How the lowered 1-rank program updates each parameter (what --verify
/// replays of step 1).
static std::vector<::braid::run::UpdateRule> updateRules(ModuleOp module) {
  std::vector<::braid::run::UpdateRule> rules;
  module.walk([&](Operation *op) {
    ::braid::run::UpdateRule rule;
    if (auto a = dyn_cast<mlir::braid::AdamWUpdateOp>(op)) {
      rule.param = a.getParam().str();
      rule.m = a.getM().str();
      rule.v = a.getV().str();
      rule.lr = a.getLr().convertToDouble();
      rule.beta1 = a.getBeta1().convertToDouble();
      rule.beta2 = a.getBeta2().convertToDouble();
      rule.eps = a.getEps().convertToDouble();
      rule.weightDecay = a.getWeightDecay().convertToDouble();
    } else if (auto sgd = dyn_cast<mlir::braid::SGDUpdateOp>(op)) {
      rule.adamw = false;
      rule.param = sgd.getParam().str();
      rule.lr = sgd.getLr().convertToDouble();
      rule.weightDecay = sgd.getWeightDecay().convertToDouble();
    } else {
      return;
    }
    rules.push_back(std::move(rule));
  });
  return rules;
}

/// The dump name of the logits the loss is computed from (the value
/// braid.cross_entropy reads, named in the source), or "".
static std::string lossLogits(ModuleOp module) {
  std::string name;
  module.walk([&](mlir::braid::CrossEntropyOp op) {
    if (Operation *def = op->getOperand(0).getDefiningOp())
      if (auto loc = dyn_cast<NameLoc>(def->getLoc()))
        name = loc.getName().str();
  });
  return name;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(argc, argv, "Braid: compile and run a model\n");

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

  // The options braid-run itself acts on, checked before any work.
  int64_t ranks = 1;
  if (gridSpec.getNumOccurrences() && gridSpec.empty())
    return fail("--grid needs AXIS=SIZE[,AXIS=SIZE...]");
  if (!gridSpec.empty()) {
    FailureOr<int64_t> n = gridRanks(gridSpec);
    if (failed(n))
      return 1;
    ranks = *n;
    gridSpec.setValue(partitionerGrid(gridSpec));
  }
  if (verifyRuns && gridSpec.empty() && microbatches == 1)
    return fail("--verify compares a partitioned or micro-batched run with "
                "the 1-rank run: it needs --grid or --microbatches");
  if (checkpointEvery < 0)
    return fail("--checkpoint-every must be at least 0, found " +
                Twine(checkpointEvery.getValue()));
  if (checkpointEvery.getNumOccurrences() && checkpointDir.empty())
    return fail("--checkpoint-every needs --checkpoint-dir");
  if (!(verifyTolerance >= 0) || !std::isfinite(verifyTolerance))
    return fail("--verify-tolerance must be a non-negative number");
  if (threads < 0)
    return fail("--cpu-threads must be at least 1 (or 0: cores / ranks), found " +
                Twine(threads.getValue()));
  if (zeroStage < 0 || zeroStage > 3)
    return fail("--zero must be 0, 1, 2 or 3, found " +
                Twine(zeroStage.getValue()));
  if (plan != "megatron" && plan != "data")
    return fail("--plan must be megatron or data, found '" + plan + "'");
  if (microbatches < 1)
    return fail("--microbatches must be at least 1, found " +
                Twine(microbatches.getValue()));
  if (virtualStages < 1)
    return fail("--virtual-stages must be at least 1, found " +
                Twine(virtualStages.getValue()));
  if (!llvm::is_contained({"gpipe", "1f1b", "interleaved", "zb-h1"},
                          StringRef(schedule)))
    return fail(
        "--schedule must be gpipe, 1f1b, interleaved or zb-h1, found '" +
        schedule + "'");
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

  Block block;
  AsmParserState state;
  ParserConfig config(&context);
  if (failed(parseAsmSourceFile(sourceMgr, &block, config, &state)))
    return 1;
  if (block.getOperations().size() != 1 ||
      !isa<ModuleOp>(block.getOperations().front()))
    return fail("expected one builtin.module in " + inputFile);
  OwningOpRef<ModuleOp> module(cast<ModuleOp>(&block.front()));
  module->getOperation()->remove();
  if (failed(verify(*module)))
    return 1;
  nameOpsFromSource(*module, state);
  // The 1-rank program --verify compares with: the same model, no grid.
  // At a reduced precision, also at f32: what rounding does to the model
  // gives the bounds (Verify.h).
  OwningOpRef<ModuleOp> reference, exact;
  const bool rounded = verifyRuns && dtype != "f32";
  std::string logits;
  bool routed = false;
  if (verifyRuns)
    reference = module->clone();
  if (rounded) {
    exact = module->clone();
    logits = lossLogits(*module);
    module->walk([&](mlir::braid::RouterOp) { routed = true; });
  }

  FailureOr<SmallVector<std::string>> binaries =
      compile(*module, /*reference=*/false, ranks, /*emit=*/true, dtype);
  if (failed(binaries))
    return 1;
  FailureOr<SmallVector<std::string>> referenceBinaries, exactBinaries;
  if (verifyRuns) {
    referenceBinaries = compile(*reference, /*reference=*/true, 1,
                                /*emit=*/false, dtype);
    if (failed(referenceBinaries))
      return 1;
  }
  if (rounded) {
    exactBinaries = compile(*exact, /*reference=*/true, 1, /*emit=*/false,
                            "f32");
    if (failed(exactBinaries))
      return 1;
  }
  if (compileOnly)
    return 0;

  SmallVector<std::string> runArgs = {"--steps", std::to_string(steps)};
  // A resumed run takes the checkpoint's seed unless one is given.
  if (seed.getNumOccurrences())
    runArgs.append({"--seed", std::to_string(seed)});
  if (quiet)
    runArgs.push_back("--quiet");
  if (threads > 0)
    runArgs.append({"--threads", std::to_string(threads)});
  if (!resumeFrom.empty())
    runArgs.append({"--resume", resumeFrom});
  SmallVector<std::string> referenceArgs = runArgs;
  // Only the run being verified writes checkpoints.
  if (!checkpointDir.empty())
    runArgs.append({"--checkpoint-dir", checkpointDir, "--checkpoint-every",
                    std::to_string(checkpointEvery)});
  if (!gridSpec.empty())
    runArgs.append({"--grid", gridSpec});
  if (!traceFile.empty())
    runArgs.append({"--trace", traceFile});
  if (!verifyRuns) {
    if (!dumpDir.empty())
      runArgs.append({"--dump", dumpDir});
    return ::braid::run::runPrograms(*binaries, ranks, gridSpec, runArgs);
  }

  // --verify: both runs dump; the partitioned one into --dump DIR when given
  // (the 1-rank one then into DIR/reference), else into temporary directories.
  std::string partitionedDump = dumpDir, referenceDump, exactDump;
  SmallVector<std::string> temporary;
  auto scratch = [&](std::string &dir, StringRef prefix) -> bool {
    llvm::SmallString<128> path;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory(prefix, path)) {
      fail("cannot create a temporary directory: " + ec.message());
      return false;
    }
    dir = path.str().str();
    temporary.push_back(dir);
    return true;
  };
  if (partitionedDump.empty()) {
    if (!scratch(partitionedDump, "braid-verify-grid") ||
        !scratch(referenceDump, "braid-verify-1rank") ||
        (rounded && !scratch(exactDump, "braid-verify-1rank-f32")))
      return 1;
  } else {
    referenceDump = partitionedDump + "/reference";
    exactDump = partitionedDump + "/reference-f32";
  }
  runArgs.append(
      {"--dump", partitionedDump, "--dump-first-step", "--check-replicas"});
  SmallVector<std::string> exactArgs = referenceArgs;
  referenceArgs.append({"--dump", referenceDump, "--dump-first-step"});
  exactArgs.append({"--dump", exactDump, "--dump-first-step"});

  ::braid::run::RunRecord partitioned{"", partitionedDump};
  ::braid::run::RunRecord single{"", referenceDump};
  if (int rc = ::braid::run::runCaptured(*binaries, ranks, gridSpec, runArgs,
                                         partitioned.stdoutText,
                                         /*echo=*/true))
    return rc;
  if (!quiet)
    llvm::errs() << "braid-run: verify: the unpartitioned program on 1 rank\n";
  if (int rc = ::braid::run::runCaptured(*referenceBinaries, 1, gridSpec,
                                         referenceArgs, single.stdoutText,
                                         /*echo=*/false)) {
    fail("verify: the 1-rank run failed");
    return rc;
  }
  ::braid::run::Bounds bounds =
      ::braid::run::Bounds::uniform(verifyTolerance);
  std::vector<::braid::run::UpdateRule> rules = updateRules(*reference);
  if (rounded) {
    if (!quiet)
      llvm::errs() << "braid-run: verify: the unpartitioned program on 1 "
                      "rank at f32\n";
    ::braid::run::RunRecord f32{"", exactDump};
    if (int rc = ::braid::run::runCaptured(*exactBinaries, 1, gridSpec,
                                           exactArgs, f32.stdoutText,
                                           /*echo=*/false)) {
      fail("verify: the 1-rank f32 run failed");
      return rc;
    }
    if (!::braid::run::roundingBounds(single, f32, steps, rules, maxNorm,
                                      logits, verifyTolerance, &bounds,
                                      &error))
      return fail("verify: " + error);
  }
  ::braid::run::Verdict verdict;
  if (!::braid::run::compareRuns(partitioned, single, steps, rules, maxNorm,
                                 &verdict, &error))
    return fail("verify: " + error);
  const bool pass = ::braid::run::reportVerdict(
      llvm::outs(), verdict, bounds, steps, rounded ? StringRef(dtype) : "",
      routed, verifyTolerance);
  llvm::outs().flush();
  if (pass) {
    for (const std::string &dir : temporary)
      llvm::sys::fs::remove_directories(dir);
    return 0;
  }
  if (!temporary.empty())
    llvm::errs() << "braid-run: verify: dumps kept in " << partitionedDump
                 << " (partitioned) and " << referenceDump << " (1 rank)"
                 << (rounded ? " and " + exactDump + " (1 rank, f32)"
                             : std::string())
                 << "\n";
  return 1;
}
