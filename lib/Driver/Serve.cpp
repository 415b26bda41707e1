//===- Serve.cpp - compile paged inference programs and serve -------------===//
//
// braid-run MODEL --serve REQUESTS (or --rate R): --braid-derive-inference
// with a paged KV cache (page-size, kv-pages) derives a prefill program of
// --prefill-batch rows of --prefill-chunk tokens and a decode program of
// --batch rows; they are lowered as --generate's are and run by the
// runtime's serving driver (runtime/src/driver_serve.cpp: the scheduler, the
// summary). With --verify, the static programs (an unpaged cache, one
// sequence per call) generate each request alone on one rank, and every
// served request's ids must equal them and its logits lie within the
// tolerance of teacher forcing (GenerateVerify.h).
//
//===----------------------------------------------------------------------===//

#include "braid/Driver/Build.h"
#include "braid/Driver/Compile.h"
#include "braid/Driver/Generate.h"
#include "braid/Driver/GenerateVerify.h"
#include "braid/Driver/Launch.h"
#include "braid/Driver/Progress.h"
#include "InferenceBuild.h"

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"
#include "dialects/braid/Transforms/DeriveInferenceMamba.h"
#include "dialects/braid/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;

namespace braid::driver {

namespace {

constexpr double kServeTolerance = 1e-5;

/// What the requests file asks of sampling and of prefill: the sampler's
/// mode must draw every request's options, and the 1-rank reference's
/// prefill must hold the longest prompt. Lines that do not parse are the
/// runtime's to refuse.
struct RequestsSummary {
  bool samples = false, nucleus = false;
  int64_t topKCap = 0, longestPrompt = 0;
};

RequestsSummary summarizeRequests(const GenerateOptions &generate) {
  RequestsSummary summary;
  summary.samples = generate.temperature > 0;
  summary.nucleus = generate.topP < 1;
  summary.topKCap = generate.topK;
  summary.longestPrompt = generate.promptLen;
  if (generate.serve.requestsFile.empty())
    return summary;
  auto file = llvm::MemoryBuffer::getFile(generate.serve.requestsFile);
  if (!file)
    return summary;
  SmallVector<StringRef> lines;
  (*file)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    llvm::Expected<llvm::json::Value> value = llvm::json::parse(line);
    if (!value) {
      llvm::consumeError(value.takeError());
      continue;
    }
    const llvm::json::Object *object = value->getAsObject();
    if (!object)
      continue;
    if (auto t = object->getNumber("temperature"))
      summary.samples |= *t > 0;
    if (auto p = object->getNumber("top_p"))
      summary.nucleus |= *p < 1;
    if (auto k = object->getInteger("top_k"))
      summary.topKCap = std::max(summary.topKCap, *k);
    if (const llvm::json::Array *prompt = object->getArray("prompt"))
      summary.longestPrompt = std::max<int64_t>(summary.longestPrompt, prompt->size());
    if (auto length = object->getInteger("prompt_len"))
      summary.longestPrompt = std::max(summary.longestPrompt, *length);
  }
  return summary;
}

std::string real(double v) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.17g", v);
  return text;
}

/// The flags both binaries share: the run's seed and sampling defaults,
/// threads, quiet.
SmallVector<std::string> commonArgs(const RunOptions &options, const GenerateOptions &generate) {
  SmallVector<std::string> args = {"--generate", std::to_string(generate.tokens)};
  if (options.seed)
    args.append({"--seed", std::to_string(*options.seed)});
  if (!options.initFrom.empty())
    args.append({"--init-from", options.initFrom});
  if (generate.temperature > 0)
    args.append({"--temperature", real(generate.temperature)});
  if (generate.topK > 0)
    args.append({"--top-k", std::to_string(generate.topK)});
  if (generate.topP < 1)
    args.append({"--top-p", real(generate.topP)});
  if (generate.serve.endToken >= 0)
    args.append({"--end-token", std::to_string(generate.serve.endToken)});
  if (options.compile.quiet)
    args.push_back("--quiet");
  if (options.cpuThreads > 0)
    args.append({"--threads", std::to_string(options.cpuThreads)});
  return args;
}

