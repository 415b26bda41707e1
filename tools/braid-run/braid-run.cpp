//===- braid-run.cpp - compile a braid model and run it -------------------===//
//
//   braid-run model.mlir [--steps N] [--seed S] [--dtype f32|bf16]
//             [--dump DIR] [--trace FILE] [--backend cpu|cuda|cudasim]
//             [--grid AXIS=SIZE,...] [--plan megatron|data] [--zero 0|1|2|3]
//             [--sequence-parallel] [--microbatches N]
//             [--schedule gpipe|1f1b|interleaved|zb-h1] [--virtual-stages V]
//             [--pp-layout L,...] [--verify] [--verify-tolerance T]
//             [--checkpoint-dir D] [--checkpoint-every K] [--resume D]
//             [--cpu-threads N] [--data FILE [--data-dtype T] [--shuffle]]
//             [--eval-data FILE --eval-every K [--eval-batches N]]
//   braid-run model.mlir --generate N [--batch B] [--context C]
//             [--prompt-len L | --prompts FILE] [--temperature T] [--top-k K]
//             [--top-p P] [--seed S] [--verify]
//             [--tokenizer DIR [--prompt-text TEXT]...]
//   braid-run model.mlir --serve REQUESTS.jsonl | --rate R [--requests N]
//             [--batch B] [--prefill-chunk L] [--prefill-batch BP]
//             [--page-size P] [--kv-pages N] [--output FILE] [--end-token ID]
//             [--grid tp=T] [--verify]
//
// Parses the model (keeping its SSA names as value names for dumps and
// traces), lowers it (expert FFNs expanded, optional bf16 storage), emits
// the program as C++ (braid-translate --braid-to-cpp), builds it against the
// runtime with the host compiler (or nvcc for --backend cuda), caches the
// binary by the hash of everything that builds it, and runs it: the program
// prints the loss of every step and its planned and measured peak memory.
// --backend cudasim builds it with the host compiler against the CUDA
// backend and kernels on the CPU emulation of runtime/cudasim: the device
// path runs, slowly, where there is no GPU (several ranks: the NCCL
// communicators on cudasim's NCCL over MPI, started by mpirun).
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
// --generate N derives the model's prefill, decode and forward programs
// (braid-opt --braid-derive-inference with --batch, --context and
// --prompt-len; --prompts FILE alone sizes prefill by its longest line),
// links them into one binary and generates N tokens for each request: the
// lines of --prompts FILE (token ids), or B prompts of L tokens drawn from
// --seed. It prints "request R: ID ..." per request and a summary line
// (runtime/src/driver_generate.cpp has the format, the refusals and the
// exit status: 2 when a request was refused, the others still run). With
// --verify it checks every generated step's logits against the forward
// program's at that position (teacher forcing, 1e-5 relative) and exits 1
// on a difference. One rank and f32 for now (issue 42): a --grid of several
// ranks is refused. --tokenizer DIR with --prompt-text TEXT (repeatable)
// takes text: python3 -m braid.data encode writes the --prompts file, and
// decode adds "request R text: ..." after each request's ids.
//
// --serve REQUESTS (or --rate R) serves requests arriving over time with
// continuous batching and chunked prefill over a paged KV cache (--page-size,
// --kv-pages, --prefill-chunk, --prefill-batch; lib/Driver/Serve.cpp,
// runtime/src/driver_serve.cpp, docs/serving.md); with --verify every
// request's ids and logits are compared with the request generated alone on
// one rank.
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
// --data FILE trains on a tokenized dataset instead of the batch drawn from
// the seed (runtime/src/data.h: formats and order; driver_data.cpp: how each
// rank reads its windows); the data position is saved in checkpoints, and
// --eval-data FILE --eval-every K prints "step K validation loss X".
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
// dumps, whose directories it names). With --dump DIR each run's stdout is
// kept beside its dumps (DIR/stdout.txt, DIR/reference/stdout.txt, ...).
//
// --verify-from DIR judges runs made elsewhere, laid out as --verify --dump
// DIR leaves them, and runs nothing: programs emitted with --emit-cpp and
// run by another launcher (bench/gpu/ranks.sh: GPU ranks over NCCL) with the
// arguments --verify gives them (the partitioned run: --dump DIR
// --dump-first-step --check-replicas; the 1-rank run: --dump DIR/reference
// --dump-first-step), their stdout in stdout.txt. It takes the flags that
// built the partitioned program; without --grid it judges two 1-rank runs
// (the same program on two backends).
//
//===----------------------------------------------------------------------===//

