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

#include "../../lib/Planner/CompiledPlan.h"
#include "../../lib/Planner/Search.h"
#include "../../lib/Planner/PlanFile.h"
#include "PlanReport.h"

#include "braid/InitAllDialects.h"
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

using namespace llvm;
using namespace braid::plan;
using namespace braid::plan::report;

static cl::OptionCategory planCategory("braid-plan options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("[model.mlir]"),
                                      cl::init(""), cl::cat(planCategory));
static cl::opt<std::string>
    modelSpec("model",
              cl::desc("The model as key=value,... (the keys of braid.model) instead "
                       "of a file"),
              cl::init(""), cl::cat(planCategory));
static cl::opt<int64_t> gpus("gpus", cl::desc("GPUs of the cluster"), cl::init(0),
                             cl::cat(planCategory));
static cl::opt<std::string> hardwareName("hardware",
                                         cl::desc("h100-sxm, h200-sxm, a100-sxm or a .json"),
                                         cl::init(mlir::braid::kDefaultHardware),
                                         cl::cat(planCategory));
static cl::opt<std::string>
    calibrationName("calibration",
                    cl::desc("Compute calibration (default: the hardware's built-in one)"),
                    cl::init(""), cl::cat(planCategory));
static cl::opt<std::string>
    runtimeName("runtime",
                cl::desc("Whose overlap and storage to model: braid, megatron-2021, "
                         "megatron-deepspeed, megatron-core, nemo-automodel, torchtitan"),
                cl::init("braid"), cl::cat(planCategory));
static cl::opt<std::string> moeDispatcher(
    "moe-dispatcher",
    cl::desc("How the runtime dispatches tokens to experts (default: the runtime's own): "
             "alltoall (a copy per chosen expert) or deepep (a copy per rank holding one)"),
    cl::init(""), cl::cat(planCategory));
static cl::opt<int64_t> globalBatch("global-batch", cl::desc("Sequences per step"),
                                    cl::init(0), cl::cat(planCategory));
static cl::opt<int64_t> seqOverride("seq", cl::desc("Sequence length (default: the model's)"),
                                    cl::init(0), cl::cat(planCategory));
static cl::opt<unsigned> top("top", cl::desc("Plans to list"), cl::init(10),
                             cl::cat(planCategory));
static cl::opt<unsigned> explain("explain",
                                 cl::desc("Break the step of the plan of this rank down"),
                                 cl::init(0), cl::cat(planCategory));
static cl::opt<std::string>
    evaluatePlan("evaluate",
                 cl::desc("Evaluate one plan instead of searching: dp=..,ep=..,cp=..,tp=..,"
                          "pp=..,vpp=..,mbs=..,zero=..,recompute=..,sp=..,schedule=zb-h1,"
                          "layout=a:b:.."),
                 cl::init(""), cl::cat(planCategory));
static cl::opt<std::string> zeroStages("zero", cl::desc("ZeRO stages to consider"),
                                       cl::init("0,1,2,3"), cl::cat(planCategory));
static cl::opt<std::string> recomputes("recompute", cl::desc("Recompute policies to consider"),
                                       cl::init("none,selective,full"), cl::cat(planCategory));
static cl::opt<std::string> outputFormat("format", cl::desc("text or json"), cl::init("text"),
                                   cl::cat(planCategory));
static cl::opt<std::string>
    planFile("plan-file",
             cl::desc("Write the chosen plan (rank 1, or --explain's) for braid-run --plan-file"),
             cl::init(""), cl::cat(planCategory));
static cl::opt<bool>
    modelStats("model-stats",
               cl::desc("Print the model's parameters and FLOPs as the cost model counts "
                        "them (the keys of braid-opt --braid-model-stats) and stop"),
               cl::init(false), cl::cat(planCategory));
static cl::opt<unsigned> compileTop(
    "compile",
    cl::desc("Compile plans in rank order with the training pipeline until N fit by their "
             "static memory plan, taking their memory from it and their exposed "
             "communication from the overlap scheduler's simulation, and rank them again "
             "(needs the model file, built with --batch the global batch)"),
    cl::init(0), cl::cat(planCategory));