/// The serving binary's flags.
SmallVector<std::string> serveArgs(const RunOptions &options, const GenerateOptions &generate) {
  const GenerateOptions::Serve &serve = generate.serve;
  SmallVector<std::string> args = commonArgs(options, generate);
  if (!serve.requestsFile.empty()) {
    args.append({"--serve", serve.requestsFile});
  } else {
    args.append({"--rate", real(serve.rate), "--requests", std::to_string(serve.requests)});
    if (generate.promptLen)
      args.append({"--prompt-len", std::to_string(generate.promptLen)});
    if (serve.minPromptLen)
      args.append({"--min-prompt-len", std::to_string(serve.minPromptLen)});
  }
  if (!serve.outputFile.empty())
    args.append({"--output", serve.outputFile});
  if (serve.staticBatches)
    args.push_back("--static-batching");
  if (!options.traceFile.empty())
    args.append({"--trace", options.traceFile});
  return args;
}

/// The mixed programs --token-budget N builds beside the decode rows B: room
/// for a quarter, a half and all of the N - B prompt tokens, so that an
/// iteration with a short chunk runs a call sized to it, not to the budget
/// (the programs have static shapes; the runtime takes the smallest that
/// holds the iteration). None without a budget (0; the default, -1, is
/// resolved before).
SmallVector<int64_t> mixedSizes(int64_t budget, int64_t batch) {
  if (budget <= 0)
    return {};
  const int64_t room = budget - batch;
  SmallVector<int64_t> sizes;
  for (int64_t part : {room / 4, room / 2})
    if (part > 0)
      sizes.push_back(batch + part);
  sizes.push_back(budget);
  return sizes;
}

/// --braid-derive-inference's options: paged (serving), or the 1-rank
/// reference's static cache with one sequence per call.
mlir::braid::BraidDeriveInferencePassOptions deriveOptions(const GenerateOptions &generate,
                                              const RequestsSummary &requests, int64_t context,
                                              bool paged) {
  mlir::braid::BraidDeriveInferencePassOptions derive;
  derive.context = generate.context;
  derive.sample = true;
  derive.sampleMode = requests.nucleus   ? mlir::braid::SampleMode::Nucleus
                      : requests.samples ? mlir::braid::SampleMode::Sample
                                         : mlir::braid::SampleMode::Greedy;
  derive.topKCap = requests.topKCap;
  if (!paged) {
    derive.batch = 1;
    // A prompt longer than the context is refused by both runs.
    derive.promptLen = std::min(requests.longestPrompt, context);
    return derive;
  }
  const GenerateOptions::Serve &serve = generate.serve;
  derive.batch = generate.batch;
  derive.prefillBatch = serve.prefillBatch;
  derive.promptLen = serve.prefillChunk;
  derive.pageSize = serve.pageSize;
  derive.kvPages = serve.kvPages;
  derive.mixedRows = mixedSizes(serve.tokenBudget, generate.batch);
  return derive;
}

/// Derives and lowers `module`'s programs with `derive`, and builds them.
FailureOr<std::string> buildServing(ModuleOp module, const TrainingPipelineOptions &pipeline,
                                    const RunOptions &options,
                                    const mlir::braid::BraidDeriveInferencePassOptions &derive,
                                    StringRef grid, bool mpi, bool emit, Progress *progress) {
  PassManager pm(module.getContext());
  pm.addPass(mlir::braid::createBraidDeriveInferencePass(derive));
  if (failed(pm.run(module)) ||
      failed(lowerPrograms(module, pipeline, grid, emit ? options.compile : CompileOptions(),
                           progress)))
    return failure();
  FailureOr<SmallVector<std::string>> binaries = buildPrograms(module, options, mpi, emit);
  if (failed(binaries))
    return failure();
  if (binaries->size() != 1)
    return fail("--serve: the programs span several pipeline stages, which serving does "
                "not run yet"),
           failure();
  return binaries->front();
}


/// The training step (null when there is not one).
func::FuncOp trainingStep(ModuleOp module) {
  SmallVector<func::FuncOp> steps =
      mlir::braid::getEntries(module, mlir::braid::EntryKind::TrainStep);
  return steps.size() == 1 ? steps.front() : func::FuncOp();
}

/// The training step's tokens [B, S] (null when there is none).
RankedTensorType stepTokens(ModuleOp module) {
  func::FuncOp step = trainingStep(module);
  auto tokens = step && step.getNumArguments()
                    ? dyn_cast<RankedTensorType>(step.getArgumentTypes()[0])
                    : RankedTensorType();
  return tokens && tokens.getRank() == 2 ? tokens : RankedTensorType();
}

