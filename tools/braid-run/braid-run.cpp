//===- braid-run.cpp - compile a braid model and run it -------------------===//
//
//   braid-run model.mlir [--steps N] [--seed S] [--dtype f32|bf16]
//             [--dump DIR] [--trace FILE] [--backend cpu|cuda]
//             [--grid AXIS=SIZE,...] [--plan megatron|data] [--zero 0|1|2|3]
//             [--sequence-parallel] [--verify] [--verify-tolerance T]
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
//
// Running is Launch.cpp (mpirun when several ranks); comparing is Verify.cpp.
//
// --verify (needs --grid) also builds the unpartitioned program (no grid, the
// same other options), runs both with the same --seed and --steps and --dump
// (into temporary directories; the partitioned run into --dump DIR when given,
// the 1-rank run into DIR/reference), and prints
//   verify: loss <max over the steps of |a-b| / |b|>
//   verify: gradients <max over grad.<param> of max|a-b| / max|b|> (<worst>)
//   verify: parameters <max over updated.* of the same> (<worst>)
//   verify: left out (gradient vanishes in exact arithmetic): <params>
// (each tensor measured against its largest value, at least 1e-3 of the
// largest of its set; parameters whose 1-rank gradient is within 1e-6 of the
// largest gradient vanish in exact arithmetic and are only listed: their
// rounding-noise gradients make adaptive updates of lr either way)
//   verify: PASS            or            verify: FAIL (tolerance T)
// with b the 1-rank value (Verify.h); FAIL exits 1 (and keeps the temporary
// dumps, whose directories it names).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "NpyReader.h"
#include "Verify.h"

#include "braid/InitAllDialects.h"
#include "braid/Pipelines.h"
#include "braid/Target/Cpp.h"
#include "dialects/braid/Transforms/Passes.h"

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
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::init("-"));
static cl::opt<int> steps("steps", cl::desc("Steps to run"), cl::init(1));
static cl::opt<uint64_t> seed("seed", cl::desc("Initialization seed"),
                              cl::init(0));
static cl::opt<std::string> dtype("dtype",
                                  cl::desc("Float storage: f32 (as written) "
                                           "or bf16"),
                                  cl::init("f32"));
static cl::opt<std::string> dumpDir("dump",
                                    cl::desc("Write every named tensor as "
                                             ".npy into this directory"));
static cl::opt<std::string> traceFile("trace",
                                      cl::desc("Write a Perfetto/Chrome trace"));
static cl::opt<std::string> backend("backend", cl::desc("cpu or cuda"),
                                    cl::init("cpu"));
static cl::opt<std::string> entry("entry", cl::desc("Step function"),
                                  cl::init("step"));
static cl::opt<std::string> emitCpp("emit-cpp",
                                    cl::desc("Also write the generated C++ "
                                             "source to this file"));
static cl::opt<bool> compileOnly("compile-only",
                                 cl::desc("Build the program, do not run it"));
static cl::opt<std::string>
    optimizer("optimizer",
              cl::desc("Training: adamw or sgd; none runs the forward pass "
                       "only"),
              cl::init("adamw"));
static cl::opt<double> lr("lr", cl::desc("Learning rate"), cl::init(1e-3));
static cl::opt<double> weightDecay("weight-decay",
                                   cl::desc("Decoupled weight decay"),
                                   cl::init(0.1));
static cl::opt<double> adamEps("eps", cl::desc("AdamW epsilon"),
                               cl::init(1e-8));
static cl::opt<double> maxNorm("max-norm",
                               cl::desc("Clip gradients to this global norm "
                                        "(<= 0: no clipping)"),
                               cl::init(1.0));
static cl::opt<std::string>
    recompute("recompute",
              cl::desc("Activation recompute: none, selective or full"),
              cl::init("none"));
static cl::opt<bool> quiet("quiet", cl::desc("Only print the losses and "
                                             "peaks"));
static cl::opt<std::string>
    gridSpec("grid",
             cl::desc("Partition the program for this device grid, "
                      "AXIS=SIZE,... over dp, ep and tp (e.g. dp=2,tp=2), and "
                      "run it on that many ranks (mpirun when more than one)"));
