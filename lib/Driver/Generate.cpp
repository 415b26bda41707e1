//===- Generate.cpp - compile a model's inference programs and generate ---===//
//
// The programs come from --braid-derive-inference and go through the
// training pipeline without an optimizer (the model's dtype, expert FFNs
// expanded); on a grid of several ranks it partitions every entry point (one
// layout per parameter and cache state across the programs) and makes every
// transfer a dist op, and the binary runs under mpirun. The runtime checks the requests; this side
// checks the flags.
//
//===----------------------------------------------------------------------===//

#include "braid/Driver/Generate.h"
#include "braid/Driver/Build.h"
#include "braid/Driver/Compile.h"
#include "braid/Driver/GenerateVerify.h"
#include "braid/Driver/Launch.h"
#include "braid/Driver/Progress.h"
#include "InferenceBuild.h"

#include "braid/Target/Cpp.h"
#include "dialects/braid/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

using namespace mlir;

namespace braid::driver {

namespace {

/// The bound of both checks of --verify at f32 (the runtime's teacher
/// forcing uses the same): max |a - b| / max |b| per request and step.
constexpr double kGenerateTolerance = 1e-5;

/// The prompt length prefill is built for: --prompt-len, else the longest
/// line of --prompts (a malformed file is the runtime's to refuse line by
/// line), else the pass's default (0).
int64_t promptLength(const GenerateOptions &generate) {
  if (generate.promptLen || generate.promptsFile.empty())
    return generate.promptLen;
  auto file = llvm::MemoryBuffer::getFile(generate.promptsFile);
  if (!file)
    return 0;
  SmallVector<StringRef> lines, words;
  (*file)->getBuffer().split(lines, '\n');
  int64_t longest = 0;
  for (StringRef line : lines) {
    words.clear();
    line.split(words, ' ', -1, /*KeepEmpty=*/false);
    longest = std::max<int64_t>(longest, llvm::count_if(words, [](StringRef w) {
                                  return !w.trim().empty();
                                }));
  }
  return longest;
}

/// The flags the generation binary runs with.
SmallVector<std::string> programArgs(const RunOptions &options,
                                     const GenerateOptions &generate) {
  SmallVector<std::string> args = {"--generate", std::to_string(generate.tokens)};
  if (options.seed)
    args.append({"--seed", std::to_string(*options.seed)});
  if (!options.initFrom.empty())
    args.append({"--init-from", options.initFrom});
  if (!generate.promptsFile.empty())
    args.append({"--prompts", generate.promptsFile});
  else if (generate.promptLen)
    args.append({"--prompt-len", std::to_string(generate.promptLen)});
  auto real = [](double v) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%.17g", v);
    return text;
  };
  if (generate.temperature > 0)
    args.append({"--temperature", real(generate.temperature)});
  if (generate.topK > 0)
    args.append({"--top-k", std::to_string(generate.topK)});
  if (generate.topP < 1)
    args.append({"--top-p", real(generate.topP)});
  if (options.verify)
    args.push_back("--verify-forward");
  if (options.compile.quiet)
    args.push_back("--quiet");
  if (options.cpuThreads > 0)
    args.append({"--threads", std::to_string(options.cpuThreads)});
  if (!options.dumpDir.empty())
    args.append({"--dump", options.dumpDir});
  if (!options.traceFile.empty())
    args.append({"--trace", options.traceFile});
  return args;
}

/// What generation does not do (yet); fails after a message naming it.
LogicalResult checkGenerateOptions(const TrainingPipelineOptions &pipeline,
                                   const RunOptions &options) {
  if (!options.checkpointDir.empty() || !options.resumeFrom.empty() ||
      !options.verifyFrom.empty())
    return fail("--generate takes none of --checkpoint-dir, --resume, "
                "--verify-from"),
           failure();
  if (options.compile.breakProgram && pipeline.grid.empty())
    return fail("--generate --inject-fault breaks a partitioned program: it "
                "needs a --grid"),
           failure();
  return success();
}

/// Runs `python3 -m braid.data ARGS...` (python/braid/data.py: braid-run has
/// no tokenizer of its own), stdout to `stdoutFile` or ours; its stderr
/// carries its message. Whether it succeeded.
bool runBraidData(ArrayRef<std::string> args, std::optional<StringRef> stdoutFile) {
  llvm::ErrorOr<std::string> python = llvm::sys::findProgramByName("python3");
  if (!python)
    return fail("--tokenizer needs python3 on PATH (python3 -m braid.data)"), false;
  SmallVector<StringRef> argv = {*python, "-m", "braid.data"};
  argv.append(args.begin(), args.end());
  llvm::outs().flush();
  std::optional<StringRef> redirects[] = {StringRef(""), stdoutFile, std::nullopt};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*python, argv, std::nullopt, redirects, 0, 0, &error);
  if (rc != 0)
    return fail("python3 -m braid.data " + args.front() + " failed" +
                (error.empty() ? "" : ": " + error)),
           false;
  return true;
}