/// Whether the model has Mamba layers: the derivation's own test
/// (DeriveInferenceMamba.h), so that braid-run refuses what it would.
bool hasMambaLayers(ModuleOp module) {
  func::FuncOp step = trainingStep(module);
  SymbolTable symbols(module);
  return step && mlir::braid::hasMambaState(step, symbols);
}

/// --token-budget's mixed program: rows beyond the decode rows, and a model
/// whose layers take a chunk's tokens as independent rows (a Mamba layer's
/// state advances one token per call). Fails after a message.
LogicalResult checkTokenBudget(ModuleOp module, const GenerateOptions &generate) {
  const int64_t budget = generate.serve.tokenBudget;
  if (budget <= 0)
    return success(); // none, or the default (which takes what the model allows)
  RankedTensorType tokens = stepTokens(module);
  const int64_t rows = generate.batch ? generate.batch : tokens ? tokens.getDimSize(0) : 0;
  if (budget <= rows)
    return fail("--token-budget " + Twine(budget) + " must exceed --batch " + Twine(rows) +
                ": a mixed call holds every decode row and the prompt tokens beside them"),
           failure();
  if (hasMambaLayers(module))
    return fail("--token-budget runs a prompt chunk's tokens as rows of one call, which a model "
                "with Mamba layers cannot (their states advance one token per call): leave it "
                "out"),
           failure();
  return success();
}

/// How --grid's ranks serve: dp=R makes R replicas (independent groups of
/// ranks, each with its own pool and scheduler, as vLLM's data-parallel
/// engines), the other axes (tp) partition each replica's programs.
struct ServeGrid {
  std::string programGrid; ///< the replica's grid (empty: one rank)
  int64_t replicas = 1, ranksPerReplica = 1;
  int64_t ranks() const { return replicas * ranksPerReplica; }
};

/// --grid read as ServeGrid; fails after a message naming what is not served.
FailureOr<ServeGrid> serveGridOf(StringRef grid) {
  ServeGrid out;
  SmallVector<StringRef> axes;
  grid.split(axes, ',', -1, /*KeepEmpty=*/false);
  for (StringRef axis : axes) {
    auto [name, size] = axis.trim().split('=');
    int64_t n = 0;
    if (size.getAsInteger(10, n) || n < 1)
      return fail("--grid " + grid + ": '" + axis.trim() + "' is not AXIS=SIZE"), failure();
    if (name == "dp") {
      out.replicas = n;
    } else if (name == "tp") {
      out.programGrid = axis.trim().str();
      out.ranksPerReplica = n;
    } else {
      return fail("--serve runs on dp and tp grids; " + axis.trim() + " is not served yet"),
             failure();
    }
  }
  return out;
}

/// The bytes of one page on a rank, over every attention layer's pools:
/// the lowered programs' cache.<...>.k/.v states [N, P, Hkv, D] (this rank's
/// block, in their storage type) over N.
int64_t pageBytesOf(ModuleOp lowered) {
  int64_t bytes = 0;
  lowered.walk([&](mlir::braid::StateOp state) {
    StringRef name = state.getSymName();
    auto type = dyn_cast<RankedTensorType>(state.getType());
    if (!type || type.getRank() != 4 || !name.starts_with("cache.") ||
        !(name.ends_with(".k") || name.ends_with(".v")))
      return;
    const int64_t bits = type.getElementTypeBitWidth();
    bytes += type.getNumElements() / type.getDimSize(0) * bits / 8;
  });
  return bytes;
}

/// --kv-memory: the pages that many bytes per rank hold, measured on the
/// programs lowered for `grid` with one page.
FailureOr<int64_t> pagesOfMemory(ModuleOp module, const TrainingPipelineOptions &pipeline,
                                 mlir::braid::BraidDeriveInferencePassOptions derive,
                                 int64_t memory) {
  OwningOpRef<ModuleOp> probe = module.clone();
  derive.kvPages = 1;
  PassManager pm(probe->getContext());
  pm.addPass(mlir::braid::createBraidDeriveInferencePass(derive));
  if (failed(pm.run(*probe)) ||
      failed(lowerPrograms(*probe, pipeline, pipeline.grid, CompileOptions(), nullptr)))
    return failure();
  const int64_t page = pageBytesOf(*probe);
  if (page == 0)
    return fail("--kv-memory sizes a KV cache, which this model (no attention layer) does not "
                "have: use --batch for its Mamba states"),
           failure();
  if (memory < page)
    return fail("--kv-memory " + Twine(memory) + " bytes hold no page of " + Twine(page) +
                " bytes (every layer's keys and values for --page-size positions)"),
           failure();
  return memory / page;
}

