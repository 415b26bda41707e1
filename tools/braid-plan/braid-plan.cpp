//===- braid-plan.cpp - the auto-parallel planner --------------------------===//
//
// Chooses how to train a model on a cluster: every factorization of the GPUs
// into pp x dp x ep x cp x tp with virtual stages, micro-batch, ZeRO stage
// and recompute, ranked by the cost model's step time (lib/Planner), the
// best printed with MFU, tokens/s, memory per GPU and exposed communication.
//
//   braid-plan model.mlir --gpus 1024 --hardware a100-sxm --global-batch 1536
//   braid-plan --model family=gpt,hidden=12288,... --gpus ... --explain 1
//   braid-plan ... --evaluate dp=16,tp=8,pp=8,vpp=2,mbs=1,zero=1
//   braid-plan ... --plan-file plan.json   (braid-run --plan-file runs it)
//
// This file holds the options and the run; PlanReport.h what is printed.
//
//===----------------------------------------------------------------------===//

#include "braid/Planner/CompiledPlan.h"
#include "braid/Planner/Search.h"
#include "braid/Planner/PlanFile.h"
#include "InferencePlan.h"
#include "PlanReport.h"

#include "braid/InitAllDialects.h"
#include "braid/Support/CommandLine.h"
#include "dialects/braid/IR/BraidDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <optional>

using namespace llvm;
using namespace braid::plan;
using namespace braid::plan::report;

// braid-plan's options by subject (--help lists the categories in
// alphabetical order); --inference's are InferencePlan.cpp's.
static cl::OptionCategory modelCategory("Model");
static cl::OptionCategory clusterCategory("Cluster and runtime modelled");
static cl::OptionCategory searchCategory("Search");
static cl::OptionCategory outputCategory("Output");
/// The hardware's help names its default, which the passes share.
static const std::string hardwareHelp =
    std::string("h100-sxm, h200-sxm, a100-sxm or a .json (default: ") +
    mlir::braid::kDefaultHardware + ")";

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("[model.mlir]"),
                                      cl::init(""), cl::cat(modelCategory));
static cl::opt<std::string>
    modelSpec("model",
              cl::desc("The model as key=value,... (the keys of braid.model) instead "
                       "of a file"),
              cl::init(""), cl::cat(modelCategory));
static cl::opt<int64_t> gpus("gpus", cl::desc("GPUs of the cluster"), cl::init(0),
                             cl::cat(clusterCategory));
static cl::opt<std::string> hardwareName("hardware",
                                         cl::desc(hardwareHelp),
                                         cl::init(mlir::braid::kDefaultHardware),
                                         cl::cat(clusterCategory));
static cl::opt<std::string>
    calibrationName("calibration",
                    cl::desc("Compute calibration (default: the hardware's built-in one)"),
                    cl::init(""), cl::cat(clusterCategory));
static cl::opt<std::string>
    runtimeName("runtime",
                cl::desc("Whose overlap and storage to model: braid, megatron-2021, "
                         "megatron-deepspeed, megatron-core, nemo-automodel, torchtitan "
                         "(default: braid)"),
                cl::init("braid"), cl::cat(clusterCategory));
static cl::opt<std::string> moeDispatcher(
    "moe-dispatcher",
    cl::desc("How the runtime dispatches tokens to experts (default: the runtime's own): "
             "alltoall (a copy per chosen expert) or deepep (a copy per rank holding one)"),
    cl::init(""), cl::cat(clusterCategory));
static cl::opt<int64_t> globalBatch("global-batch", cl::desc("Sequences per step"),
                                    cl::init(0), cl::cat(modelCategory));
static cl::opt<int64_t> seqOverride("seq", cl::desc("Sequence length (default: the model's)"),
                                    cl::init(0), cl::cat(modelCategory));
static cl::opt<unsigned> top("top", cl::desc("Plans to list (default: 10)"), cl::init(10),
                             cl::cat(outputCategory));
static cl::opt<unsigned> explain("explain",
                                 cl::desc("Break the step of the plan of this rank down"),
                                 cl::init(0), cl::cat(outputCategory));
