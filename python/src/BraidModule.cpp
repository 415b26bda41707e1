//===- BraidModule.cpp - braid._braid: nanobind bindings of the C API -----===//
//
// A thin layer over include/braid-c and MLIR's C API: a Module owns its
// context and module, every call that may print (diagnostics, the plan,
// the programs the driver runs) runs with the process's stdout and stderr
// captured, and returns what they received beside its result. Python
// (braid/api.py) turns those into results and exceptions.
//
//===----------------------------------------------------------------------===//

#include "braid-c/Dialects.h"
#include "braid-c/Driver.h"
#include "braid-c/Passes.h"
#include "braid-c/Pipelines.h"
#include "braid-c/Target.h"
#include "braid-c/Version.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace nb = nanobind;

namespace {

/// Appends a C API callback's text to a std::string.
void appendTo(MlirStringRef text, void *userData) {
  static_cast<std::string *>(userData)->append(text.data, text.length);
}

MlirStringRef ref(const std::string &s) {
  return mlirStringRefCreate(s.data(), s.size());
}

/// Redirects file descriptors 1 and 2 into temporary files while alive:
/// the C++ side prints to llvm::outs()/errs() and the driver's programs
/// inherit the descriptors, so this is the one place all of it arrives.
/// The descriptors are the process's: one capture at a time (a run releases
/// the GIL), and what other threads print meanwhile is captured too.
class Capture {
public:
  Capture() : lock(mutex()) {
    std::fflush(stdout);
    std::fflush(stderr);
    for (int fd : {1, 2}) {
      Stream &s = streams[fd - 1];
      s.file = std::tmpfile();
      if (!s.file)
        throw std::runtime_error("braid: cannot create a temporary file");
      s.saved = ::dup(fd);
      ::dup2(::fileno(s.file), fd);
    }
  }
  ~Capture() { restore(); }

  /// Restores the descriptors; returns what fds 1 and 2 received.
  std::pair<std::string, std::string> finish() {
    restore();
    return {streams[0].text, streams[1].text};
  }

private:
  struct Stream {
    std::FILE *file = nullptr;
    int saved = -1;
    std::string text;
  };

  void restore() {
    if (restored)
      return;
    restored = true;
    std::fflush(stdout);
    std::fflush(stderr);
    for (int fd : {1, 2}) {
      Stream &s = streams[fd - 1];
      if (s.saved >= 0) {
        ::dup2(s.saved, fd);
        ::close(s.saved);
      }
      if (s.file) {
        std::rewind(s.file);
        char buffer[65536];
        size_t n;
        while ((n = std::fread(buffer, 1, sizeof buffer, s.file)) > 0)
          s.text.append(buffer, n);
        std::fclose(s.file);
        s.file = nullptr;
      }
    }
  }

  static std::mutex &mutex() {
    static std::mutex m;
    return m;
  }

  std::lock_guard<std::mutex> lock;
  Stream streams[2];
  bool restored = false;
};

/// The training pipeline's options (braid-opt's option text).
class PipelineOptions {
public:
  PipelineOptions() : options(braidTrainingPipelineOptionsCreate()) {}
  ~PipelineOptions() { braidTrainingPipelineOptionsDestroy(options); }
  PipelineOptions(const PipelineOptions &) = delete;
  PipelineOptions &operator=(const PipelineOptions &) = delete;

  /// (ok, stderr): a bad value leaves the options unchanged.
  std::tuple<bool, std::string> parse(const std::string &text) {
    Capture capture;
    bool ok = mlirLogicalResultIsSuccess(
        braidTrainingPipelineOptionsParse(options, ref(text)));
    return {ok, capture.finish().second};
  }

  std::string str() const {
    std::string text;
    braidTrainingPipelineOptionsPrint(options, appendTo, &text);
    return text;
  }

  BraidTrainingPipelineOptions options;
};

/// braidServeModel's options with owned strings: Python sets the fields by
/// name, the others keep braidServeOptionsGetDefault's values.
struct ServeOptions {
  ServeOptions() : options(braidServeOptionsGetDefault()) {}

  /// The C struct, its strings pointing into this object.
  BraidServeOptions get() const {
    BraidServeOptions c = options;
    c.requestsFile = ref(requestsFile);
    c.outputFile = ref(outputFile);
    return c;
  }