#include "braid/Planner/PlanFile.h"
#include "braid/Planner/ServePlanFile.h"
#include "braid/Driver/Progress.h"
#include "braid/Driver/Generate.h"
#include "braid/Driver/Run.h"
#include "braid/InitAllDialects.h"
#include "braid/Pipelines.h"
#include "braid/Support/CommandLine.h"
#include "braid/Support/Debug.h"
#include "test/lib/Transforms/InjectFault.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
namespace cl = llvm::cl;

/// braid-run's options by subject: --help lists these (categories in
/// alphabetical order), not the hundreds of LLVM's that linking MLIR
/// registers. The training pipeline's join them in main (pipelineCategory).
static cl::OptionCategory modelCategory("Model, grid and backend");
static cl::OptionCategory trainingCategory("Training");
static cl::OptionCategory pipelineParallelCategory("Pipeline parallelism and micro-batches");
static cl::OptionCategory contextCategory("Context parallelism (a cp axis)");
static cl::OptionCategory overlapCategory("Communication and its overlap");
static cl::OptionCategory checkpointCategory("Checkpoints");
static cl::OptionCategory verifyCategory("Verification");
static cl::OptionCategory outputCategory("Output");

static cl::opt<std::string> inputFile(cl::Positional, cl::cat(modelCategory), cl::desc("<model.mlir>"),
                                      cl::init("-"));
static cl::opt<int> steps("steps", cl::cat(trainingCategory),
                          cl::desc("The last step to run, at least 1 (after --resume, from "
                                   "the checkpoint's step on; 0 with --dump: initialize and "
                                   "dump the initial state; default: 1)"),
                          cl::init(1));
static cl::opt<uint64_t> seed("seed", cl::cat(trainingCategory), cl::desc("Initialization and input seed (default: 0; with "
                                       "--resume, the checkpoint's)"),
                              cl::init(0));
static cl::opt<std::string> dumpDir("dump", cl::cat(outputCategory), cl::value_desc("dir"),
                                    cl::desc("Write every named tensor as "
                                             ".npy into this directory"));
static cl::opt<std::string>
    traceFile("trace", cl::cat(outputCategory), cl::value_desc("file"),
              cl::desc("Write a Perfetto/Chrome trace (with several ranks, one "
                       "per rank: trace.rank1.json for trace.json)"));
static cl::opt<std::string> backend("backend", cl::cat(modelCategory), cl::desc("cpu, cuda or cudasim (the CUDA backend on "
                                             "the CPU emulation; default: cpu)"),
                                    cl::init("cpu"));
static cl::opt<std::string> emitCpp("emit-cpp", cl::cat(outputCategory), cl::value_desc("file"),
                                    cl::desc("Also write the generated C++ "
                                             "source to this file"));
static cl::opt<bool> rollRepeats(
    "roll-repeats", cl::cat(outputCategory),
    cl::desc("Print repeated statement groups of the generated program "
             "(layers, micro-batches) as loops over tables; off prints every "
             "statement (default: true)"),
    cl::init(true));
static cl::opt<bool> compileOnly("compile-only", cl::cat(outputCategory),
                                 cl::desc("Build the program, do not run it"));
// Not --threads: LLVM's libraries register that name.
static cl::opt<int> cpuThreads(
    "cpu-threads", cl::cat(modelCategory),
    cl::desc("CPU threads of each rank's kernels (passed to the programs as "
             "--threads; default 0: the machine's cores shared by the ranks "
             "started on it, at least 1)"),
    cl::init(0));
static cl::opt<bool> quiet("quiet", cl::cat(outputCategory), cl::desc("Only print the losses and "
                                             "peaks"));