/// A temporary file (removed by the caller); empty after a message.
std::string temporaryFile(StringRef prefix, StringRef suffix) {
  SmallString<128> path;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(prefix, suffix, path))
    return fail("cannot create a temporary file: " + ec.message()), "";
  return path.str().str();
}

/// --prompt-text: the texts encoded into a temporary --prompts file (its
/// path; empty after a message).
std::string encodePrompts(const GenerateOptions &generate) {
  std::string file = temporaryFile("braid-prompts", "txt");
  if (file.empty())
    return "";
  SmallVector<std::string> args = {"encode", "--tokenizer", generate.tokenizer};
  args.append(generate.promptTexts.begin(), generate.promptTexts.end());
  if (!runBraidData(args, StringRef(file))) {
    llvm::sys::fs::remove(file);
    return "";
  }
  return file;
}

/// Runs the generation with its output captured, then prints it with each
/// request's text (--tokenizer); the program's exit status, or 1 when the
/// decoding fails.
int runDecoded(ArrayRef<std::string> binaries, int64_t ranks, StringRef grid,
               ArrayRef<std::string> args, StringRef tokenizer) {
  std::string output = temporaryFile("braid-generate", "out");
  if (output.empty())
    return 1;
  int status = runPrograms(binaries, ranks, grid, args, StringRef(output));
  bool decoded = runBraidData({"decode", "--tokenizer", tokenizer.str(), output}, std::nullopt);
  llvm::sys::fs::remove(output);
  return decoded || status != 0 ? status : 1;
}

/// The text flags' combinations; fails after a message.
LogicalResult checkTextOptions(const GenerateOptions &generate, bool compareRanks) {
  if (!generate.promptTexts.empty() && generate.tokenizer.empty())
    return fail("--prompt-text needs --tokenizer DIR (a Hugging Face tokenizer.json)"),
           failure();
  if (!generate.promptTexts.empty() && (!generate.promptsFile.empty() || generate.promptLen))
    return fail("--prompt-text takes the place of --prompts and --prompt-len"), failure();
  if (!generate.tokenizer.empty() && compareRanks)
    return fail("--tokenizer does not run with --verify on a grid of several ranks yet"),
           failure();
  return success();
}

} // namespace

/// Lowers the inference programs for `grid` (none: one rank) with the
/// training pipeline and no optimizer: the model's --dtype, expert FFNs
/// expanded, and on a grid every entry point partitioned and every transfer
/// a dist op (with --inject-fault's passes between the partitioning and the
/// lowering to dist ops, as for training).
LogicalResult lowerPrograms(ModuleOp module, const TrainingPipelineOptions &given,
                            StringRef grid, const CompileOptions &compile,
                            Progress *progress) {
  if (progress)
    progress->phase(grid.empty() ? Twine("lowering the inference programs")
                                 : "partitioning the inference programs for " + grid);
  TrainingPipelineOptions pipeline;
  if (grid.empty()) {
    // One rank, as the training reference: the whole batch, no grid.
    referencePipeline(given, pipeline);
    pipeline.zero = 0;
    pipeline.sequenceParallel = false;
  } else {
    pipeline.copyOptionValuesFrom(given);
  }
  pipeline.optimizer = mlir::braid::OptimizerKind::None;
  // The logits stay split over the vocabulary unless --gather-logits says
  // otherwise: the program samples from the blocks (braid.sample's
  // exchanges) and the runtime gathers them only to verify.
  pipeline.gatherLogits = given.gatherLogits.getNumOccurrences() && given.gatherLogits;
  const char *links = std::getenv("BRAID_LINK");
  pipeline.scheduleLink = links ? links : "";
  PassManager pm(module.getContext());
  std::string error;
  pipeline.lowerToDist = !compile.breakProgram;
  if (failed(::braid::buildTrainingPipeline(pm, pipeline, &error)))
    return fail(error.empty() ? "cannot build the pass pipeline" : error), failure();
  if (failed(pm.run(module)))
    return failure();
  if (!compile.breakProgram)
    return success();
  PassManager broken(module.getContext());
  compile.breakProgram(broken);
  ::braid::buildDistLowering(broken, pipeline);
  return broken.run(module);
}