  std::string requestsFile, outputFile;
  BraidServeOptions options;
};

/// A context with Braid's dialects and one module parsed from text.
class Module {
public:
  Module() {
    braidRegisterAllPasses();
    context = mlirContextCreate();
    MlirDialectRegistry registry = mlirDialectRegistryCreate();
    braidRegisterAllDialects(registry);
    mlirContextAppendDialectRegistry(context, registry);
    mlirDialectRegistryDestroy(registry);
    mlirContextLoadAllAvailableDialects(context);
    module = mlirModuleCreateEmpty(mlirLocationUnknownGet(context));
  }
  ~Module() {
    mlirModuleDestroy(module);
    mlirContextDestroy(context);
  }
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// (ok, stderr): parses `source` as braidParseModel does (ops named after
  /// the source's SSA names), replacing this module.
  std::tuple<bool, std::string> parse(const std::string &source,
                                      const std::string &name) {
    Capture capture;
    MlirModule parsed = braidParseModel(context, ref(source), ref(name));
    std::string err = capture.finish().second;
    if (mlirModuleIsNull(parsed))
      return {false, err};
    mlirModuleDestroy(module);
    module = parsed;
    return {true, err};
  }

  std::string str(bool debugInfo) const {
    std::string text;
    MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
    mlirOpPrintingFlagsEnableDebugInfo(flags, debugInfo, /*prettyForm=*/false);
    mlirOperationPrintWithFlags(mlirModuleGetOperation(module), flags,
                                appendTo, &text);
    mlirOpPrintingFlagsDestroy(flags);
    return text;
  }

  /// (ok, stdout, stderr): lowers the module in place with the training
  /// pipeline.
  std::tuple<bool, std::string, std::string>
  lower(const PipelineOptions &options) {
    Capture capture;
    bool ok = mlirLogicalResultIsSuccess(
        braidRunTrainingPipeline(module, options.options));
    auto [out, err] = capture.finish();
    return {ok, out, err};
  }

