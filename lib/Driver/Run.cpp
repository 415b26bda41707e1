//===- Run.cpp - compile a model, run it, verify it -----------------------===//

#include "braid/Driver/Run.h"
#include "braid/Driver/Launch.h"
#include "braid/Driver/Progress.h"
#include "braid/Driver/Verify.h"
#include "braid/link_model.h"

#include "dialects/braid/IR/BraidOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;

namespace braid::driver {

LogicalResult checkOptions(const TrainingPipelineOptions &pipeline,
                           const RunOptions &options, bool warn) {
  auto bad = [](const Twine &message) {
    fail(message);
    return failure();
  };
  auto name = [&](StringRef option) { return spellOption(option, options.spelling); };
  if (!pipeline.grid.empty() && failed(gridRanks(pipeline.grid)))
    return failure();
  if (options.verify && options.verifyFrom.empty() && pipeline.grid.empty() &&
      pipeline.microbatches == 1)
    return bad(name("verify") + " compares a partitioned or micro-batched run with "
               "the 1-rank run: it needs " + name("grid") + " or " + name("microbatches"));
  if (options.cpuThreads < 0)
    return bad(name("cpu-threads") + " must be at least 1 (or 0: cores / ranks), found " +
               Twine(options.cpuThreads));
  if (options.checkpointEvery < 0)
    return bad(name("checkpoint-every") + " must be at least 0, found " +
               Twine(options.checkpointEvery));
  if (!(options.verifyTolerance >= 0) ||
      !std::isfinite(options.verifyTolerance))
    return bad(name("verify-tolerance") + " must be a non-negative number");
  if (options.evalDataFile.empty() != (options.evalEvery == 0))
    return bad(name("eval-data") + " and " + name("eval-every") +
               " (at least 1) go together");
  if (options.evalEvery < 0 || options.evalBatches < 1)
    return bad(name("eval-every") + " must be at least 1 and " + name("eval-batches") +
               " at least 1");
  if (!options.dataDtype.empty() && options.dataDtype != "uint16" &&
      options.dataDtype != "uint32")
    return bad(name("data-dtype") + " is uint16 or uint32, found '" + options.dataDtype + "'");
  if ((!options.dataDtype.empty() || options.shuffle) && options.dataFile.empty())
    return bad(name(options.shuffle ? "shuffle" : "data-dtype") + " needs " + name("data"));
  if (!options.initFrom.empty() && !options.resumeFrom.empty())
    return bad(name("init-from") + " starts from another model's weights, " + name("resume") +
               " from a checkpoint's: give one of them");
  // --steps 0 builds and initializes and runs nothing: what --dump of the
  // initial state is for, and nothing else.
  if (options.steps < 0 || (options.steps == 0 && options.dumpDir.empty()))
    return bad(name("steps") + " must be at least 1 (the last step to run), found " +
               Twine(options.steps) + "; 0 runs no step, only with " + name("dump") +
               " DIR, which then holds the initial state");
  // The links the programs are scheduled for (Compile.cpp passes them on).
  if (const char *links = std::getenv("BRAID_LINK")) {
    std::string why;
    ::braid::link::Links parsed;
    if (*links && !::braid::link::parse(links, &parsed, &why))
      return bad("BRAID_LINK='" + Twine(links) + "': " + why);
  }
  // The pipeline's options, in the caller's terms.
  OptionProblems problems = checkTrainingPipelineOptions(pipeline, options.spelling);
  if (warn)
    for (const std::string &warning : problems.warnings)
      fail("warning: " + warning);
  if (!problems.error.empty())
    return bad(problems.error);
  return success();
}

/// How the lowered 1-rank program updates each parameter (what --verify
/// replays of step 1).
static std::vector<UpdateRule> updateRules(ModuleOp module) {
  std::vector<UpdateRule> rules;
  module.walk([&](Operation *op) {
    UpdateRule rule;
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

namespace {
/// The programs of one run and the arguments they all take.
struct Programs {
  SmallVector<std::string> binaries;
  SmallVector<std::string> args;
};
} // namespace

/// Runs the built programs of `options.verify`: the partitioned ones, the
/// 1-rank reference (and at a reduced precision the 1-rank program at f32),
/// each dumping step 1, and prints the verdict; returns the exit code.
static int verifyRuns(const RunOptions &options, int64_t ranks, StringRef grid,
                      StringRef dtype, double maxNorm, bool routed,
                      const std::string &logits, ModuleOp reference,
                      Programs partitionedRun, Programs referenceRun,
                      Programs exactRun) {
  const bool rounded = dtype != "f32";
  const bool quiet = options.compile.quiet;
  // Both runs dump; the partitioned one into --dump DIR when given (the
  // 1-rank one then into DIR/reference), else into temporary directories.
  std::string partitionedDump =
                  options.verifyFrom.empty() ? options.dumpDir : options.verifyFrom,
              referenceDump, exactDump;
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
  partitionedRun.args.append(
      {"--dump", partitionedDump, "--dump-first-step", "--check-replicas"});
  referenceRun.args.append({"--dump", referenceDump, "--dump-first-step"});
  exactRun.args.append({"--dump", exactDump, "--dump-first-step"});

  RunRecord partitioned{"", partitionedDump};
  RunRecord single{"", referenceDump};
  RunRecord f32{"", exactDump};
  // Each run's stdout (its losses) beside its dumps: what --verify-from reads.
  const bool kept = temporary.empty();
  auto keep = [&](const RunRecord &run) -> bool {
    std::error_code ec;
    llvm::raw_fd_ostream out(run.dumpDir + "/stdout.txt", ec);
    if (ec)
      fail("verify: cannot write " + run.dumpDir + "/stdout.txt: " + ec.message());
    else
      out << run.stdoutText;
    return !ec;
  };
  auto read = [&](RunRecord &run) -> bool {
    auto text = llvm::MemoryBuffer::getFile(run.dumpDir + "/stdout.txt");
    if (!text) {
      fail("verify: no " + run.dumpDir + "/stdout.txt (the run's stdout): " +
           text.getError().message());
      return false;
    }
    run.stdoutText = (*text)->getBuffer().str();
    return true;
  };
  const bool given = !options.verifyFrom.empty();
  if (given) {
    if (!read(partitioned) || !read(single) || (rounded && !read(f32)))
      return 1;
  } else {
    if (int rc = runCaptured(partitionedRun.binaries, ranks, grid,
                             partitionedRun.args, partitioned.stdoutText,
                             /*echo=*/true))
      return rc;
    if (!quiet)
      llvm::errs() << "braid-run: verify: the unpartitioned program on 1 rank\n";
    if (int rc = runCaptured(referenceRun.binaries, 1, grid, referenceRun.args,
                             single.stdoutText, /*echo=*/false)) {
      fail("verify: the 1-rank run failed");
      return rc;
    }
    if (kept && (!keep(partitioned) || !keep(single)))
      return 1;
  }
  const int steps = options.steps;
  Bounds bounds = Bounds::uniform(options.verifyTolerance);
  std::vector<UpdateRule> rules = updateRules(reference);
  std::string error;
  if (rounded) {
    if (!quiet)
      llvm::errs() << "braid-run: verify: the unpartitioned program on 1 "
                      "rank at f32\n";
    if (!given) {
      if (int rc = runCaptured(exactRun.binaries, 1, grid, exactRun.args,
                               f32.stdoutText, /*echo=*/false)) {
        fail("verify: the 1-rank f32 run failed");
        return rc;
      }
      if (kept && !keep(f32))
        return 1;
    }
    if (!roundingBounds(single, f32, steps, rules, maxNorm, logits,
                        options.verifyTolerance, &bounds, &error))
      return fail("verify: " + error);
  }
  Verdict verdict;
  if (!compareRuns(partitioned, single, steps, rules, maxNorm, &verdict,
                   &error))
    return fail("verify: " + error);
  const bool pass =
      reportVerdict(llvm::outs(), verdict, bounds, steps, rounded ? dtype : "",
                    routed, options.verifyTolerance);
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

int runModel(ModuleOp module, const TrainingPipelineOptions &given,
             const RunOptions &options) {
  if (failed(checkOptions(given, options)))
    return 1;
  int64_t ranks = 1;
  TrainingPipelineOptions pipeline;
  pipeline.copyOptionValuesFrom(given);
  if (!pipeline.grid.empty()) {
    ranks = *gridRanks(pipeline.grid);
    pipeline.grid = partitionerGrid(pipeline.grid);
  }
  const std::string grid = pipeline.grid;
  const std::string dtype = mlir::braid::stringifyPrecision(pipeline.dtype).str();

  // The 1-rank program --verify compares with: the same model, no grid.
  // At a reduced precision, also at f32: what rounding does to the model
  // gives the bounds (Verify.h).
  OwningOpRef<ModuleOp> reference, exact;
  const bool rounded = options.verify && dtype != "f32";
  std::string logits;
  bool routed = false;
  if (options.verify)
    reference = module.clone();
  if (rounded) {
    exact = module.clone();
    logits = lossLogits(module);
    module.walk([&](mlir::braid::RouterOp) { routed = true; });
  }

  // --verify-from judges runs made elsewhere: only the 1-rank program is
  // lowered here, for the update rules it replays.
  FailureOr<SmallVector<std::string>> binaries = SmallVector<std::string>();
  if (options.verifyFrom.empty())
    binaries = compileModel(module, pipeline, options.compile,
                            /*reference=*/false, ranks, /*emit=*/true, dtype);
  if (failed(binaries))
    return 1;
  FailureOr<SmallVector<std::string>> referenceBinaries, exactBinaries;
  if (options.verify) {
    referenceBinaries =
        compileModel(*reference, pipeline, options.compile,
                     /*reference=*/true, 1, /*emit=*/false, dtype);
    if (failed(referenceBinaries))
      return 1;
  }
  if (rounded && options.verifyFrom.empty()) {
    exactBinaries = compileModel(*exact, pipeline, options.compile,
                                 /*reference=*/true, 1, /*emit=*/false, "f32");
    if (failed(exactBinaries))
      return 1;
  }
  if (options.compileOnly)
    return 0;

  SmallVector<std::string> runArgs = {"--steps", std::to_string(options.steps)};
  // A resumed run takes the checkpoint's seed unless one is given.
  if (options.seed)
    runArgs.append({"--seed", std::to_string(*options.seed)});
  if (options.compile.quiet)
    runArgs.push_back("--quiet");
  // The program reports its initialization's progress too, when braid-run
  // reports its own (the Progress object is always there; it may be off).
  if (options.compile.progress && options.compile.progress->isEnabled())
    runArgs.push_back("--progress");
  if (options.cpuThreads > 0)
    runArgs.append({"--threads", std::to_string(options.cpuThreads)});
  if (!options.resumeFrom.empty())
    runArgs.append({"--resume", options.resumeFrom});
  if (!options.initFrom.empty())
    runArgs.append({"--init-from", options.initFrom});
  // The data reaches every run alike: --verify compares batches of the same
  // windows.
  if (!options.dataFile.empty())
    runArgs.append({"--data", options.dataFile});
  if (!options.dataDtype.empty())
    runArgs.append({"--data-dtype", options.dataDtype});
  if (options.shuffle)
    runArgs.push_back("--shuffle");
  if (!options.evalDataFile.empty())
    runArgs.append({"--eval-data", options.evalDataFile, "--eval-every",
                    std::to_string(options.evalEvery), "--eval-batches",
                    std::to_string(options.evalBatches)});
  SmallVector<std::string> referenceArgs = runArgs;
  // Only the run being verified writes checkpoints.
  if (!options.checkpointDir.empty())
    runArgs.append({"--checkpoint-dir", options.checkpointDir,
                    "--checkpoint-every",
                    std::to_string(options.checkpointEvery)});
  if (!grid.empty())
    runArgs.append({"--grid", grid});
  if (!options.traceFile.empty())
    runArgs.append({"--trace", options.traceFile});
  if (options.compile.progress)
    options.compile.progress->phase(
        ranks > 1 ? "running on " + std::to_string(ranks) + " ranks"
                  : std::string("running"));
  if (!options.verify) {
    if (!options.dumpDir.empty())
      runArgs.append({"--dump", options.dumpDir});
    return runPrograms(*binaries, ranks, grid, runArgs);
  }
  return verifyRuns(
      options, ranks, grid, dtype, pipeline.maxNorm, routed, logits, *reference,
      {*binaries, runArgs}, {*referenceBinaries, referenceArgs},
      {exactBinaries.value_or(SmallVector<std::string>()), referenceArgs});
}

} // namespace braid::driver