static cl::opt<std::string>
    evaluatePlan("evaluate",
                 cl::desc("Evaluate one plan instead of searching: dp=..,ep=..,cp=..,tp=..,"
                          "pp=..,vpp=..,mbs=..,zero=..,recompute=..,sp=..,schedule=zb-h1,"
                          "layout=a:b:.."),
                 cl::init(""), cl::cat(searchCategory));
// The search's choices (default: SearchOptions', every one).
static cl::list<int> zeroStages("zero", cl::desc("ZeRO stages to consider (default: 0-3)"),
                                cl::CommaSeparated, cl::cat(searchCategory));
static cl::list<Recompute>
    recomputes("recompute", cl::desc("Recompute policies to consider (default: all)"),
               cl::CommaSeparated, cl::cat(searchCategory));
static cl::opt<std::string> outputFormat("format", cl::desc("text or json (default: text)"), cl::init("text"),
                                         cl::cat(outputCategory));
static cl::opt<std::string>
    planFile("plan-file", cl::value_desc("file"),
             cl::desc("Write the chosen plan (rank 1, or --explain's) for braid-run --plan-file"),
             cl::init(""), cl::cat(outputCategory));
static cl::opt<bool>
    modelStats("model-stats",
               cl::desc("Print the model's parameters and FLOPs as the cost model counts "
                        "them (the keys of braid-opt --braid-model-stats) and stop"),
               cl::init(false), cl::cat(modelCategory));
static cl::opt<unsigned> compileTop(
    "compile",
    cl::desc("Compile plans in rank order with the training pipeline until N fit by their "
             "static memory plan, taking their memory from it and their exposed "
             "communication from the overlap scheduler's simulation, and rank them again "
             "(needs the model file, built with --batch the global batch)"),
    cl::init(0), cl::cat(searchCategory));
static cl::opt<bool> progress("progress",
                              cl::desc("Show the search's progress (default: on a terminal)"),
                              cl::init(false), cl::cat(outputCategory));