static cl::opt<std::string>
    plan("plan",
         cl::desc("With --grid, how unannotated weights are sharded: megatron "
                  "(tensor, vocabulary and expert parallel) or data "
                  "(replicated)"),
         cl::init("megatron"));
static cl::opt<int> zeroStage("zero",
                              cl::desc("With --grid, the ZeRO stage over dp: "
                                       "0, 1 (optimizer state), 2 (+ "
                                       "gradients) or 3 (+ parameters)"),
                              cl::init(0));
static cl::opt<std::string> cpAttention(
    "cp-attention",
    cl::desc("Attention under a cp grid axis: allgather or ulysses"),
    cl::init("allgather"));
static cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    cl::desc("With --grid, shard norms and residuals over tp along the "
             "sequence"));
static cl::opt<bool> verifyRuns(
    "verify",
    cl::desc("With --grid: also run the unpartitioned program on one rank "
             "(same seed and steps) and compare losses, gradients and updated "
             "parameters; exit 1 when they differ by more than "
             "--verify-tolerance"));
static cl::opt<double>
    verifyTolerance("verify-tolerance",
                    cl::desc("Largest relative difference --verify accepts"),
                    cl::init(1e-5));

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

/// The linker arguments of MPI (configure-time FindMPI: the libraries with an
/// rpath to their directories, and its link flags); `nvcc` spells the rpath
/// for nvcc.
static FailureOr<SmallVector<std::string>> mpiLinkArgs(bool nvcc) {
#ifdef BRAID_MPI_LIBRARIES
  SmallVector<std::string> args;
  SmallVector<StringRef> items;
  StringRef(BRAID_MPI_LIBRARIES).split(items, '|', -1, /*KeepEmpty=*/false);
  llvm::StringSet<> dirs;
  for (StringRef lib : items) {
    args.push_back(lib.str());
    StringRef dir = llvm::sys::path::parent_path(lib);
    if (!dir.empty() && dirs.insert(dir).second) {
      if (nvcc)
        args.append({"-Xlinker", ("-rpath," + dir).str()});
      else
        args.push_back(("-Wl,-rpath," + dir).str());
    }
  }
  items.clear();
  StringRef(BRAID_MPI_LINK_FLAGS).split(items, '|', -1, false);
  for (StringRef flags : items) {
    SmallVector<StringRef> words;
    flags.split(words, ' ', -1, false);
    for (StringRef word : words)
      if (nvcc)
        args.append({"-Xlinker", word.str()});
      else
        args.push_back(word.str());
  }
  return args;
#else
  fail("running several ranks needs the MPI runtime (braid_runtime_mpi), "
       "which this build does not have: install MPI (e.g. libopenmpi-dev) and "
       "reconfigure");
  return failure();
#endif
}

