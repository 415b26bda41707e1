//===- Compile.cpp - lower a model and build its programs -----------------===//

#include "braid/Driver/Compile.h"
#include "braid/Driver/Build.h"
#include "braid/Driver/Progress.h"

#include "braid/Conversion/Passes.h"
#include "braid/Target/Cpp.h"
#include "dialects/braid/IR/EntryPoints.h"
#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/Sharding.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

namespace braid::driver {

int fail(const Twine &message) {
  llvm::errs() << "braid-run: " << message << "\n";
  return 1;
}

FailureOr<int64_t> gridRanks(StringRef spec) {
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

std::string partitionerGrid(StringRef spec) {
  std::string error;
  FailureOr<mlir::braid::Grid> grid = mlir::braid::Grid::parse(spec, error);
  if (failed(grid))
    return spec.str();
  std::string out;
  for (auto [name, size] : llvm::zip(grid->names, grid->sizes))
    out += (out.empty() ? "" : ",") + name + "=" + std::to_string(size);
  return out;
}

std::string stageFile(StringRef file, size_t stage) {
  std::string suffix = ".stage" + std::to_string(stage);
  StringRef name = llvm::sys::path::filename(file);
  size_t dot = name.rfind('.');
  if (dot == StringRef::npos || dot == 0)
    return (file + suffix).str();
  size_t at = file.size() - name.size() + dot;
  return (file.take_front(at) + suffix + file.drop_front(at)).str();
}

FailureOr<SmallVector<std::string>> programEntries(ModuleOp module) {
  SmallVector<std::string> names;
  for (func::FuncOp program : mlir::braid::getPrograms(module))
    names.push_back(program.getSymName().str());
  if (!module->hasAttr(::braid::kPipelineEntriesAttr)) {
    if (names.size() != 1) {
      module.emitError() << "expected one program (an entry point marked "
                            "braid.entry), found "
                         << names.size();
      return failure();
    }
    return names;
  }
  int64_t pp = 1;
  FailureOr<std::optional<mlir::braid::Grid>> grid =
      mlir::braid::Grid::of(module);
  if (failed(grid))
    return failure();
  if (*grid)
    if (std::optional<int16_t> axis = (*grid)->find("pp"))
      pp = (*grid)->sizes[*axis];
  if (int64_t(names.size()) != pp) {
    fail("the pipelined program has " + Twine(names.size()) +
         " stages, not one per coordinate of its grid's pp axis (" + Twine(pp) +
         ")");
    return failure();
  }
  return names;
}

void referencePipeline(const TrainingPipelineOptions &pipeline,
                       TrainingPipelineOptions &reference) {
  reference.copyOptionValuesFrom(pipeline);
  // The reference takes the whole batch at once: micro-batches accumulate
  // the same gradients, so one micro-batch is what they are measured against.
  TrainingPipelineOptions defaults;
  reference.grid = "";
  reference.microbatches = defaults.microbatches.getValue();
  reference.schedule = defaults.schedule.getValue();
  reference.virtualStages = defaults.virtualStages.getValue();
  reference.ppLayout = ArrayRef<int64_t>(*defaults.ppLayout);
}

/// Runs the training pipeline on `module` (and `breakProgram`'s passes
/// between its partitioning and its lowering to dist ops).
static LogicalResult lower(ModuleOp module,
                           const TrainingPipelineOptions &pipeline,
                           const CompileOptions &options, bool inject) {
  TrainingPipelineOptions first;
  first.copyOptionValuesFrom(pipeline);
  // A fault is injected into the partitioned braid and shard ops, before
  // their transfers become dist ops.
  first.lowerToDist = !inject;
  // Dumps of a partitioned run's activations are global tensors.
  first.recordLayouts = true;
  PassManager pm(module.getContext());
  std::string error;
  if (failed(::braid::buildTrainingPipeline(pm, first, &error))) {
    fail(error.empty() ? "cannot build the pass pipeline" : error);
    return failure();
  }
  if (failed(pm.run(module)))
    return failure();
  if (!inject)
    return success();
  PassManager broken(module.getContext());
  options.breakProgram(broken);
  ::braid::buildDistLowering(broken, pipeline);
  return broken.run(module);
}

FailureOr<SmallVector<std::string>>
compileModel(ModuleOp module, const TrainingPipelineOptions &given,
             const CompileOptions &options, bool reference, int64_t ranks,
             bool emit, StringRef elementType) {
  TrainingPipelineOptions pipeline;
  if (reference)
    referencePipeline(given, pipeline);
  else
    pipeline.copyOptionValuesFrom(given);
  pipeline.dtype = *mlir::braid::symbolizePrecision(elementType);
  // The program is scheduled for the links it runs on.
  const char *links = std::getenv("BRAID_LINK");
  pipeline.scheduleLink = links && !reference ? links : "";
  // How a grid is used means nothing without one (the 1-rank reference).
  if (pipeline.grid.empty()) {
    pipeline.zero = 0;
    pipeline.sequenceParallel = false;
  }
  const bool inject = !reference && options.breakProgram;
  {
    // GPT-2 small spends about 25 s here.
    std::optional<Progress::Ticker> ticker;
    if (options.progress)
      ticker.emplace(*options.progress, reference
                                            ? "compiling the 1-rank reference"
                                            : "compiling the pipeline");
    if (failed(lower(module, pipeline, options, inject)))
      return failure();
  }

  FailureOr<SmallVector<std::string>> entries =
      programEntries(module);
  if (failed(entries))
    return failure();
  // One file per program when there are several (micro-batching alone
  // leaves one).
  const bool staged = entries->size() > 1;
  // Every source is emitted (and written) before any is built, so that
  // --emit-cpp shows all stages when one fails to build. All of them come
  // from one call, as from `braid-translate --braid-output-dir`: what the
  // stages share is computed once.
  if (options.progress)
    options.progress->phase("emitting C++");
  ::braid::CppEmitOptions emitOptions;
  emitOptions.rollRepeats = options.rollRepeats;
  FailureOr<SmallVector<::braid::EmittedProgram>> emitted =
      ::braid::emitProgramsAsCpp(module, emitOptions);
  if (failed(emitted))
    return failure();
  SmallVector<std::string> sources;
  std::string error;
  for (auto [stage, program] : llvm::enumerate(*emitted)) {
    std::string &source = sources.emplace_back(std::move(program.source));
    if (emit && !options.emitCpp.empty()) {
      auto out = openOutputFile(
          staged ? stageFile(options.emitCpp, stage) : options.emitCpp, &error);
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
    std::optional<Progress::Ticker> ticker;
    if (options.progress)
      ticker.emplace(*options.progress,
                     sources.size() > 1
                         ? "building " + std::to_string(sources.size()) +
                               " programs"
                         : std::string("building program"));
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
    for (auto [source, binary] : llvm::zip_equal(sources, built))
      pool.async([&, &source = source, &binary = binary] {
        binary =
            buildProgram(source, options.backend, ranks > 1, options.quiet);
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

} // namespace braid::driver