static int fail(const Twine &message) {
  errs() << "braid-plan: " << message << "\n";
  return 1;
}
static int fail(Error error) { return fail(toString(std::move(error))); }
static Error error(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// The `braid.model` dictionary of the module in `path`, which `module`
/// keeps (for --compile).
static Expected<ModelShape> readModel(StringRef path, mlir::MLIRContext &context,
                                      mlir::OwningOpRef<mlir::ModuleOp> &module) {
  llvm::SourceMgr sources;
  module = mlir::parseSourceFile<mlir::ModuleOp>(path, sources, &context);
  if (!module)
    return error("cannot parse " + path);
  auto dict = (*module)->getAttrOfType<mlir::DictionaryAttr>(
      mlir::braid::BraidDialect::getModelAttrName());
  if (!dict)
    return error(path + ": the module has no braid.model dictionary (the model builder "
                        "writes one; or give --model)");
  StringMap<std::string> attrs;
  for (mlir::NamedAttribute entry : dict) {
    std::string text;
    raw_string_ostream os(text);
    mlir::Attribute value = entry.getValue();
    if (auto s = dyn_cast<mlir::StringAttr>(value))
      os << s.getValue();
    else if (auto b = dyn_cast<mlir::BoolAttr>(value))
      os << (b.getValue() ? "true" : "false");
    else if (auto i = dyn_cast<mlir::IntegerAttr>(value))
      os << i.getValue();
    else if (auto f = dyn_cast<mlir::FloatAttr>(value))
      os << f.getValueAsDouble();
    else
      continue;
    attrs[entry.getName().getValue()] = text;
  }
  return ModelShape::fromAttributes(attrs);
}

/// The model of the file or of --model, at --seq.
static Expected<ModelShape> loadModel(mlir::MLIRContext &context,
                                      mlir::OwningOpRef<mlir::ModuleOp> &module) {
  if (!modelSpec.empty() && !inputFile.empty())
    return error("give a model file or --model, not both");
  if (modelSpec.empty() && inputFile.empty())
    return error("no model: give a model file or --model key=value,...");
  Expected<ModelShape> model = modelSpec.empty() ? readModel(inputFile, context, module)
                                                 : ModelShape::fromString(modelSpec);
  if (model && seqOverride > 0)
    model->seq = seqOverride;
  return model;
}

namespace {
/// What the cost model is given besides the model: the hardware, its
/// compute calibration and the runtime whose overlap and storage it models.
struct Cluster {
  braid::cost::Hardware hw;
  braid::cost::ComputeCalibration cal;
  Runtime rt;
};
} // namespace

static Expected<Cluster> loadCluster() {
  Expected<braid::cost::Hardware> hw = braid::cost::Hardware::named(hardwareName);
  if (!hw)
    return hw.takeError();
  if (std::string missing = hw->missingPlannerKeys(); !missing.empty())
    return error(hw->name + ": the planner needs " + missing + " in the hardware description");
  Expected<braid::cost::ComputeCalibration> cal = braid::cost::ComputeCalibration::named(
      calibrationName.empty() ? hw->name : std::string(calibrationName));
  if (!cal)
    return error(toString(cal.takeError()) +
                 (calibrationName.empty()
                      ? "; a hardware description of one's own needs --calibration FILE "
                        "(the fields of lib/CostModel/calibration/*.json)"
                      : ""));
  Expected<Runtime> rt = Runtime::named(runtimeName);
  if (!rt)
    return rt.takeError();
  if (moeDispatcher == "deepep")
    rt->dispatchPerRank = true;
  else if (moeDispatcher == "alltoall")
    rt->dispatchPerRank = false;
  else if (!moeDispatcher.empty())
    return error("--moe-dispatcher is alltoall or deepep, not '" + moeDispatcher + "'");
  return Cluster{std::move(*hw), std::move(*cal), std::move(*rt)};
}

/// The plans of --evaluate (several separated by ';'), each evaluated, none
/// ranked.
static Error evaluatePlans(PlanCost &cost, std::vector<RankedPlan> &ranked) {
  SmallVector<StringRef> specs;
  StringRef(evaluatePlan).split(specs, ';', -1, false);
  for (StringRef spec : specs) {
    Expected<Plan> plan = parsePlan(spec, globalBatch);
    if (!plan)
      return plan.takeError();
    if (plan->gpus() != gpus)
      return error("the plan's grid " + plan->gridString() + " has " + Twine(plan->gpus()) +
                   " GPUs, not --gpus " + Twine(gpus));
    Estimate e = cost.simulate(*plan);
    // One plan that cannot run is an error; of several, it is reported.
    if (!e.valid && specs.size() == 1)
      return error("the plan " + spec + " cannot run: " + e.invalidReason);
    ranked.push_back({*plan, e});
  }
  return Error::success();
}

/// The search's space and reporting, from the options.
static Expected<SearchOptions> searchOptions() {
  SearchOptions options;
  options.gpus = gpus;
  options.globalBatch = globalBatch;
  // --compile looks past plans the memory plan rejects: four candidates
  // for each plan it is to find.
  options.top = std::max<unsigned>({top, explain.getValue(), 4 * compileTop.getValue()});
  if (zeroStages.getNumOccurrences())
    options.zeroStages.assign(zeroStages.begin(), zeroStages.end());
  if (recomputes.getNumOccurrences())
    options.recomputes.assign(recomputes.begin(), recomputes.end());
  if (llvm::any_of(options.zeroStages, [](int z) { return z < 0 || z > 3; }))
    return error("--zero lists stages 0..3");
  if (options.zeroStages.empty() || options.recomputes.empty())
    return error("--zero and --recompute list at least one choice");
  if (progress || sys::Process::StandardErrIsDisplayed())
    options.progress = [last = std::chrono::steady_clock::now()](
                           double fraction, uint64_t evaluated, uint64_t fitting) mutable {
      auto now = std::chrono::steady_clock::now();
      if (fraction < 1.0 && now - last < std::chrono::milliseconds(100))
        return;
      last = now;
      errs() << format("\rbraid-plan: searching %3.0f%%  %llu plans, %llu fit", 100 * fraction,
                       (unsigned long long)evaluated, (unsigned long long)fitting);
      if (fraction >= 1.0)
        errs() << "\n";
    };
  return options;
}

/// Why no plan fits: what the leanest needs, and the smallest cluster that
/// holds the model.
static std::string noPlanMessage(PlanCost &cost, const ModelShape &model,
                                 const braid::cost::Hardware &hw, const SearchResult &result) {
  std::string msg = "no plan of " + model.name + " fits on " + std::to_string(gpus) + " x " +
                    hw.name + " (" + std::to_string(int64_t(gb(hw.memoryBytes))) +
                    " GiB each)";
  if (result.leanest.estimate.valid)
    msg += "; the leanest needs " +
           std::to_string(int64_t(gb(result.leanest.estimate.memoryBytes()) + 0.5)) +
           " GiB per GPU (" + result.leanest.plan.gridString() + ", ZeRO-3, full recompute)";
  else
    msg += " with global batch " + std::to_string(globalBatch);
  RankedPlan smallest;
  if (int64_t n = smallestCluster(cost, &smallest))
    msg += "; the smallest cluster that holds it is " + std::to_string(n) + " GPUs (" +
           smallest.plan.gridString() + ", ZeRO-3, full recompute, " +
           std::to_string(int64_t(gb(smallest.estimate.memoryBytes()) + 0.5)) +
           " GiB per GPU)";
  else
    msg += "; no cluster of up to 2^24 GPUs holds it";
  return msg;
}

/// The fastest plans, best first; an error when none fits.
static Error searchRanked(PlanCost &cost, const ModelShape &model,
                          const braid::cost::Hardware &hw, SearchResult &result,
                          std::vector<RankedPlan> &ranked) {
  Expected<SearchOptions> options = searchOptions();
  if (!options)
    return options.takeError();
  result = searchPlans(cost, *options);
  ranked = result.best;
  if (ranked.empty())
    return error(noPlanMessage(cost, model, hw, result));
  return Error::success();
}

/// --compile: the plans compiled in rank order until `compileTop` fit by
/// their memory plans, then ranked again: those that fit first, then by the
/// step with the simulation's exposed communication.
static Error compileRanked(mlir::ModuleOp modelModule, const Cluster &cluster,
                           std::vector<RankedPlan> &ranked,
                           std::vector<std::optional<CompiledEstimate>> &compiled) {
  auto dict = modelModule->getAttrOfType<mlir::DictionaryAttr>(
      mlir::braid::BraidDialect::getModelAttrName());
  auto batch = dict ? dict.getAs<mlir::IntegerAttr>("batch") : mlir::IntegerAttr();
  if (!batch || batch.getInt() != globalBatch)
    return error("--compile: the model file's batch (" +
                 (batch ? Twine(batch.getInt()) : Twine("none")) + ") is not the global batch " +
                 Twine(globalBatch) + ": build it with --batch " + Twine(globalBatch));
  size_t n = 0, fitting = 0;
  for (; n < ranked.size() && fitting < compileTop; ++n) {
    if (!ranked[n].estimate.valid)
      continue;
    if (progress || sys::Process::StandardErrIsDisplayed())
      errs() << "braid-plan: compiling plan " << n + 1 << " (" << ranked[n].plan.gridString()
             << ")\n";
    Expected<CompiledEstimate> c = compilePlan(modelModule, ranked[n].plan, ranked[n].estimate,
                                               hardwareName, cluster.hw, cluster.cal);
    if (!c)
      return error("--compile: " + toString(c.takeError()));
    compiled[n] = *c;
    fitting += c->fits;
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  auto key = [&](size_t i) {
    const std::optional<CompiledEstimate> &c = compiled[i];
    return std::make_tuple(c ? !c->fits : true, c ? c->stepSeconds : 1e300, i);
  };
  llvm::sort(order, [&](size_t a, size_t b) { return key(a) < key(b); });
  std::vector<RankedPlan> head;
  std::vector<std::optional<CompiledEstimate>> headCompiled;
  for (size_t i : order) {
    head.push_back(ranked[i]);
    headCompiled.push_back(compiled[i]);
  }
  std::copy(head.begin(), head.end(), ranked.begin());
  std::copy(headCompiled.begin(), headCompiled.end(), compiled.begin());
  return Error::success();
}

namespace {
/// What is printed: the model, the cluster, the search and its plans.
struct Outcome {
  const ModelShape &model;
  const Cluster &cluster;
  const SearchResult &result;
  const std::vector<RankedPlan> &ranked;
  const std::vector<std::optional<CompiledEstimate>> &compiled;
};
} // namespace

static void printJson(raw_ostream &os, const Outcome &out) {
  json::Array plans;
  for (auto [r, c] : llvm::zip(out.ranked, out.compiled)) {
    json::Object o = toJson(r);
    if (c) {
      json::Object exposed;
      for (size_t k = 0; k < size_t(CommKind::Count); ++k)
        exposed[commKindName(CommKind(k))] = c->exposed[k];
      o["compiled"] = json::Object{{"arena_bytes", c->arenaBytes},
                                   {"memory_bytes", c->memoryBytes},
                                   {"fits", c->fits},
                                   {"exposed_s", std::move(exposed)},
                                   {"step_s", c->stepSeconds},
                                   {"simulated_step_s", c->simulatedStepSeconds},
                                   {"compile_s", c->compileSeconds}};
    }
    plans.push_back(std::move(o));
  }
  json::Object root{{"model", out.model.name},
                    {"parameters", out.model.parameters()},
                    {"hardware", out.cluster.hw.name},
                    {"gpus", int64_t(gpus)},
                    {"global_batch", int64_t(globalBatch)},
                    {"seq", out.model.seq},
                    {"runtime", out.cluster.rt.name},
                    {"plans", std::move(plans)}};
  if (evaluatePlan.empty())
    root["search"] = json::Object{{"evaluated", int64_t(out.result.evaluated)},
                                  {"memory_checked", int64_t(out.result.memoryChecked)},
                                  {"fitting", int64_t(out.result.fitting)},
                                  {"seconds", out.result.seconds}};
  os << json::Value(std::move(root)) << "\n";
}

/// The compiled plans' table: their memory plans' and simulations' figures
/// beside the closed form's.
static void printCompiled(raw_ostream &os, const Outcome &out) {
  os << "compiled (memory: the static memory plan; exposed communication: the overlap "
        "scheduler's simulation; closed form in parentheses):\n";
  os << format("%-4s %-30s %9s %17s %21s %11s\n", "rank", "grid", "step (s)", "mem GiB",
               "exposed comm (s)", "compile (s)");
  for (size_t i = 0; i < out.ranked.size(); ++i) {
    const std::optional<CompiledEstimate> &c = out.compiled[i];
    if (!c)
      continue;
    const Estimate &e = out.ranked[i].estimate;
    os << format("%-4zu %-30s %9.3f %7.1f (%7.1f) %9.3f (%9.3f) %11.2f%s\n", i + 1,
                 out.ranked[i].plan.gridString().c_str(), c->stepSeconds, gb(c->memoryBytes),
                 gb(e.memoryBytes()), c->exposedSeconds, e.exposedSeconds(), c->compileSeconds,
                 c->fits ? "" : "  does not fit");
  }
}

static Error printText(raw_ostream &os, const Outcome &out) {
  const ModelShape &model = out.model;
  const braid::cost::Hardware &hw = out.cluster.hw;
  const SearchResult &result = out.result;
  os << "braid-plan: " << model.name << " (" << format("%.2f", model.parameters() / 1e9)
     << " B parameters, " << model.family << ") on " << gpus << " x " << hw.name
     << ", global batch " << globalBatch << " x " << model.seq << " tokens, runtime "
     << out.cluster.rt.name << "\n";
  if (evaluatePlan.empty())
    os << format("searched %llu plans (and %llu groups by memory) in %.2f s, %.0f plans/s; "
                 "%llu fit in %.0f GiB\n",
                 (unsigned long long)result.evaluated, (unsigned long long)result.memoryChecked,
                 result.seconds, result.evaluated / std::max(result.seconds, 1e-9),
                 (unsigned long long)result.fitting, gb(hw.memoryBytes));
  size_t listed = evaluatePlan.empty() ? std::min<size_t>(out.ranked.size(), top)
                                       : out.ranked.size();
  printTable(os, std::vector<RankedPlan>(out.ranked.begin(), out.ranked.begin() + listed));
  if (llvm::any_of(out.compiled, [](const auto &c) { return c.has_value(); }))
    printCompiled(os, out);
  if (evaluatePlan.empty() && !explain)
    return Error::success();
  size_t which = evaluatePlan.empty() ? explain - 1 : 0;
  if (which >= out.ranked.size())
    return error("--explain " + Twine(explain) + ": only " + Twine(out.ranked.size()) +
                 " plans fit");
  printExplain(os, out.ranked[which]);
  return Error::success();
}

/// --plan-file: the plan of rank 1 (or --explain's) for braid-run.
static Error writeChosenPlan(const Outcome &out) {
  size_t which = explain && evaluatePlan.empty() ? explain - 1 : 0;
  if (which >= out.ranked.size())
    return error("--plan-file: no plan of rank " + Twine(which + 1));
  return writePlanFile(planFile, out.model, out.cluster.hw, gpus, globalBatch,
                       out.ranked[which]);
}

/// --inference: the serving planner (InferencePlan.h) on the same model,
/// cluster and common options.
static int planInference(const ModelShape &model) {
  Expected<Cluster> cluster = loadCluster();
  if (!cluster)
    return fail(cluster.takeError());
  if (outputFormat != "json" && outputFormat != "text")
    return fail("--format is text or json");
  InferenceContext context{model,       cluster->hw, cluster->cal, hardwareName, gpus,
                           outputFormat == "json", top, explain, evaluatePlan, planFile};
  if (Error err = runInference(context, outs()))
    return fail(std::move(err));
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&modelCategory, &clusterCategory, &searchCategory, &outputCategory,
                            &inferenceCategory()});
  braid::installVersionPrinter();
  braid::parseToolCommandLine(argc, argv,
                              "braid-plan: choose a parallel plan for a model and a cluster\n");

  mlir::DialectRegistry registry;
  braid::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> modelModule;
  Expected<ModelShape> model = loadModel(context, modelModule);
  if (!model)
    return fail(model.takeError());
  if (modelStats) {
    outs() << format("parameters: %.0f\nparameters_active: %.0f\nforward_flops_per_token: %.0f\n",
                     model->parameters(), model->activeParameters(),
                     model->forwardMatmulFlopsPerToken());
    return 0;
  }
  if (gpus < 1)
    return fail("--gpus must be >= 1");
  if (inferenceRequested())
    return planInference(*model);
  if (globalBatch < 1)
    return fail("--global-batch (sequences per step) must be >= 1");
  Expected<Cluster> cluster = loadCluster();
  if (!cluster)
    return fail(cluster.takeError());
  PlanCost cost(*model, cluster->hw, cluster->cal, cluster->rt);
  bool json = outputFormat == "json";
  if (!json && outputFormat != "text")
    return fail("--format is text or json");

  std::vector<RankedPlan> ranked;
  SearchResult result;
  if (Error err = evaluatePlan.empty() ? searchRanked(cost, *model, cluster->hw, result, ranked)
                                       : evaluatePlans(cost, ranked))
    return fail(std::move(err));
  std::vector<std::optional<CompiledEstimate>> compiled(ranked.size());
  if (compileTop > 0 && !modelModule)
    return fail("--compile compiles the plans: give the model file, not --model");
  if (compileTop > 0)
    if (Error err = compileRanked(*modelModule, *cluster, ranked, compiled))
      return fail(std::move(err));

  Outcome out{*model, *cluster, result, ranked, compiled};
  if (json)
    printJson(outs(), out);
  else if (Error err = printText(outs(), out))
    return fail(std::move(err));
  if (!planFile.empty())
    if (Error err = writeChosenPlan(out))
      return fail(std::move(err));
  return 0;
}