static cl::opt<bool> verifyRuns(
    "verify", cl::cat(verifyCategory),
    cl::desc("With --grid: also run the unpartitioned program on one rank "
             "(same seed and steps) and compare losses, gradients and updated "
             "parameters; exit 1 when they differ by more than "
             "--verify-tolerance (with --dtype bf16: bounds from bf16 "
             "rounding, measured against the 1-rank program at f32)"));
static cl::opt<double>
    verifyTolerance("verify-tolerance", cl::cat(verifyCategory),
                    cl::desc("Largest relative difference --verify accepts "
                             "(default: 1e-5)"),
                    cl::init(1e-5));

static cl::opt<std::string> verifyFrom(
    "verify-from", cl::cat(verifyCategory), cl::value_desc("dir"),
    cl::desc("Judge as --verify does runs made elsewhere (GPU ranks started "
             "by a launcher): the partitioned run's dumps and stdout.txt in "
             "this directory, the 1-rank run's in DIR/reference (and "
             "DIR/reference-f32 at bf16/f16), as --verify --dump DIR lays them "
             "out; runs nothing"));

static cl::opt<std::string> checkpointDir(
    "checkpoint-dir", cl::cat(checkpointCategory), cl::value_desc("dir"),
    cl::desc("Write checkpoints (parameters, optimizer state, step, seed) into this "
             "directory: after every --checkpoint-every steps and after the last"));
static cl::opt<int64_t> checkpointEvery(
    "checkpoint-every", cl::cat(checkpointCategory),
    cl::desc("With --checkpoint-dir, steps between checkpoints (default 0: only after "
             "the last)"),
    cl::init(0));
static cl::opt<std::string> resumeFrom(
    "resume", cl::cat(checkpointCategory), cl::value_desc("dir"),
    cl::desc("Continue from the latest checkpoint in this directory (or from this "
             "checkpoint), written on any grid; --steps is then the last step"));
static cl::opt<std::string> initFrom(
    "init-from", cl::cat(checkpointCategory), cl::value_desc("map"),
    cl::desc("Start from another model's weights: a weights map that python3 -m "
             "braid.hf_weights writes for a Hugging Face model directory (each rank reads "
             "its own slices; the optimizer starts fresh)"));

static cl::OptionCategory dataCategory("Data");
static cl::opt<std::string> dataFile(
    "data", cl::cat(dataCategory), cl::value_desc("file"),
    cl::desc("Train on this tokenized dataset: each step reads the next global batch of "
             "windows of seq + 1 tokens (a .npy of int32/int64/uint16/uint32 ids, a "
             "headerless .bin of uint16 ids, or Megatron's .bin/.idx pair; default: one "
             "batch drawn from the seed for every step)"));
static cl::opt<std::string> dataDtype(
    "data-dtype", cl::cat(dataCategory),
    cl::desc("The ids of a headerless .bin: uint16 or uint32 (default: uint16)"));
static cl::opt<bool> shuffle(
    "shuffle", cl::cat(dataCategory),
    cl::desc("With --data: read the windows in an order permuted from the seed, anew each "
             "epoch (default: file order)"));
static cl::opt<std::string> evalDataFile(
    "eval-data", cl::cat(dataCategory), cl::value_desc("file"),
    cl::desc("With --eval-every: print a validation loss on this dataset"));
static cl::opt<int64_t> evalEvery(
    "eval-every", cl::cat(dataCategory),
    cl::desc("Steps between validation losses on --eval-data (default 0: none)"), cl::init(0));
static cl::opt<int64_t> evalBatches(
    "eval-batches", cl::cat(dataCategory),
    cl::desc("Global batches of --eval-data a validation loss averages (default 8)"),
    cl::init(8));

static cl::opt<std::string> planFile(
    "plan-file", cl::cat(modelCategory), cl::value_desc("file"),
    cl::desc("Run the plan braid-plan --plan-file wrote: its grid, ZeRO stage, "
             "recompute, micro-batches, schedule, virtual stages and layout "
             "(the reduced plan on CPU ranks, the full one with --backend "
             "cuda); or the serving plan braid-plan --inference --plan-file wrote: "
             "--generate, --batch, --prompt-len, --context, --grid, --page-size, "
             "--kv-pages, --prefill-chunk (and --disaggregate) where not given"));