  /// (ok, stdout, stderr): runs a textual pass pipeline on the module
  /// (`builtin.module(...)`), e.g. a printer pass whose report is stdout.
  std::tuple<bool, std::string, std::string>
  runPasses(const std::string &pipeline) {
    Capture capture;
    MlirPassManager pm = mlirPassManagerCreate(context);
    std::string parseError;
    bool ok = mlirLogicalResultIsSuccess(mlirParsePassPipeline(
        mlirPassManagerGetAsOpPassManager(pm), ref(pipeline), appendTo,
        &parseError));
    if (ok)
      ok = mlirLogicalResultIsSuccess(
          mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module)));
    mlirPassManagerDestroy(pm);
    auto [out, err] = capture.finish();
    return {ok, out, parseError + err};
  }

  /// (ok, plan, stderr): braidPrintPlan's report of a lowered module.
  std::tuple<bool, std::string, std::string>
  printPlan(const std::string &passOptions) {
    Capture capture;
    bool ok =
        mlirLogicalResultIsSuccess(braidPrintPlan(module, ref(passOptions)));
    auto [out, err] = capture.finish();
    return {ok, out, err};
  }

  /// (ok, C++, stderr): the program named `program` (one of programs()).
  std::tuple<bool, std::string, std::string> emitCpp(const std::string &program,
                                                     bool rollRepeats) {
    Capture capture;
    std::string source;
    bool ok = mlirLogicalResultIsSuccess(
        braidEmitCpp(module, ref(program), rollRepeats, appendTo, &source));
    return {ok, source, capture.finish().second};
  }

  /// The names of the module's programs (braidGetPrograms): a pipelined
  /// module's ranks' steps, else its entry points.
  std::vector<std::string> programs() const {
    std::vector<std::string> names;
    braidGetPrograms(
        module,
        [](MlirStringRef name, void *out) {
          static_cast<std::vector<std::string> *>(out)->emplace_back(name.data,
                                                                     name.length);
        },
        &names);
    return names;
  }

  /// (exit code, stdout, stderr): braidRunModel, lowering the module in
  /// place; stdout holds the programs' "step K loss X" lines and the
  /// verdict of verify.
  std::tuple<int, std::string, std::string>
  run(const PipelineOptions &options, int steps, bool verify,
      double verifyTolerance, const std::string &dumpDir,
      const std::string &traceFile, const std::string &backend,
      int64_t seed, bool quiet, const std::string &initFrom,
      const std::string &dataFile) {
    BraidRunOptions run = braidRunOptionsGetDefault();
    run.backend = ref(backend);
    run.initFrom = ref(initFrom);
    run.dataFile = ref(dataFile);
    run.steps = steps;
    run.verify = verify;
    run.verifyTolerance = verifyTolerance;
    run.dumpDir = ref(dumpDir);
    run.traceFile = ref(traceFile);
    run.quiet = quiet;
    if (seed >= 0) {
      run.hasSeed = true;
      run.seed = static_cast<uint64_t>(seed);
    }
    int rc;
    std::string out, err;
    {
      // The programs run long: other Python threads may go on meanwhile.
      nb::gil_scoped_release release;
      Capture capture;
      rc = braidRunModel(module, options.options, &run);
      std::tie(out, err) = capture.finish();
    }
    return {rc, out, err};
  }

  /// The run options generate() and serve() share (seed < 0: the default).
  /// `backend` and `initFrom` must outlive the returned options (they refer
  /// to them).
  static BraidRunOptions inferenceRunOptions(bool verify, const std::string &backend,
                                             int64_t seed, bool quiet,
                                             const std::string &initFrom) {
    BraidRunOptions run = braidRunOptionsGetDefault();
    run.backend = ref(backend);
    run.initFrom = ref(initFrom);
    run.verify = verify;
    run.quiet = quiet;
    if (seed >= 0) {
      run.hasSeed = true;
      run.seed = static_cast<uint64_t>(seed);
    }
    return run;
  }

  /// (exit code, stdout, stderr): braidGenerateModel, deriving the
  /// inference programs in place; stdout holds a "request R: ..." line per
  /// request, the summary and the verdict of verify.
  std::tuple<int, std::string, std::string>
  generate(const PipelineOptions &options, int64_t tokens,
           const std::string &promptsFile, int64_t batch, int64_t context,
           double temperature, int64_t topK, double topP, bool verify,
           const std::string &backend, int64_t seed, bool quiet,
           const std::string &initFrom) {
    BraidRunOptions run = inferenceRunOptions(verify, backend, seed, quiet, initFrom);
    BraidGenerateOptions generate = braidGenerateOptionsGetDefault();
    generate.tokens = tokens;
    generate.promptsFile = ref(promptsFile);
    generate.batch = batch;
    generate.context = context;
    generate.temperature = temperature;
    generate.topK = topK;
    generate.topP = topP;
    int rc;
    std::string out, err;
    {
      nb::gil_scoped_release release;
      Capture capture;
      rc = braidGenerateModel(module, options.options, &run, &generate);
      std::tie(out, err) = capture.finish();
    }
    return {rc, out, err};
  }

  /// (exit code, stdout, stderr): braidServeModel, deriving the paged
  /// programs in place; stdout holds a "request R: ..." line per request as
  /// it completes, the summary and the verdict of verify.
  std::tuple<int, std::string, std::string>
  serve(const PipelineOptions &options, const ServeOptions &serve, bool verify,
        const std::string &backend, int64_t seed, bool quiet,
        const std::string &initFrom) {
    BraidRunOptions run = inferenceRunOptions(verify, backend, seed, quiet, initFrom);
    BraidServeOptions what = serve.get();
    int rc;
    std::string out, err;
    {
      nb::gil_scoped_release release;
      Capture capture;
      rc = braidServeModel(module, options.options, &run, &what);
      std::tie(out, err) = capture.finish();
    }
    return {rc, out, err};
  }

  MlirContext context;
  MlirModule module;
};

/// A read-write property `name` of ServeOptions over a field of the C struct.
template <typename T>
void serveField(nb::class_<ServeOptions> &c, const char *name,
                T BraidServeOptions::*field) {
  c.def_prop_rw(
      name, [field](const ServeOptions &o) { return o.options.*field; },
      [field](ServeOptions &o, T value) { o.options.*field = value; });
}

} // namespace