/// What serving does not do (yet); fails after a message naming it.
LogicalResult checkServeOptions(const RunOptions &options, const GenerateOptions &generate) {
  const GenerateOptions::Serve &serve = generate.serve;
  if (!serve.requestsFile.empty() && serve.rate > 0)
    return fail("--serve FILE and --rate R are two sources of requests: give one"), failure();
  if (!serve.requestsFile.empty() && !llvm::MemoryBuffer::getFile(serve.requestsFile))
    return fail("cannot read --serve " + serve.requestsFile), failure();
  if (!generate.promptsFile.empty())
    return fail("--serve reads its prompts from its requests; --prompts is --generate's"),
           failure();
  if (serve.kvPages > 0 && serve.kvMemory > 0)
    return fail("--kv-pages and --kv-memory both size the pool: give one"), failure();
  if (serve.pageSize < 1 || serve.kvPages < 0 || serve.kvMemory < 0 || serve.prefillChunk < 0 ||
      serve.prefillBatch < 1 || serve.requests < 1 || serve.tokenBudget < -1)
    return fail("--page-size, --prefill-batch and --requests must be >= 1; --kv-pages and "
                "--prefill-chunk >= 0; --token-budget >= 0 (or -1, the default)"),
           failure();
  if (options.verify && serve.requestsFile.empty())
    return fail("--serve --verify compares the requests of a --serve FILE (not --rate's)"),
           failure();
  if (!options.checkpointDir.empty() || !options.resumeFrom.empty() ||
      !options.verifyFrom.empty())
    return fail("--serve takes none of --checkpoint-dir, --resume, --verify-from"), failure();
  return success();
}

} // namespace

std::optional<int64_t> parseByteSize(StringRef text) {
  StringRef digits = text.take_while([](char c) { return c >= '0' && c <= '9'; });
  StringRef unit = text.drop_front(digits.size());
  uint64_t value = 0;
  if (digits.empty() || digits.getAsInteger(10, value))
    return std::nullopt;
  int shift = 0;
  if (unit == "KiB" || unit == "K")
    shift = 10;
  else if (unit == "MiB" || unit == "M")
    shift = 20;
  else if (unit == "GiB" || unit == "G")
    shift = 30;
  else if (!unit.empty() && unit != "B")
    return std::nullopt;
  if (value > (uint64_t(INT64_MAX) >> shift))
    return std::nullopt;
  return int64_t(value << shift);
}