static cl::opt<std::string> injectFault(
    "inject-fault", cl::cat(verifyCategory),
    cl::desc("Testing --verify: break the partitioned program in one known "
             "way before it is emitted (--braid-test-inject-fault kinds)"),
    cl::Hidden);

static cl::opt<bool> showProgress(
    "progress", cl::cat(outputCategory),
    cl::desc("Show the phases of long work (lowering, building, running) on "
             "stderr (default: when stderr is a terminal and not --quiet)"));

static cl::OptionCategory generateCategory("Generation (--generate)");
static cl::opt<int64_t> generateTokens(
    "generate", cl::cat(generateCategory),
    cl::desc("Generate N tokens per request with the model's prefill and "
             "decode programs instead of training (with --serve: each request's "
             "default max_new_tokens, default 16)"),
    cl::init(0));
static cl::opt<int64_t> generateBatch(
    "batch", cl::cat(generateCategory),
    cl::desc("With --generate: sequences per wave (default: the model's batch)"),
    cl::init(0));
static cl::opt<int64_t> generateContext(
    "context", cl::cat(generateCategory),
    cl::desc("With --generate: KV cache rows per sequence (default: the "
             "model's sequence length)"),
    cl::init(0));
static cl::opt<int64_t> promptLen(
    "prompt-len", cl::cat(generateCategory),
    cl::desc("With --generate: prefill's prompt length; without --prompts, "
             "prompts of this length drawn from --seed (default: the context)"),
    cl::init(0));
static cl::opt<std::string> promptsFile(
    "prompts", cl::cat(generateCategory), cl::value_desc("file"),
    cl::desc("With --generate: one request per line, token ids separated by "
             "spaces"));
static cl::list<std::string> promptTexts(
    "prompt-text", cl::cat(generateCategory), cl::value_desc("text"),
    cl::desc("With --generate and --tokenizer: a prompt as text (repeatable; in "
             "place of --prompts)"));
static cl::opt<std::string> tokenizerDir(
    "tokenizer", cl::cat(generateCategory), cl::value_desc("dir"),
    cl::desc("With --generate: a Hugging Face tokenizer.json (or its directory) "
             "that encodes --prompt-text and prints each request's text "
             "(python3 -m braid.data, the `tokenizers` package)"));
static cl::opt<double> temperature(
    "temperature", cl::cat(generateCategory),
    cl::desc("With --generate: sampling temperature (default 0: greedy)"), cl::init(0));
static cl::opt<int64_t> topK("top-k", cl::cat(generateCategory),
                             cl::desc("With --generate: sample among the K "
                                      "likeliest tokens (default 0: all)"),
                             cl::init(0));
static cl::opt<double> topP("top-p", cl::cat(generateCategory),
                            cl::desc("With --generate: sample among the "
                                     "likeliest tokens of this mass (default 1: all)"),
                            cl::init(1));

static cl::OptionCategory serveCategory("Serving (--serve or --rate)");
static cl::opt<std::string> serveFile(
    "serve", cl::cat(serveCategory), cl::value_desc("file"),
    cl::desc("Serve the requests of this JSON-lines file with continuous "
             "batching over a paged KV cache (--generate N: their default "
             "max_new_tokens)"));
static cl::opt<double> serveRate(
    "rate", cl::cat(serveCategory),
    cl::desc("Serve --requests generated requests arriving at this many per "
             "second (Poisson, from --seed; prompts of --min-prompt-len to "
             "--prompt-len tokens)"),
    cl::init(0));
static cl::opt<int64_t> serveRequests("requests", cl::cat(serveCategory),
                                      cl::desc("With --rate: how many requests (default 16)"),
                                      cl::init(16));
static cl::opt<int64_t> minPromptLen(
    "min-prompt-len", cl::cat(serveCategory),
    cl::desc("With --rate: the shortest generated prompt (default: --prompt-len)"),
    cl::init(0));
static cl::opt<std::string> serveOutput(
    "output", cl::cat(serveCategory), cl::value_desc("file"),
    cl::desc("With --serve or --rate: write each request's ids as a JSON line "
             "as it completes"));