/// The module's programs emitted and linked into one binary per pipeline
/// stage (every program of a stage in one: the runtime finds them by their
/// getters), in stage order. --emit-cpp F writes program P to F with ".P"
/// before its extension, when `emit`.
FailureOr<SmallVector<std::string>> buildPrograms(ModuleOp module, const RunOptions &options,
                                                  bool mpi, bool emit) {
  ::braid::CppEmitOptions emitOptions;
  emitOptions.rollRepeats = options.compile.rollRepeats;
  FailureOr<SmallVector<::braid::EmittedProgram>> emitted =
      ::braid::emitProgramsAsCpp(module, emitOptions);
  if (failed(emitted))
    return failure();
  std::map<int64_t, SmallVector<std::string>> stages;
  for (::braid::EmittedProgram &program : *emitted) {
    if (emit && !options.compile.emitCpp.empty()) {
      std::string error;
      std::string path = stageFile(options.compile.emitCpp, 0);
      path.replace(path.rfind(".stage0"), 7, "." + program.name);
      auto out = openOutputFile(path, &error);
      if (!out)
        return fail(error), failure();
      out->os() << program.source;
      out->keep();
    }
    stages[program.pipelineRank].push_back(std::move(program.source));
  }
  SmallVector<std::string> binaries;
  for (auto &[stage, sources] : stages) {
    FailureOr<std::string> binary =
        buildLinkedProgram(sources, options.compile.backend, mpi, options.compile.quiet);
    if (failed(binary))
      return failure();
    binaries.push_back(*binary);
  }
  return binaries;
}

/// A fresh directory for a run's --logits-out.
FailureOr<std::string> logitsDirectory() {
  SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("braid-generate-logits", dir))
    return fail("cannot create a temporary directory: " + ec.message()), failure();
  return dir.str().str();
}

namespace {

/// Runs the partitioned binary and the 1-rank `reference`, each writing its
/// logits, and compares them (GenerateVerify.h). The partitioned run's exit
/// status, or 1 when the comparison fails.
int runVerified(ArrayRef<std::string> binaries, ArrayRef<std::string> reference, int64_t ranks,
                const TrainingPipelineOptions &pipeline, ArrayRef<std::string> args) {
  FailureOr<std::string> partitionedDir = logitsDirectory(), referenceDir = logitsDirectory();
  if (failed(partitionedDir) || failed(referenceDir))
    return 1;
  auto withLogits = [&](const std::string &dir) {
    SmallVector<std::string> full(args.begin(), args.end());
    full.append({"--logits-out", dir});
    return full;
  };
  GenerationRun partitioned{"", *partitionedDir}, single{"", *referenceDir};
  int status = runCaptured(binaries, ranks, pipeline.grid, withLogits(*partitionedDir),
                           partitioned.text, /*echo=*/true);
  int referenceStatus = runCaptured(reference, 1, "", withLogits(*referenceDir), single.text,
                                    /*echo=*/false);
  bool same = (status == 0 || status == 1 || status == 2) &&
              (referenceStatus == 0 || referenceStatus == 1 || referenceStatus == 2) &&
              compareGenerations(partitioned, single,
                                 "grid " + pipeline.grid + " against 1 rank", kGenerateTolerance,
                                 llvm::outs());
  llvm::sys::fs::remove_directories(*partitionedDir);
  llvm::sys::fs::remove_directories(*referenceDir);
  if (status != 0 && status != 2)
    return status;
  return same ? status : 1;
}

} // namespace

