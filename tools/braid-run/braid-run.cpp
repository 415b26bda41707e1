//===- braid-run.cpp - compile a braid model and run it -------------------===//
//
//   braid-run model.mlir [--steps N] [--seed S] [--dtype f32|bf16]
//             [--dump DIR] [--trace FILE] [--backend cpu|cuda]
//
// Parses the model (keeping its SSA names as value names for dumps and
// traces), lowers it (expert FFNs expanded, optional bf16 storage), emits
// the program as C++ (braid-translate --braid-to-cpp), builds it against the
// runtime with the host compiler (or nvcc for --backend cuda), caches the
// binary by the hash of its source, and runs it: the program prints the
// loss of every step and its planned and measured peak memory.
//
//===----------------------------------------------------------------------===//

#include "braid/InitAllDialects.h"
#include "braid/Pipelines.h"
#include "braid/Target/Cpp.h"
#include "dialects/braid/Transforms/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/AsmParser/AsmParserState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

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

/// Runs `program` with `args`, output passed through; returns its exit code.
static int execute(StringRef program, ArrayRef<std::string> args) {
  SmallVector<StringRef> argv = {program};
  for (const std::string &arg : args)
    argv.push_back(arg);
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, {}, 0, 0,
                                     &error);
  if (rc < 0)
    llvm::errs() << "braid-run: cannot run " << program << ": " << error
                 << "\n";
  return rc;
}

/// The command that builds `source` into `binary` for the backend.
static FailureOr<SmallVector<std::string>>
buildCommand(StringRef source, StringRef binary, std::string &compiler) {
  std::string lib = BRAID_LIBRARY_DIR;
  SmallVector<std::string> args;
  if (backend == "cpu") {
    compiler = BRAID_HOST_CXX;
    args = {"-std=c++17", "-O2", "-I", BRAID_RUNTIME_INCLUDE_DIR,
            source.str(), "-o", binary.str(),
            lib + "/libbraid_runtime_main.a", lib + "/libbraid_kernels_cpu.a",
            lib + "/libbraid_runtime.a", "-lpthread"};
    return args;
  }
  if (backend == "cuda") {
#ifdef BRAID_NVCC
    compiler = BRAID_NVCC;
    // The source is saved as .cu, so nvcc compiles it as CUDA.
    args = {"-std=c++17", "-O2", "-ccbin", "g++-12",
            "-gencode", "arch=compute_90,code=sm_90", "-DBRAID_RUNTIME_CUDA",
            "-I", BRAID_RUNTIME_INCLUDE_DIR, source.str(), "-o", binary.str(), lib + "/libbraid_runtime_main_cuda.a",
            lib + "/libbraid_kernels_cuda.a", lib + "/libbraid_runtime.a",
            "-lcublasLt", "-lcudart", "-Xlinker", "-rpath," BRAID_CUDA_LIB_DIR};
#ifdef BRAID_NCCL_LIBRARY
    // main() of a CUDA build runs GPU ranks over NCCL (braid_comm_nccl).
    args.insert(args.begin() + (args.size() - 6), lib + "/libbraid_comm_nccl.a");
    args.append({"-L" BRAID_NCCL_LIB_DIR, "-lnccl", "-Xlinker", "-rpath," BRAID_NCCL_LIB_DIR});
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

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Braid: compile and run a model\n");

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

  PassManager pm(&context);
  ::braid::TrainingPipelineOptions pipeline;
  pipeline.entry = entry;
  pipeline.dtype = dtype;
  pipeline.optimizer = optimizer;
  pipeline.recompute = recompute;
  pipeline.lr = lr;
  pipeline.weightDecay = weightDecay;
  pipeline.maxNorm = maxNorm;
  if (failed(::braid::buildTrainingPipeline(pm, pipeline)))
    return 1;
  if (failed(pm.run(*module)))
    return 1;

  std::string source;
  llvm::raw_string_ostream os(source);
  if (failed(::braid::emitProgramAsCpp(*module, entry, os)))
    return 1;
  if (!emitCpp.empty()) {
    auto out = openOutputFile(emitCpp, &error);
    if (!out)
      return fail(error);
    out->os() << source;
    out->keep();
  }

  // Cache the binary by the hash of what builds it.
  std::string compiler;
  llvm::SmallString<128> cache;
  if (const char *dir = std::getenv("BRAID_RUN_CACHE"))
    cache = dir;
  else
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, cache),
        llvm::sys::path::append(cache, "braid-run-cache");
  if (std::error_code ec = llvm::sys::fs::create_directories(cache))
    return fail("cannot create " + cache + ": " + ec.message());
  // The key covers what the binary is built from: the source, the backend
  // and the identity (size, modification time) of the runtime libraries it
  // links, so that a rebuilt runtime never runs under a stale program.
  std::string identity = source + backend;
  {
    std::string compilerUnused;
    FailureOr<SmallVector<std::string>> args =
        buildCommand("source", "binary", compilerUnused);
    if (failed(args))
      return 1;
    for (const std::string &arg : *args) {
      llvm::sys::fs::file_status status;
      if (StringRef(arg).ends_with(".a") && !llvm::sys::fs::status(arg, status))
        identity += arg + ":" + std::to_string(status.getSize()) + ":" +
                    std::to_string(status.getLastModificationTime()
                                       .time_since_epoch()
                                       .count());
    }
  }
  std::string key = llvm::toHex(
      llvm::SHA256::hash(llvm::arrayRefFromStringRef(identity)),
      /*LowerCase=*/true);
  llvm::SmallString<128> base(cache);
  llvm::sys::path::append(base, key.substr(0, 24));
  std::string sourcePath = (base + (backend == "cuda" ? ".cu" : ".cpp")).str();
  std::string binary = (base + ".bin").str();
  if (!llvm::sys::fs::exists(binary)) {
    {
      auto out = openOutputFile(sourcePath, &error);
      if (!out)
        return fail(error);
      out->os() << source;
      out->keep();
    }
    FailureOr<SmallVector<std::string>> args =
        buildCommand(sourcePath, binary + ".tmp", compiler);
    if (failed(args))
      return 1;
    auto program = llvm::sys::findProgramByName(compiler);
    if (!program)
      return fail("cannot find the compiler " + compiler);
    if (!quiet)
      llvm::errs() << "braid-run: building " << binary << "\n";
    if (execute(*program, *args) != 0)
      return fail("building the program failed (source: " + sourcePath + ")");
    if (std::error_code ec = llvm::sys::fs::rename(binary + ".tmp", binary))
      return fail("cannot move the program into the cache: " + ec.message());
  }
  if (compileOnly)
    return 0;

  SmallVector<std::string> runArgs = {"--steps", std::to_string(steps),
                                      "--seed", std::to_string(seed)};
  if (!dumpDir.empty())
    runArgs.append({"--dump", dumpDir});
  if (!traceFile.empty())
    runArgs.append({"--trace", traceFile});
  if (quiet)
    runArgs.push_back("--quiet");
  return execute(binary, runArgs);
}