static cl::opt<int64_t> endToken("end-token", cl::cat(serveCategory),
                                 cl::desc("A token id that ends a request (default: none)"),
                                 cl::init(-1));
static cl::opt<int64_t> pageSize("page-size", cl::cat(serveCategory),
                                 cl::desc("Positions per page of the KV cache (default 16)"),
                                 cl::init(16));
static cl::opt<int64_t> kvPages(
    "kv-pages", cl::cat(serveCategory),
    cl::desc("Pages of the KV cache's pool (default: --batch sequences of the "
             "whole context)"),
    cl::init(0));
static cl::opt<std::string> kvMemory(
    "kv-memory", cl::cat(serveCategory),
    cl::desc("Size the KV cache's pool by bytes per rank instead of --kv-pages (e.g. 64MiB, "
             "1GiB, or a number of bytes)"));
static cl::opt<int64_t> prefillChunk(
    "prefill-chunk", cl::cat(serveCategory),
    cl::desc("Prompt tokens a prefill call takes per sequence: longer prompts "
             "are prefilled in chunks beside decoding (default: the context, "
             "at most 512)"),
    cl::init(0));
static cl::opt<int64_t> prefillBatch("prefill-batch", cl::cat(serveCategory),
                                     cl::desc("Prompt chunks per iteration (default 1)"),
                                     cl::init(1));
static cl::opt<int64_t> tokenBudget(
    "token-budget", cl::cat(serveCategory),
    cl::desc("Run each iteration's decode rows and prompt chunks as one call of a mixed "
             "program of at most this many token rows (more than --batch; models without "
             "Mamba layers, colocated); 0: prefill and decode calls apart (default: --batch "
             "+ --prefill-chunk where mixed calls run, else 0)"),
    cl::init(-1));
static cl::opt<bool> staticBatching(
    "static-batching", cl::cat(serveCategory),
    cl::desc("Admit requests in waves of --batch that start only when the last "
             "one has ended, instead of continuous batching (the baseline of "
             "bench/serving)"));
static cl::opt<bool> disaggregate(
    "disaggregate", cl::cat(serveCategory),
    cl::desc("Prefill on one group of --grid's ranks and decode on a second, the cache moved "
             "between them"));
static cl::opt<std::string> prefillGrid(
    "prefill-grid", cl::cat(serveCategory), cl::value_desc("axis=size,..."),
    cl::desc("With --disaggregate: the prefill group's grid (default: --grid, the decode "
             "group's)"));

/// The lowering's options (--grid, --zero, --dtype, ...): the training
/// pipeline's own, defined once in braid/Pipelines.h and made flags of
/// braid-run by main. Its transfers are always lowered (braid-run emits dist
/// ops), and the links it schedules for come from BRAID_LINK.
static ::braid::TrainingPipelineOptions pipeline;

/// Sets the --generate / --serve flags of a serving plan (braid-plan
/// --inference --plan-file) that the command line leaves unset.
static void applyServePlan(const ::braid::plan::ServeRunFlags &f) {
  // As if given: braid-run picks its mode by the flags that occur.
  auto set = [](cl::Option &opt, const llvm::Twine &value) {
    if (!opt.getNumOccurrences())
      (void)opt.addOccurrence(0, opt.ArgStr, value.str());
  };
  set(generateTokens, llvm::Twine(f.generate));
  set(generateBatch, llvm::Twine(f.batch));
  set(promptLen, llvm::Twine(f.promptLen));
  set(generateContext, llvm::Twine(f.context));
  set(pageSize, llvm::Twine(f.pageSize));
  set(kvPages, llvm::Twine(f.kvPages));
  set(prefillChunk, llvm::Twine(f.prefillChunk));
  if (!f.grid.empty())
    set(pipeline.grid, f.grid);
  if (f.disaggregate) {
    set(disaggregate, "true");
    set(prefillGrid, f.prefillGrid);
  }
}