/// The command that builds `source` into `binary` for the backend; `mpi`:
/// for several ranks started by mpirun.
static FailureOr<SmallVector<std::string>> buildCommand(StringRef source,
                                                        StringRef binary,
                                                        std::string &compiler,
                                                        bool mpi) {
  std::string lib = BRAID_LIBRARY_DIR;
  SmallVector<std::string> args;
  if (backend == "cpu") {
    compiler = BRAID_HOST_CXX;
    args = {"-std=c++17", "-O2", "-I",        BRAID_RUNTIME_INCLUDE_DIR,
            source.str(), "-o",  binary.str()};
    if (mpi) {
      FailureOr<SmallVector<std::string>> mpiArgs = mpiLinkArgs(false);
      if (failed(mpiArgs))
        return failure();
      args.append({lib + "/libbraid_runtime_main_mpi.a",
                   lib + "/libbraid_runtime_mpi.a",
                   lib + "/libbraid_kernels_cpu.a",
                   lib + "/libbraid_runtime.a"});
      args.append(mpiArgs->begin(), mpiArgs->end());
    } else {
      args.append({lib + "/libbraid_runtime_main.a",
                   lib + "/libbraid_kernels_cpu.a",
                   lib + "/libbraid_runtime.a"});
    }
    args.push_back("-lpthread");
    return args;
  }
  if (backend == "cuda") {
#ifdef BRAID_NVCC
    compiler = BRAID_NVCC;
    // The source is saved as .cu, so nvcc compiles it as CUDA.
    args = {"-std=c++17",
            "-O2",
            "-ccbin",
            "g++-12",
            "-gencode",
            "arch=compute_90,code=sm_90",
            "-DBRAID_RUNTIME_CUDA",
            "-I",
            BRAID_RUNTIME_INCLUDE_DIR,
            source.str(),
            "-o",
            binary.str()};
    if (mpi) {
      // GPU ranks under mpirun: NCCL communicators, the id through MPI.
#if defined(BRAID_NCCL_LIBRARY) && defined(BRAID_HAVE_MAIN_CUDA_MPI)
      FailureOr<SmallVector<std::string>> mpiArgs = mpiLinkArgs(true);
      if (failed(mpiArgs))
        return failure();
      args.append({lib + "/libbraid_runtime_main_cuda_mpi.a",
                   lib + "/libbraid_comm_nccl.a",
                   lib + "/libbraid_runtime_mpi.a"});
      args.append(mpiArgs->begin(), mpiArgs->end());
#else
      fail("GPU ranks need NCCL and MPI (braid_runtime_main_cuda_mpi), which "
           "this build does not have");
      return failure();
#endif
    } else {
      args.push_back(lib + "/libbraid_runtime_main_cuda.a");
#ifdef BRAID_NCCL_LIBRARY
      // main() of a CUDA build runs GPU ranks over NCCL (braid_comm_nccl).
      args.push_back(lib + "/libbraid_comm_nccl.a");
#endif
    }
    args.append({lib + "/libbraid_kernels_cuda.a", lib + "/libbraid_runtime.a",
                 "-lcublasLt", "-lcudart", "-Xlinker",
                 "-rpath," BRAID_CUDA_LIB_DIR});
#ifdef BRAID_NCCL_LIBRARY
    args.append({"-L" BRAID_NCCL_LIB_DIR, "-lnccl", "-Xlinker",
                 "-rpath," BRAID_NCCL_LIB_DIR});
#endif
    return args;
#else
    fail("this build has no CUDA runtime (CUDA was not found at configure "
         "time)");
    return failure();
#endif
  }
  fail("--backend must be cpu or cuda, found '" + backend + "'");
  return failure();
}