NB_MODULE(_braid, m) {
  m.doc() = "Braid's C API (include/braid-c) for Python; braid.api is the "
            "interface to use.";
  m.def(
      "version",
      [] {
        MlirStringRef v = braidGetVersion();
        return std::string(v.data, v.length);
      },
      "Braid's version (braid.__version__), as the tools' --version prints it.");
  m.def(
      "commit",
      [] {
        MlirStringRef c = braidGetCommit();
        return std::string(c.data, c.length);
      },
      "The git commit the library was built from (empty without one).");

  nb::class_<PipelineOptions>(m, "PipelineOptions",
                              "The training pipeline's options.")
      .def(nb::init<>())
      .def("parse", &PipelineOptions::parse, nb::arg("text"),
           "Sets options from braid-opt's text (`grid=dp=2,tp=2 zero=1`); "
           "returns (ok, stderr).")
      .def("__str__", &PipelineOptions::str);

  nb::class_<ServeOptions> serveOptions(
      m, "ServeOptions",
      "braidServeModel's options by snake_case name (braidServeOptions"
      "GetDefault's values until set).");
  serveOptions.def(nb::init<>())
      .def_rw("requests_file", &ServeOptions::requestsFile)
      .def_rw("output_file", &ServeOptions::outputFile);
  serveField(serveOptions, "rate", &BraidServeOptions::rate);
  serveField(serveOptions, "requests", &BraidServeOptions::requests);
  serveField(serveOptions, "prompt_len", &BraidServeOptions::promptLen);
  serveField(serveOptions, "min_prompt_len", &BraidServeOptions::minPromptLen);
  serveField(serveOptions, "end_token", &BraidServeOptions::endToken);
  serveField(serveOptions, "page_size", &BraidServeOptions::pageSize);
  serveField(serveOptions, "kv_pages", &BraidServeOptions::kvPages);
  serveField(serveOptions, "prefill_chunk", &BraidServeOptions::prefillChunk);
  serveField(serveOptions, "prefill_batch", &BraidServeOptions::prefillBatch);
  serveField(serveOptions, "max_new_tokens", &BraidServeOptions::maxNewTokens);
  serveField(serveOptions, "batch", &BraidServeOptions::batch);
  serveField(serveOptions, "context", &BraidServeOptions::context);
  serveField(serveOptions, "temperature", &BraidServeOptions::temperature);
  serveField(serveOptions, "top_k", &BraidServeOptions::topK);
  serveField(serveOptions, "top_p", &BraidServeOptions::topP);
  serveField(serveOptions, "static_batching",
             &BraidServeOptions::staticBatching);
  serveField(serveOptions, "token_budget", &BraidServeOptions::tokenBudget);

  nb::class_<Module>(m, "Module", "An MLIR context holding one module.")
      .def(nb::init<>())
      .def("parse", &Module::parse, nb::arg("source"), nb::arg("name"))
      .def("str", &Module::str, nb::arg("debug_info") = false)
      .def("lower", &Module::lower, nb::arg("options"))
      .def("run_passes", &Module::runPasses, nb::arg("pipeline"))
      .def("print_plan", &Module::printPlan, nb::arg("pass_options") = "")
      .def("emit_cpp", &Module::emitCpp, nb::arg("program"),
           nb::arg("roll_repeats") = true)
      .def("programs", &Module::programs)
      .def("run", &Module::run, nb::arg("options"), nb::arg("steps"),
           nb::arg("verify"), nb::arg("verify_tolerance"), nb::arg("dump_dir"),
           nb::arg("trace_file"), nb::arg("backend"), nb::arg("seed"),
           nb::arg("quiet"), nb::arg("init_from") = "", nb::arg("data_file") = "")
      .def("generate", &Module::generate, nb::arg("options"),
           nb::arg("tokens"), nb::arg("prompts_file"), nb::arg("batch"),
           nb::arg("context"), nb::arg("temperature"), nb::arg("top_k"),
           nb::arg("top_p"), nb::arg("verify"), nb::arg("backend"),
           nb::arg("seed"), nb::arg("quiet"), nb::arg("init_from") = "")
      .def("serve", &Module::serve, nb::arg("options"), nb::arg("serve"),
           nb::arg("verify"), nb::arg("backend"), nb::arg("seed"),
           nb::arg("quiet"), nb::arg("init_from") = "");
}