/// Sets the options of the plan in --plan-file; fails after a message.
static LogicalResult applyPlanFile() {
  llvm::Expected<std::optional<::braid::plan::ServeRunFlags>> serve =
      ::braid::plan::readServePlanFile(planFile);
  if (!serve)
    return ::braid::driver::fail(llvm::toString(serve.takeError())), failure();
  if (*serve) {
    applyServePlan(**serve);
    return success();
  }
  // A plan file sets the plan's options; giving one of them as well would
  // leave which one runs unclear.
  for (cl::Option *opt : std::initializer_list<cl::Option *>{
           &pipeline.grid, &pipeline.zero, &pipeline.recompute, &pipeline.microbatches,
           &pipeline.schedule, &pipeline.virtualStages,
           static_cast<cl::Option *>(std::addressof(pipeline.ppLayout)),
           &pipeline.sequenceParallel})
    if (opt->getNumOccurrences())
      return ::braid::driver::fail("--plan-file sets --" + opt->ArgStr +
                                   "; give one or the other"),
             failure();
  llvm::Expected<::braid::plan::RunFlags> flags =
      ::braid::plan::readPlanFile(planFile, backend == "cuda" ? "plan" : "reduced");
  if (!flags)
    return ::braid::driver::fail(llvm::toString(flags.takeError())), failure();
  // --dtype given with the plan file is the one that runs.
  if (pipeline.dtype.getNumOccurrences())
    flags->dtype.reset();
  flags->applyTo(pipeline);
  return success();
}