/// Lowers `module` for `grid` (empty: one rank, unpartitioned), emits it as
/// C++ (also into --emit-cpp when `emit`), and builds it into the cache
/// unless it is there; returns the binary.
static FailureOr<std::string> compile(ModuleOp module, StringRef grid,
                                      int64_t ranks, bool emit) {
  PassManager pm(module.getContext());
  ::braid::TrainingPipelineOptions pipeline;
  pipeline.entry = entry;
  pipeline.dtype = dtype;
  pipeline.optimizer = optimizer;
  pipeline.recompute = recompute;
  pipeline.lr = lr;
  pipeline.weightDecay = weightDecay;
  pipeline.maxNorm = maxNorm;
  pipeline.eps = adamEps;
  pipeline.grid = grid.str();
  pipeline.plan = plan;
  // How a grid is used means nothing without one (the 1-rank reference).
  pipeline.zero = grid.empty() ? 0 : zeroStage.getValue();
  pipeline.sequenceParallel = !grid.empty() && sequenceParallel;
  pipeline.cpAttention = cpAttention;
  if (failed(::braid::buildTrainingPipeline(pm, pipeline)))
    return failure();
  if (failed(pm.run(module)))
    return failure();

  std::string source, error;
  llvm::raw_string_ostream os(source);
  if (failed(::braid::emitProgramAsCpp(module, entry, os)))
    return failure();
  if (emit && !emitCpp.empty()) {
    auto out = openOutputFile(emitCpp, &error);
    if (!out) {
      fail(error);
      return failure();
    }
    out->os() << source;
    out->keep();
  }

  // Cache the binary by the hash of what builds it.
  const bool mpi = ranks > 1;
  llvm::SmallString<128> cache;
  if (const char *dir = std::getenv("BRAID_RUN_CACHE"))
    cache = dir;
  else
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, cache),
        llvm::sys::path::append(cache, "braid-run-cache");
  if (std::error_code ec = llvm::sys::fs::create_directories(cache)) {
    fail("cannot create " + cache + ": " + ec.message());
    return failure();
  }
  // The key covers what the binary is built from: the source, the compiler
  // and its whole command line (backend, runtime libraries, MPI's flags), and
  // the identity (size, modification time) of the libraries it links and the
  // runtime headers, so that a rebuilt runtime never runs under a stale
  // program.
  std::string identity = source + backend;
  {
    std::string compilerName;
    FailureOr<SmallVector<std::string>> args =
        buildCommand("source", "binary", compilerName, mpi);
    if (failed(args))
      return failure();
    identity += "\n" + compilerName;
    for (const std::string &arg : *args) {
      identity += "\n" + arg;
      llvm::sys::fs::file_status status;
      if ((StringRef(arg).ends_with(".a") || StringRef(arg).contains(".so")) &&
          !llvm::sys::fs::status(arg, status))
        identity +=
            ":" + std::to_string(status.getSize()) + ":" +
            std::to_string(
                status.getLastModificationTime().time_since_epoch().count());
    }
  }
  // The runtime headers the source includes (braid/runtime.h, codegen.h),
  // in a stable order.
  std::vector<std::string> headers;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator
           it(BRAID_RUNTIME_INCLUDE_DIR, ec),
       end;
       it != end && !ec; it.increment(ec)) {
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(it->path(), status) &&
        status.type() == llvm::sys::fs::file_type::regular_file)
      headers.push_back(
          it->path() + ":" + std::to_string(status.getSize()) + ":" +
          std::to_string(
              status.getLastModificationTime().time_since_epoch().count()));
  }
  llvm::sort(headers);
  for (const std::string &header : headers)
    identity += "\n" + header;
  std::string key = llvm::toHex(
      llvm::SHA256::hash(llvm::arrayRefFromStringRef(identity)),
      /*LowerCase=*/true);
  llvm::SmallString<128> base(cache);
  llvm::sys::path::append(base, key.substr(0, 24));
  std::string sourcePath = (base + (backend == "cuda" ? ".cu" : ".cpp")).str();
  std::string binary = (base + ".bin").str();
  if (llvm::sys::fs::exists(binary))
    return binary;
  {
    auto out = openOutputFile(sourcePath, &error);
    if (!out) {
      fail(error);
      return failure();
    }
    out->os() << source;
    out->keep();
  }
  std::string compiler;
  FailureOr<SmallVector<std::string>> args =
      buildCommand(sourcePath, binary + ".tmp", compiler, mpi);
  if (failed(args))
    return failure();
  auto program = llvm::sys::findProgramByName(compiler);
  if (!program) {
    fail("cannot find the compiler " + compiler);
    return failure();
  }
  if (!quiet)
    llvm::errs() << "braid-run: building " << binary << "\n";
  if (::braid::run::execute(*program, *args) != 0) {
    fail("building the program failed (source: " + sourcePath + ")");
    return failure();
  }
  if (std::error_code ec = llvm::sys::fs::rename(binary + ".tmp", binary)) {
    fail("cannot move the program into the cache: " + ec.message());
    return failure();
  }
  return binary;
}