int serveModel(ModuleOp module, const TrainingPipelineOptions &pipeline,
               const RunOptions &options, const GenerateOptions &generate) {
  FailureOr<ServeGrid> grid = serveGridOf(pipeline.grid);
  if (failed(grid) || failed(checkServeOptions(options, generate)) ||
      failed(checkTokenBudget(module, generate)))
    return 1;
  // Disaggregated: the prefill group on --prefill-grid (default: --grid),
  // the decode group on --grid.
  const bool disaggregate = generate.serve.disaggregate;
  FailureOr<ServeGrid> prefillGrid =
      disaggregate && !generate.serve.prefillGrid.empty() ? serveGridOf(generate.serve.prefillGrid)
                                                          : grid;
  if (failed(prefillGrid))
    return 1;
  if (disaggregate && (grid->replicas > 1 || prefillGrid->replicas > 1))
    return fail("--disaggregate with dp: the groups' replicas are not served yet");
  if (!disaggregate && !generate.serve.prefillGrid.empty())
    return fail("--prefill-grid is the prefill group's grid of --disaggregate");
  if (disaggregate && generate.serve.tokenBudget > 0)
    return fail("--token-budget runs prefill and decode in one call; --disaggregate runs them on "
                "two groups: give one");
  const SmallVector<int64_t> groups = {prefillGrid->ranks(), grid->ranks()};
  const int64_t ranks = disaggregate ? groups[0] + groups[1] : grid->ranks();
  const bool ownPrefillBinary = disaggregate && prefillGrid->programGrid != grid->programGrid;
  OwningOpRef<ModuleOp> prefillModule = ownPrefillBinary ? module.clone() : nullptr;
  // Each replica's programs are partitioned for its own grid (tp).
  TrainingPipelineOptions replica;
  replica.copyOptionValuesFrom(pipeline);
  replica.grid = grid->programGrid;
  Progress *progress = options.compile.progress;
  if (progress)
    progress->phase("deriving the serving programs");
  const RequestsSummary requests = summarizeRequests(generate);
  OwningOpRef<ModuleOp> reference = options.verify ? module.clone() : nullptr;
  RankedTensorType tokens = stepTokens(module);
  // The model's sequence length (0 without a step: the derivation then says
  // what is wrong).
  const int64_t context = generate.context ? generate.context
                          : tokens        ? tokens.getDimSize(1)
                                          : 0;
  GenerateOptions sized = generate;
  // The decode rows, which the mixed programs' sizes start from.
  if (!sized.batch && tokens)
    sized.batch = tokens.getDimSize(0);
  if (!sized.serve.prefillChunk) {
    // Chunks of up to 512 prompt tokens, as long as the context allows.
    sized.serve.prefillChunk = std::min<int64_t>(context, 512);
  }
  // --token-budget's default: the decode rows and a whole chunk in mixed
  // calls, where the model and the layout take them (not with Mamba layers,
  // nor with prefill and decode on separate groups).
  if (sized.serve.tokenBudget < 0)
    sized.serve.tokenBudget =
        disaggregate || hasMambaLayers(module) ? 0 : sized.batch + sized.serve.prefillChunk;
  if (generate.serve.kvMemory > 0) {
    FailureOr<int64_t> pages = pagesOfMemory(
        module, replica, deriveOptions(sized, requests, context, /*paged=*/true),
        generate.serve.kvMemory);
    if (failed(pages))
      return 1;
    sized.serve.kvPages = *pages;
  }
  FailureOr<std::string> binary =
      buildServing(module, replica, options, deriveOptions(sized, requests, context, /*paged=*/true),
                   grid->programGrid, ranks > 1, /*emit=*/true, progress);
  if (failed(binary))
    return 1;
  TrainingPipelineOptions prefillPipeline;
  prefillPipeline.copyOptionValuesFrom(pipeline);
  prefillPipeline.grid = prefillGrid->programGrid;
  FailureOr<std::string> prefillBinary =
      prefillModule ? buildServing(*prefillModule, prefillPipeline, options,
                                   deriveOptions(sized, requests, context, /*paged=*/true),
                                   prefillGrid->programGrid, true, /*emit=*/false, nullptr)
                    : binary;
  if (failed(prefillBinary))
    return 1;
  FailureOr<std::string> single =
      reference ? buildServing(*reference, pipeline, options,
                               deriveOptions(generate, requests, context, /*paged=*/false), "", false,
                               /*emit=*/false, nullptr)
                : FailureOr<std::string>(std::string());
  if (failed(single))
    return 1;
  if (options.compileOnly)
    return 0;
  if (progress)
    progress->phase("serving");
  SmallVector<std::string> args = serveArgs(options, generate);
  if (grid->replicas > 1)
    args.append({"--replicas", std::to_string(grid->replicas)});
  SmallVector<std::string> binaries = {*binary};
  SmallVector<int64_t> counts;
  if (disaggregate) {
    args.append({"--disaggregate", "--groups",
                 std::to_string(groups[0]) + "," + std::to_string(groups[1])});
    binaries = {*prefillBinary, *binary};
    counts = groups;
  }
  if (!reference)
    return runPrograms(binaries, ranks, pipeline.grid, args, std::nullopt, counts);
  FailureOr<std::string> servedDir = logitsDirectory(), aloneDir = logitsDirectory();
  if (failed(servedDir) || failed(aloneDir))
    return 1;
  GenerationRun served{"", *servedDir}, alone{"", *aloneDir};
  args.append({"--logits-out", *servedDir});
  SmallVector<std::string> aloneArgs = commonArgs(options, generate);
  aloneArgs.append({"--prompts", generate.serve.requestsFile, "--logits-out", *aloneDir});
  int status =
      runCaptured(binaries, ranks, pipeline.grid, args, served.text, /*echo=*/true, counts);
  int aloneStatus = runCaptured({*single}, 1, "", aloneArgs, alone.text, /*echo=*/false);
  bool same = (status == 0 || status == 2) && (aloneStatus == 0 || aloneStatus == 2) &&
              compareGenerations(served, alone, "serving against each request alone on 1 rank",
                                 kServeTolerance, llvm::outs());
  llvm::sys::fs::remove_directories(*servedDir);
  llvm::sys::fs::remove_directories(*aloneDir);
  if (status != 0 && status != 2)
    return status;
  return same ? status : 1;
}

} // namespace braid::driver