/// Where each of the training pipeline's options goes in braid-run's --help;
/// none: it stays the pipeline's, set by braid-run itself (lower-to-dist,
/// record-layouts) or from BRAID_LINK (schedule-link).
static cl::OptionCategory *categoryOf(StringRef name) {
  return llvm::StringSwitch<cl::OptionCategory *>(name)
      .Cases({"grid", "plan", "dtype", "zero", "sequence-parallel"}, &modelCategory)
      .Cases({"optimizer", "lr", "weight-decay", "eps", "max-norm", "recompute"},
             &trainingCategory)
      .Cases({"microbatches", "schedule", "virtual-stages", "pp-layout"},
             &pipelineParallelCategory)
      .Cases({"cp-attention", "cp-layout"}, &contextCategory)
      .Cases({"collective-matmul", "schedule-overlap", "bucket-mb", "first-bucket-mb",
              "defer-param-gather", "schedule-hardware"},
             &overlapCategory)
      .Case("gather-logits", &generateCategory)
      .Default(nullptr);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  pipeline.addToCommandLine(categoryOf);
  // --help shows these categories, and that of how ranks start, which
  // LaunchOptions.cpp defines with its options.
  SmallVector<const cl::OptionCategory *> shown = {
      &modelCategory,      &trainingCategory, &pipelineParallelCategory,
      &contextCategory,    &overlapCategory,  &checkpointCategory, &dataCategory,
      &verifyCategory,     &outputCategory,   &generateCategory,
      &serveCategory};
  if (cl::Option *launcher = cl::getRegisteredOptions().lookup("launcher"))
    llvm::append_range(shown, launcher->Categories);
  cl::HideUnrelatedOptions(shown);
  // After hiding: -debug-only stays in --help-hidden.
  mlir::braid::registerDebugOptions();
  ::braid::installVersionPrinter();
  ::braid::parseToolCommandLine(argc, argv, "Braid: compile and run a model\n");
  using ::braid::driver::fail;

  if (!planFile.empty() && failed(applyPlanFile()))
    return 1;

  // What only the command line can get wrong; the driver checks the values.
  if (pipeline.grid.getNumOccurrences() && pipeline.grid.empty())
    return fail("--grid needs AXIS=SIZE[,AXIS=SIZE...]");
  if (checkpointEvery.getNumOccurrences() && checkpointDir.empty())
    return fail("--checkpoint-every needs --checkpoint-dir");
  ::braid::driver::Progress progress(
      showProgress.getNumOccurrences()
          ? showProgress.getValue()
          : !quiet && ::braid::driver::Progress::stderrIsTerminal());
  ::braid::driver::RunOptions options;
  options.compile.backend = backend;
  options.compile.rollRepeats = rollRepeats;
  options.compile.emitCpp = emitCpp;
  options.compile.quiet = quiet;
  options.compile.progress = &progress;
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
  options.verify = verifyRuns || !verifyFrom.empty();
  options.verifyTolerance = verifyTolerance;
  options.verifyFrom = verifyFrom;
  options.checkpointDir = checkpointDir;
  options.checkpointEvery = checkpointEvery;
  options.resumeFrom = resumeFrom;
  options.initFrom = initFrom;
  options.cpuThreads = cpuThreads;
  options.dataFile = dataFile;
  options.dataDtype = dataDtype;
  options.shuffle = shuffle;
  options.evalDataFile = evalDataFile;
  options.evalEvery = evalEvery;
  options.evalBatches = evalBatches;
  // --generate checks its own (generateModel): --verify needs no grid there.
  // runModel checks again and warns (once) about options without effect.
  const bool serving = serveFile.getNumOccurrences() || serveRate.getNumOccurrences();
  // The data feeds training steps: generation and serving would ignore it.
  if ((generateTokens.getNumOccurrences() || serving) &&
      (!dataFile.empty() || !evalDataFile.empty()))
    return fail(std::string(dataFile.empty() ? "--eval-data" : "--data") +
                " feeds training steps; it does not apply to " +
                (serving ? "--serve or --rate" : "--generate"));
  if (!generateTokens.getNumOccurrences() && !serving &&
      failed(::braid::driver::checkOptions(pipeline, options, /*warn=*/false)))
    return 1;
  // Generation and serving lower the same options: their values are checked
  // here too, named as braid-run's flags rather than the pipeline's keywords.
  if (generateTokens.getNumOccurrences() || serving) {
    ::braid::OptionProblems problems = ::braid::checkTrainingPipelineOptions(
        pipeline, ::braid::OptionSpelling::Flag, /*useOnGrid=*/false);
    if (!problems.error.empty())
      return fail(problems.error);
  }

  DialectRegistry registry;
  ::braid::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // A located message is enough for users of braid-run; the IR of the op in
  // error is for compiler developers (braid-opt prints it).
  context.printOpOnDiagnostic(false);

  progress.phase("parsing " + inputFile);
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
  if (generateTokens.getNumOccurrences() || serving) {
    ::braid::driver::GenerateOptions generate;
    generate.tokens = generateTokens.getNumOccurrences() ? int64_t(generateTokens) : 16;
    generate.batch = generateBatch;
    generate.context = generateContext;
    generate.promptLen = promptLen;
    generate.promptsFile = promptsFile;
    generate.promptTexts.assign(promptTexts.begin(), promptTexts.end());
    generate.tokenizer = tokenizerDir;
    generate.temperature = temperature;
    generate.topK = topK;
    generate.topP = topP;
    if (serving) {
      if (!promptTexts.empty() || !tokenizerDir.empty())
        return fail("--prompt-text and --tokenizer are --generate's; --serve reads ids");
      generate.serve.requestsFile = serveFile;
      generate.serve.rate = serveRate;
      generate.serve.requests = serveRequests;
      generate.serve.minPromptLen = minPromptLen;
      generate.serve.outputFile = serveOutput;
      generate.serve.endToken = endToken;
      generate.serve.pageSize = pageSize;
      generate.serve.kvPages = kvPages;
      if (kvMemory.getNumOccurrences()) {
        std::optional<int64_t> bytes = ::braid::driver::parseByteSize(kvMemory);
        if (!bytes || *bytes < 1)
          return fail("--kv-memory needs a size such as 64MiB, 1GiB or 1048576, found '" +
                      kvMemory + "'");
        generate.serve.kvMemory = *bytes;
      }
      generate.serve.prefillChunk = prefillChunk;
      generate.serve.prefillBatch = prefillBatch;
      generate.serve.staticBatches = staticBatching;
      generate.serve.tokenBudget = tokenBudget;
      generate.serve.disaggregate = disaggregate;
      generate.serve.prefillGrid = prefillGrid;
      return ::braid::driver::serveModel(*module, pipeline, options, generate);
    }
    return ::braid::driver::generateModel(*module, pipeline, options, generate);
  }
  return ::braid::driver::runModel(*module, pipeline, options);
}