static cl::opt<bool> progress("progress",
                              cl::desc("Show the search's progress (default: on a terminal)"),
                              cl::init(false), cl::cat(planCategory));

static int fail(const Twine &message) {
  errs() << "braid-plan: " << message << "\n";
  return 1;
}

/// The `braid.model` dictionary of the module in `path`, which `module`
/// keeps (for --compile).
static Expected<ModelShape> readModel(StringRef path, mlir::MLIRContext &context,
                                      mlir::OwningOpRef<mlir::ModuleOp> &module) {
  llvm::SourceMgr sources;
  module = mlir::parseSourceFile<mlir::ModuleOp>(path, sources, &context);
  if (!module)
    return createStringError(inconvertibleErrorCode(), "cannot parse " + path);
  auto dict = (*module)->getAttrOfType<mlir::DictionaryAttr>(
      mlir::braid::BraidDialect::getModelAttrName());
  if (!dict)
    return createStringError(inconvertibleErrorCode(),
                             path + ": the module has no braid.model dictionary (the "
                                    "model builder writes one; or give --model)");
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

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(planCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "braid-plan: choose a parallel plan for a model and a cluster\n");

  // The model.
  mlir::DialectRegistry registry;
  braid::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> modelModule;
  Expected<ModelShape> model = [&]() -> Expected<ModelShape> {
    if (!modelSpec.empty() && !inputFile.empty())
      return createStringError(inconvertibleErrorCode(), "give a model file or --model, not both");
    if (!modelSpec.empty())
      return ModelShape::fromString(modelSpec);
    if (inputFile.empty())
      return createStringError(inconvertibleErrorCode(),
                               "no model: give a model file or --model key=value,...");
    return readModel(inputFile, context, modelModule);
  }();
  if (!model)
    return fail(toString(model.takeError()));
  if (seqOverride > 0)
    model->seq = seqOverride;
  if (modelStats) {
    outs() << format("parameters: %.0f\nparameters_active: %.0f\nforward_flops_per_token: %.0f\n",
                     model->parameters(), model->activeParameters(),
                     model->forwardMatmulFlopsPerToken());
    return 0;
  }
  if (gpus < 1)
    return fail("--gpus must be >= 1");
  if (globalBatch < 1)
    return fail("--global-batch (sequences per step) must be >= 1");

  Expected<braid::cost::Hardware> hw = braid::cost::Hardware::named(hardwareName);
  if (!hw)
    return fail(toString(hw.takeError()));
  if (std::string missing = hw->missingPlannerKeys(); !missing.empty())
    return fail(hw->name + ": the planner needs " + missing + " in the hardware description");
  Expected<braid::cost::ComputeCalibration> cal = braid::cost::ComputeCalibration::named(
      calibrationName.empty() ? hw->name : std::string(calibrationName));
  if (!cal)
    return fail(toString(cal.takeError()) +
                (calibrationName.empty()
                     ? "; a hardware description of one's own needs --calibration FILE "
                       "(the fields of lib/CostModel/calibration/*.json)"
                     : ""));
  Expected<Runtime> rt = Runtime::named(runtimeName);
  if (!rt)
    return fail(toString(rt.takeError()));
  if (moeDispatcher == "deepep")
    rt->dispatchPerRank = true;
  else if (moeDispatcher == "alltoall")
    rt->dispatchPerRank = false;
  else if (!moeDispatcher.empty())
    return fail("--moe-dispatcher is alltoall or deepep, not '" + moeDispatcher + "'");
  PlanCost cost(*model, *hw, *cal, *rt);

  raw_ostream &os = outs();
  bool json = outputFormat == "json";
  if (!json && outputFormat != "text")
    return fail("--format is text or json");

  std::vector<RankedPlan> ranked;
  SearchResult result;
  if (!evaluatePlan.empty()) {
    // One plan, or several separated by ';' (each evaluated, none ranked).
    SmallVector<StringRef> specs;
    StringRef(evaluatePlan).split(specs, ';', -1, false);
    for (StringRef spec : specs) {
      Expected<Plan> plan = parsePlan(spec, globalBatch);
      if (!plan)
        return fail(toString(plan.takeError()));
      if (plan->gpus() != gpus)
        return fail("the plan's grid " + plan->gridString() + " has " + Twine(plan->gpus()) +
                    " GPUs, not --gpus " + Twine(gpus));
      Estimate e = cost.simulate(*plan);
      // One plan that cannot run is an error; of several, it is reported.
      if (!e.valid && specs.size() == 1)
        return fail("the plan " + spec + " cannot run: " + e.invalidReason);
      ranked.push_back({*plan, e});
    }
  } else {
    SearchOptions options;
    options.gpus = gpus;
    options.globalBatch = globalBatch;
    // --compile looks past plans the memory plan rejects: four candidates
    // for each plan it is to find.
    options.top = std::max<unsigned>({top, explain.getValue(), 4 * compileTop.getValue()});
    options.zeroStages.clear();
    SmallVector<StringRef> items;
    StringRef(zeroStages).split(items, ',', -1, false);
    for (StringRef z : items) {
      int v;
      if (z.trim().getAsInteger(10, v) || v < 0 || v > 3)
        return fail("--zero lists stages 0..3");
      options.zeroStages.push_back(v);
    }
    items.clear();
    options.recomputes.clear();
    StringRef(recomputes).split(items, ',', -1, false);
    for (StringRef r : items) {
      r = r.trim();
      std::optional<Recompute> recompute = mlir::braid::symbolizeRecompute(r);
      if (!recompute)
        return fail("--recompute lists " + mlir::braid::enumKeywords<Recompute>());
      options.recomputes.push_back(*recompute);
    }
    if (options.zeroStages.empty() || options.recomputes.empty())
      return fail("--zero and --recompute list at least one choice");
    bool show = progress || sys::Process::StandardErrIsDisplayed();
    auto last = std::chrono::steady_clock::now();
    if (show)
      options.progress = [&](double fraction, uint64_t evaluated, uint64_t fitting) {
        auto now = std::chrono::steady_clock::now();
        if (fraction < 1.0 && now - last < std::chrono::milliseconds(100))
          return;
        last = now;
        errs() << format("\rbraid-plan: searching %3.0f%%  %llu plans, %llu fit", 100 * fraction,
                         (unsigned long long)evaluated, (unsigned long long)fitting);
        if (fraction >= 1.0)
          errs() << "\n";
      };
    result = searchPlans(cost, options);
    ranked = result.best;
    if (ranked.empty()) {
      std::string msg = "no plan of " + model->name + " fits on " + std::to_string(gpus) +
                        " x " + hw->name + " (" +
                        std::to_string(int64_t(gb(hw->memoryBytes))) + " GiB each)";
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
      return fail(msg);
    }
  }

  // The first plans, compiled.
  std::vector<std::optional<CompiledEstimate>> compiled(ranked.size());
  if (compileTop > 0) {
    if (!modelModule)
      return fail("--compile compiles the plans: give the model file, not --model");
    auto dict = (*modelModule)->getAttrOfType<mlir::DictionaryAttr>(
        mlir::braid::BraidDialect::getModelAttrName());
    auto batch = dict ? dict.getAs<mlir::IntegerAttr>("batch") : mlir::IntegerAttr();
    if (!batch || batch.getInt() != globalBatch)
      return fail("--compile: the model file's batch (" +
                  (batch ? Twine(batch.getInt()) : Twine("none")) +
                  ") is not the global batch " + Twine(globalBatch) +
                  ": build it with --batch " + Twine(globalBatch));
    // In rank order until `compileTop` plans fit by their memory plans.
    size_t n = 0, fitting = 0;
    for (; n < ranked.size() && fitting < compileTop; ++n) {
      size_t i = n;
      if (!ranked[i].estimate.valid)
        continue;
      if (progress || sys::Process::StandardErrIsDisplayed())
        errs() << "braid-plan: compiling plan " << i + 1 << " ("
               << ranked[i].plan.gridString() << ")\n";
      Expected<CompiledEstimate> c = compilePlan(*modelModule, ranked[i].plan,
                                                 ranked[i].estimate, hardwareName, *hw, *cal);
      if (!c)
        return fail("--compile: " + toString(c.takeError()));
      compiled[i] = *c;
      fitting += c->fits;
    }
    // The compiled plans ranked again: those that fit by the memory plan
    // first, then by the step with the simulation's exposed communication.
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
  }

  double params = model->parameters();
  if (json) {
    json::Array plans;
    for (auto [r, c] : llvm::zip(ranked, compiled)) {
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
    json::Object out{{"model", model->name},
                     {"parameters", params},
                     {"hardware", hw->name},
                     {"gpus", int64_t(gpus)},
                     {"global_batch", int64_t(globalBatch)},
                     {"seq", model->seq},
                     {"runtime", rt->name},
                     {"plans", std::move(plans)}};
    if (evaluatePlan.empty())
      out["search"] = json::Object{{"evaluated", int64_t(result.evaluated)},
                                   {"memory_checked", int64_t(result.memoryChecked)},
                                   {"fitting", int64_t(result.fitting)},
                                   {"seconds", result.seconds}};
    os << json::Value(std::move(out)) << "\n";
  } else {
    os << "braid-plan: " << model->name << " (" << format("%.2f", params / 1e9)
       << " B parameters, " << model->family << ") on " << gpus << " x " << hw->name
       << ", global batch " << globalBatch << " x " << model->seq << " tokens, runtime "
       << rt->name << "\n";
    if (evaluatePlan.empty())
      os << format("searched %llu plans (and %llu groups by memory) in %.2f s, %.0f plans/s; "
                   "%llu fit in %.0f GiB\n",
                   (unsigned long long)result.evaluated,
                   (unsigned long long)result.memoryChecked, result.seconds,
                   result.evaluated / std::max(result.seconds, 1e-9),
                   (unsigned long long)result.fitting, gb(hw->memoryBytes));
    printTable(os, std::vector<RankedPlan>(ranked.begin(),
                                           ranked.begin() + std::min<size_t>(
                                                                ranked.size(),
                                                                evaluatePlan.empty() ? top
                                                                                     : ranked.size())));
    if (llvm::any_of(compiled, [](const auto &c) { return c.has_value(); })) {
      os << "compiled (memory: the static memory plan; exposed communication: the overlap "
            "scheduler's simulation; closed form in parentheses):\n";
      os << format("%-4s %-30s %9s %17s %21s %11s\n", "rank", "grid", "step (s)",
                   "mem GiB", "exposed comm (s)", "compile (s)");
      for (size_t i = 0; i < ranked.size(); ++i) {
        const std::optional<CompiledEstimate> &c = compiled[i];
        if (!c)
          continue;
        const Estimate &e = ranked[i].estimate;
        os << format("%-4zu %-30s %9.3f %7.1f (%7.1f) %9.3f (%9.3f) %11.2f%s\n", i + 1,
                     ranked[i].plan.gridString().c_str(), c->stepSeconds, gb(c->memoryBytes),
                     gb(e.memoryBytes()), c->exposedSeconds, e.exposedSeconds(),
                     c->compileSeconds, c->fits ? "" : "  does not fit");
      }
    }
    if (!evaluatePlan.empty() || explain) {
      size_t which = evaluatePlan.empty() ? explain - 1 : 0;
      if (which >= ranked.size())
        return fail("--explain " + Twine(explain) + ": only " + Twine(ranked.size()) +
                    " plans fit");
      printExplain(os, ranked[which]);
    }
  }

  if (!planFile.empty()) {
    size_t which = explain && evaluatePlan.empty() ? explain - 1 : 0;
    if (which >= ranked.size())
      return fail("--plan-file: no plan of rank " + Twine(which + 1));
    if (Error err = writePlanFile(planFile, *model, *hw, gpus, globalBatch, ranked[which]))
      return fail(toString(std::move(err)));
  }
  return 0;
}
