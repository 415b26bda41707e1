//===- Generate.cpp - compile a model's inference programs and generate ---===//
//
// The programs come from --braid-derive-inference alone, emitted as they
// are: one rank needs no partitioning, and the lowering the training
// pipeline adds for a grid (partition, dist ops) has nothing to do there.
// The runtime checks the requests; this side checks the flags.
//
//===----------------------------------------------------------------------===//

#include "braid/Driver/Generate.h"
#include "braid/Driver/Build.h"
#include "braid/Driver/Launch.h"
#include "braid/Driver/Progress.h"

#include "braid/Target/Cpp.h"
#include "dialects/braid/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

namespace braid::driver {

namespace {

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
  if (!pipeline.grid.empty()) {
    FailureOr<int64_t> ranks = gridRanks(pipeline.grid);
    if (failed(ranks))
      return failure();
    if (*ranks > 1)
      return fail("--generate with --grid " + pipeline.grid +
                  ": generation runs on one rank for now; issue 42"),
             failure();
  }
  if (mlir::braid::stringifyPrecision(pipeline.dtype) != "f32")
    return fail("--generate with --dtype " +
                mlir::braid::stringifyPrecision(pipeline.dtype) +
                ": generation runs at f32 for now; issue 42"),
           failure();
  if (!options.checkpointDir.empty() || !options.resumeFrom.empty() ||
      !options.verifyFrom.empty() || options.compile.breakProgram)
    return fail("--generate takes none of --checkpoint-dir, --resume, "
                "--verify-from, --inject-fault"),
           failure();
  return success();
}

} // namespace

int generateModel(ModuleOp module, const TrainingPipelineOptions &pipeline,
                  const RunOptions &options, const GenerateOptions &generate) {
  if (failed(checkGenerateOptions(pipeline, options)))
    return 1;
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
  pm.addPass(mlir::braid::createBraidDeriveInferencePass(derive));
  if (failed(pm.run(module)))
    return 1;

  if (progress)
    progress->phase("emitting C++");
  ::braid::CppEmitOptions emitOptions;
  emitOptions.rollRepeats = options.compile.rollRepeats;
  FailureOr<SmallVector<::braid::EmittedProgram>> emitted =
      ::braid::emitProgramsAsCpp(module, emitOptions);
  if (failed(emitted))
    return 1;
  SmallVector<std::string> sources;
  for (::braid::EmittedProgram &program : *emitted) {
    // --emit-cpp F writes program P to F with ".P" before its extension.
    if (!options.compile.emitCpp.empty()) {
      std::string error;
      std::string path = stageFile(options.compile.emitCpp, 0);
      path.replace(path.rfind(".stage0"), 7, "." + program.name);
      auto out = openOutputFile(path, &error);
      if (!out)
        return fail(error);
      out->os() << program.source;
      out->keep();
    }
    sources.push_back(std::move(program.source));
  }
  if (progress)
    progress->phase("building program");
  FailureOr<std::string> binary = buildLinkedProgram(
      sources, options.compile.backend, /*mpi=*/false, options.compile.quiet);
  if (failed(binary))
    return 1;
  if (options.compileOnly)
    return 0;
  if (progress)
    progress->phase("generating");
  return runPrograms({*binary}, 1, "", programArgs(options, generate));
}

} // namespace braid::driver