static std::string formatDifference(double d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", d);
  return text;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Braid: compile and run a model\n");

  // The options braid-run itself acts on, checked before any work.
  int64_t ranks = 1;
  if (gridSpec.getNumOccurrences() && gridSpec.empty())
    return fail("--grid needs AXIS=SIZE[,AXIS=SIZE...]");
  if (!gridSpec.empty()) {
    FailureOr<int64_t> n = gridRanks(gridSpec);
    if (failed(n))
      return 1;
    ranks = *n;
  }
  if (verifyRuns && gridSpec.empty())
    return fail("--verify compares a partitioned run with the 1-rank run: it "
                "needs --grid");
  if (!(verifyTolerance >= 0) || !std::isfinite(verifyTolerance))
    return fail("--verify-tolerance must be a non-negative number");
  if (zeroStage < 0 || zeroStage > 3)
    return fail("--zero must be 0, 1, 2 or 3, found " +
                Twine(zeroStage.getValue()));
  if (plan != "megatron" && plan != "data")
    return fail("--plan must be megatron or data, found '" + plan + "'");

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
  OwningOpRef<ModuleOp> reference;
  if (verifyRuns)
    reference = module->clone();

  FailureOr<std::string> binary =
      compile(*module, gridSpec, ranks, /*emit=*/true);
  if (failed(binary))
    return 1;
  FailureOr<std::string> referenceBinary;
  if (verifyRuns) {
    referenceBinary = compile(*reference, "", 1, /*emit=*/false);
    if (failed(referenceBinary))
      return 1;
  }
  if (compileOnly)
    return 0;

  SmallVector<std::string> runArgs = {"--steps", std::to_string(steps),
                                      "--seed", std::to_string(seed)};
  if (quiet)
    runArgs.push_back("--quiet");
  SmallVector<std::string> referenceArgs = runArgs;
  if (!gridSpec.empty())
    runArgs.append({"--grid", gridSpec});
  if (!traceFile.empty())
    runArgs.append({"--trace", traceFile});
  if (!verifyRuns) {
    if (!dumpDir.empty())
      runArgs.append({"--dump", dumpDir});
    return ::braid::run::runProgram(*binary, ranks, gridSpec, runArgs);
  }

  // --verify: both runs dump; the partitioned one into --dump DIR when given
  // (the 1-rank one then into DIR/reference), else into temporary directories.
  std::string partitionedDump = dumpDir, referenceDump;
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
        !scratch(referenceDump, "braid-verify-1rank"))
      return 1;
  } else {
    referenceDump = partitionedDump + "/reference";
  }
  runArgs.append({"--dump", partitionedDump});
  referenceArgs.append({"--dump", referenceDump});

  ::braid::run::RunRecord partitioned{"", partitionedDump};
  ::braid::run::RunRecord single{"", referenceDump};
  if (int rc = ::braid::run::runCaptured(*binary, ranks, gridSpec, runArgs, partitioned.stdoutText,
                           /*echo=*/true))
    return rc;
  if (!quiet)
    llvm::errs() << "braid-run: verify: the unpartitioned program on 1 rank\n";
  if (int rc = ::braid::run::runCaptured(*referenceBinary, 1, gridSpec, referenceArgs,
                           single.stdoutText, /*echo=*/false)) {
    fail("verify: the 1-rank run failed");
    return rc;
  }
  ::braid::run::Verdict verdict;
  if (!::braid::run::compareRuns(partitioned, single, steps, &verdict, &error))
    return fail("verify: " + error);
  auto worst = [](int count, const std::string &name) {
    return count ? " (" + name + ")" : std::string(" (none)");
  };
  llvm::outs() << "verify: loss " << formatDifference(verdict.loss) << "\n"
               << "verify: gradients " << formatDifference(verdict.gradients)
               << worst(verdict.numGradients, verdict.worstGradient) << "\n"
               << "verify: parameters " << formatDifference(verdict.parameters)
               << worst(verdict.numParameters, verdict.worstParameter) << "\n";
  if (!verdict.vanishing.empty())
    llvm::outs() << "verify: left out (gradient vanishes in exact arithmetic): "
                 << llvm::join(verdict.vanishing, ", ") << "\n";
  if (verdict.passes(verifyTolerance)) {
    llvm::outs() << "verify: PASS\n";
    llvm::outs().flush();
    for (const std::string &dir : temporary)
      llvm::sys::fs::remove_directories(dir);
    return 0;
  }
  llvm::outs() << "verify: FAIL (tolerance "
               << formatDifference(verifyTolerance) << ")\n";
  llvm::outs().flush();
  if (!temporary.empty())
    llvm::errs() << "braid-run: verify: dumps kept in " << partitionedDump
                 << " (partitioned) and " << referenceDump << " (1 rank)\n";
  return 1;
}