int generateModel(ModuleOp module, const TrainingPipelineOptions &pipeline,
                  const RunOptions &options, const GenerateOptions &given) {
  if (failed(checkGenerateOptions(pipeline, options)))
    return 1;
  FailureOr<int64_t> ranks = pipeline.grid.empty() ? 1 : gridRanks(pipeline.grid);
  if (failed(ranks) || failed(checkTextOptions(given, options.verify && *ranks > 1)))
    return 1;
  // --prompt-text becomes a --prompts file, removed when the run is over.
  GenerateOptions generate = given;
  if (!given.promptTexts.empty() && (generate.promptsFile = encodePrompts(given)).empty())
    return 1;
  llvm::scope_exit removePrompts([&] {
    if (!given.promptTexts.empty())
      llvm::sys::fs::remove(generate.promptsFile);
  });
  if (!generate.promptsFile.empty() &&
      !llvm::MemoryBuffer::getFile(generate.promptsFile))
    return fail("cannot read --prompts " + generate.promptsFile);
  if (generate.tokens < 1)
    return fail("--generate needs a positive number of tokens, found " +
                Twine(generate.tokens));
  if (generate.batch < 0 || generate.context < 0 || generate.promptLen < 0 ||
      generate.topK < 0 || options.cpuThreads < 0)
    return fail("--batch, --context, --prompt-len, --top-k and --cpu-threads "
                "must not be negative");
  if (!(generate.temperature >= 0) || !(generate.topP > 0 && generate.topP <= 1))
    return fail("--temperature must be >= 0 and --top-p in (0, 1]");
  Progress *progress = options.compile.progress;
  if (progress)
    progress->phase("deriving the inference programs");
  PassManager pm(module.getContext());
  mlir::braid::BraidDeriveInferencePassOptions derive;
  derive.batch = generate.batch;
  derive.context = generate.context;
  derive.promptLen = promptLength(generate);
  // Sampling is the programs' last op (braid.sample): on a vocabulary split,
  // its exchanges are dist ops of the program. Its schedule follows the
  // options: one exchange for greedy, three for temperature and top-k, the
  // top-p search's twelve for top-p alone.
  derive.sample = true;
  derive.sampleMode = generate.temperature <= 0 ? mlir::braid::SampleMode::Greedy
                      : generate.topK <= 0 && generate.topP < 1
                          ? mlir::braid::SampleMode::Nucleus
                          : mlir::braid::SampleMode::Sample;
  derive.topKCap = generate.topK;
  pm.addPass(mlir::braid::createBraidDeriveInferencePass(derive));
  if (failed(pm.run(module)))
    return 1;
  // --verify on a grid: the same programs on one rank are the reference.
  const bool compareRanks = options.verify && *ranks > 1;
  OwningOpRef<ModuleOp> single = compareRanks ? module.clone() : nullptr;
  if (failed(lowerPrograms(module, pipeline, *ranks > 1 ? StringRef(pipeline.grid) : "",
                           options.compile,
                           progress)) ||
      (single && failed(lowerPrograms(*single, pipeline, "", CompileOptions(), nullptr))))
    return 1;

  if (progress)
    progress->phase("building program");
  FailureOr<SmallVector<std::string>> binaries =
      buildPrograms(module, options, *ranks > 1, /*emit=*/true);
  if (failed(binaries))
    return 1;
  FailureOr<SmallVector<std::string>> reference =
      compareRanks ? buildPrograms(*single, options, /*mpi=*/false, /*emit=*/false)
                   : FailureOr<SmallVector<std::string>>(SmallVector<std::string>());
  if (failed(reference))
    return 1;
  if (options.compileOnly)
    return 0;
  if (progress)
    progress->phase("generating");
  SmallVector<std::string> args = programArgs(options, generate);
  if (compareRanks)
    return runVerified(*binaries, *reference, *ranks, pipeline, args);
  if (!generate.tokenizer.empty())
    return runDecoded(*binaries, *ranks, pipeline.grid, args, generate.tokenizer);
  return runPrograms(*binaries, *ranks, pipeline.grid, args);
}

} // namespace braid::driver
