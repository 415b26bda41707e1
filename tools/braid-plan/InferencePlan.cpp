//===- InferencePlan.cpp - braid-plan --inference -------------------------===//
//
//   braid-plan --inference --model ... --gpus 8 --hardware h200-sxm \
//       --prompt 2048 --output 128 --dtype fp8 --objective latency
//   braid-plan --inference ... --objective targets --ttft-ms 500 --tpot-ms 50
//   braid-plan --inference ... --evaluate tp=4,pp=2 --batch 64 --explain 1
//   braid-plan --inference ... --evaluate 'prefill:tp=8,cp=2;decode:tp=4'
//
//===----------------------------------------------------------------------===//

#include "InferencePlan.h"
#include "PlanReport.h"

#include "braid/Planner/InferenceSearch.h"
#include "braid/Planner/ServePlanFile.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

using namespace llvm;
using namespace braid::plan;

namespace braid::plan::report {

cl::OptionCategory &inferenceCategory() {
  static cl::OptionCategory category("Serving plans (--inference)");
  return category;
}

static cl::opt<bool> inference("inference",
                               cl::desc("Plan serving (prefill and decode) instead of training"),
                               cl::init(false), cl::cat(inferenceCategory()));
static cl::opt<int64_t> promptTokens("prompt", cl::desc("Tokens per prompt"), cl::init(0),
                                     cl::cat(inferenceCategory()));
static cl::opt<int64_t> outputTokens("output", cl::desc("Tokens generated per request"),
                                     cl::init(0), cl::cat(inferenceCategory()));
static cl::opt<int64_t>
    batch("batch", cl::desc("Concurrent sequences on the cluster (default: the objective's)"),
          cl::init(0), cl::cat(inferenceCategory()));
static cl::opt<double> rate("rate", cl::desc("Requests per second on the cluster"),
                            cl::init(0), cl::cat(inferenceCategory()));
static cl::opt<std::string> dtypeName("dtype",
                                      cl::desc("Weights and KV cache: bf16, fp16, fp8 or f32 (CPU ranks; "
                                               "default: bf16)"),
                                      cl::init("bf16"), cl::cat(inferenceCategory()));
static cl::opt<std::string>
    objectiveName("objective",
                  cl::desc("latency (end to end at the batch), throughput (output tokens/s "
                           "per GPU), targets (throughput within --ttft-ms and --tpot-ms; "
                           "default: throughput)"),
                  cl::init("throughput"), cl::cat(inferenceCategory()));
static cl::opt<double> ttftMs("ttft-ms", cl::desc("Target time to first token (ms)"),
                              cl::init(0), cl::cat(inferenceCategory()));
static cl::opt<double> tpotMs("tpot-ms", cl::desc("Target time per output token (ms)"),
                              cl::init(0), cl::cat(inferenceCategory()));
static cl::opt<std::string>
    batching("batching",
             cl::desc("continuous (steady state, chunked prefill) or static (a batch "
                      "prefilled together, then decoded to the end; default: continuous)"),
             cl::init("continuous"), cl::cat(inferenceCategory()));
static cl::opt<bool>
    disaggregate("disaggregate",
                 cl::desc("Search separate prefill and decode layouts too (default; "
                          "--disaggregate=false: colocated only)"),
                 cl::init(true), cl::cat(inferenceCategory()));
static cl::opt<int64_t> prefillChunk("prefill-chunk",
                                     cl::desc("Most prompt tokens a prefill pass takes (default: 8192)"),
                                     cl::init(8192), cl::cat(inferenceCategory()));

bool inferenceRequested() { return inference; }

static Error error(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// The options as the search takes them, every flag checked.
static Expected<ServeSearchOptions> serveOptions(const InferenceContext &ctx) {
  ServeSearchOptions o;
  o.gpus = ctx.gpus;
  if (batch < 0)
    return error("--batch must be >= 1");
  if (rate < 0 || !std::isfinite(rate))
    return error("--rate (requests per second) must be a number > 0");
  if (batch > 0 && rate > 0)
    return error("give --batch or --rate, not both");
  o.batch = batch;
  o.rate = rate;
  Expected<ServeObjective> objective = parseServeObjective(objectiveName);
  if (!objective)
    return objective.takeError();
  o.objective = *objective;
  if (ttftMs < 0 || tpotMs < 0)
    return error("--ttft-ms and --tpot-ms must be >= 0");
  if ((ttftMs > 0 || tpotMs > 0) && o.objective != ServeObjective::Targets)
    return error("--ttft-ms and --tpot-ms are the targets of --objective targets");
  if (o.objective == ServeObjective::Targets && ttftMs <= 0 && tpotMs <= 0)
    return error("--objective targets needs --ttft-ms or --tpot-ms");
  o.ttftTarget = ttftMs / 1e3;
  o.tpotTarget = tpotMs / 1e3;
  if (batching != "continuous" && batching != "static")
    return error("--batching is continuous or static, not '" + batching + "'");
  o.staticBatching = batching == "static";
  o.disaggregate = disaggregate && !o.staticBatching;
  o.top = std::max(ctx.top, ctx.explain);
  return o;
}

static Expected<Workload> workload(const InferenceContext &ctx) {
  if (promptTokens < 1)
    return error("--inference needs --prompt (tokens per prompt) >= 1");
  if (outputTokens < 1)
    return error("--inference needs --output (tokens generated per request) >= 1");
  if (promptTokens > (1 << 24) || outputTokens > (1 << 24))
    return error("--prompt and --output are at most 2^24 tokens");
  if (prefillChunk < 1)
    return error("--prefill-chunk must be >= 1");
  Workload w;
  w.prompt = promptTokens;
  w.output = outputTokens;
  w.prefillChunk = prefillChunk;
  Expected<ServeDtype> dtype = parseServeDtype(dtypeName);
  if (!dtype)
    return dtype.takeError();
  w.dtype = *dtype;
  return w;
}

/// --evaluate: one colocated layout, or "prefill:...;decode:...".
static Expected<ServeChoice> evaluateOne(const InferenceCost &cost,
                                         const ServeSearchOptions &options, StringRef spec) {
  auto layout = [&](StringRef text) -> Expected<ServeLayout> {
    auto [what, rest] = text.split(':');
    Expected<ServeLayout> l = parseServeLayout(rest.empty() ? what : rest);
    return l;
  };
  ServeChoice c;
  if (spec.contains(';') || spec.starts_with("prefill:")) {
    auto [first, second] = spec.split(';');
    if (!first.trim().starts_with("prefill:") || !second.trim().starts_with("decode:"))
      return error("--evaluate: separate layouts are 'prefill:tp=..,cp=..;decode:tp=..', not '" +
                   spec + "'");
    Expected<ServeLayout> p = layout(first.trim()), d = layout(second.trim());
    if (!p)
      return p.takeError();
    if (!d)
      return d.takeError();
    if (d->cp > 1)
      return error("--evaluate: cp splits prompts: give it in the prefill layout, not decode's");
    if (p->dp > 1 || p->ep > 1)
      return error("--evaluate: a prefill instance has no dp or ep (more instances take more "
                   "prompts)");
    if (p->gpus() + d->gpus() > options.gpus)
      return error("--evaluate: a prefill instance (" + Twine(p->gpus()) +
                   " GPUs) and a decode instance (" + Twine(d->gpus()) +
                   " GPUs) do not fit in --gpus " + Twine(options.gpus));
    c = evaluateDisaggregated(cost, *p, *d, options);
  } else {
    Expected<ServeLayout> l = layout(spec);
    if (!l)
      return l.takeError();
    if (l->cp > 1)
      return error("--evaluate: cp splits prompts for prefill: give it in a separate prefill "
                   "layout ('prefill:tp=..,cp=..;decode:tp=..')");
    if (l->gpus() != options.gpus)
      return error("the layout's grid " + l->str() + " has " + Twine(l->gpus()) +
                   " GPUs, not --gpus " + Twine(options.gpus));
    c = evaluateColocated(cost, *l, options);
  }
  if (!c.est.valid)
    return error("the layout " + spec + " cannot serve " + cost.model().name + ": " +
                 c.est.invalidReason +
                 (StringRef(c.est.invalidReason).contains("GiB")
                      ? " (" + std::to_string(int64_t(gb(cost.hardware().memoryBytes))) +
                            " GiB each)"
                      : std::string()));
  return c;
}

static void printTable(raw_ostream &os, ArrayRef<ServeChoice> choices) {
  os << format("%-4s %-44s %5s %9s %9s %11s %8s %7s\n", "rank", "layout", "gpus", "TTFT ms",
               "TPOT ms", "tok/s/GPU", "mem GiB", "batch");
  for (auto [i, c] : llvm::enumerate(choices))
    os << format("%-4zu %-44s %5lld %9.2f %9.2f %11.1f %8.1f %7lld\n", i + 1, c.str().c_str(),
                 (long long)c.gpus(), 1e3 * c.est.ttftSeconds, 1e3 * c.est.tpotSeconds,
                 c.est.tokensPerSecondPerGpu, gb(c.est.memory.total()),
                 (long long)c.est.batch);
}

static json::Object phaseJson(const PhaseTime &t) {
  return json::Object{{"compute_ms", 1e3 * t.compute}, {"memory_ms", 1e3 * t.memory},
                      {"tp_ms", 1e3 * t.tp},           {"cp_ms", 1e3 * t.cp},
                      {"ep_ms", 1e3 * t.ep},           {"pp_ms", 1e3 * t.pp},
                      {"launch_ms", 1e3 * t.launch},   {"total_ms", 1e3 * t.total()}};
}

static json::Object choiceJson(const ServeChoice &c) {
  const ServeEstimate &e = c.est;
  json::Object o{{"layout", c.str()},
                 {"gpus", c.gpus()},
                 {"ttft_ms", 1e3 * e.ttftSeconds},
                 {"tpot_ms", 1e3 * e.tpotSeconds},
                 {"tokens_per_s_per_gpu", e.tokensPerSecondPerGpu},
                 {"memory_gib", gb(e.memory.total())},
                 {"batch", e.batch},
                 {"max_batch", e.maxBatch},
                 {"disaggregated", c.disaggregated},
                 {"decode", c.decode.str()},
                 {"prefill_step", phaseJson(e.prefill)},
                 {"decode_step", phaseJson(e.decode)},
                 {"memory", json::Object{{"weights_gib", gb(e.memory.weights)},
                                         {"cache_gib", gb(e.memory.cache)},
                                         {"state_gib", gb(e.memory.state)},
                                         {"activations_gib", gb(e.memory.activations)},
                                         {"workspace_gib", gb(e.memory.workspace)}}}};
  if (c.disaggregated) {
    o["prefill"] = c.prefill.str();
    o["prefill_instances"] = c.prefillInstances;
    o["decode_instances"] = c.decodeInstances;
    o["kv_transfer_ms"] = 1e3 * c.transferSeconds;
  }
  return o;
}

static void printPhase(raw_ostream &os, const char *name, const PhaseTime &t) {
  os << format("  %-12s %9.3f ms: compute %.3f, memory %.3f, launch %.3f, tp %.3f, cp %.3f, "
               "ep %.3f, pp %.3f\n",
               name, 1e3 * t.total(), 1e3 * t.compute, 1e3 * t.memory, 1e3 * t.launch,
               1e3 * t.tp, 1e3 * t.cp, 1e3 * t.ep, 1e3 * t.pp);
}

static void printExplain(raw_ostream &os, size_t rank, const ServeChoice &c) {
  const ServeEstimate &e = c.est;
  os << "layout " << rank << ": " << c.str() << "\n";
  printPhase(os, "prefill", e.prefill);
  printPhase(os, "decode step", e.decode);
  if (c.disaggregated)
    os << format("  kv transfer  %9.3f ms\n", 1e3 * c.transferSeconds);
  os << format("  memory       %9.1f GiB: weights %.1f, kv cache %.1f, state %.1f, "
               "activations %.1f, workspace %.1f (batch %lld, at most %lld)\n",
               gb(e.memory.total()), gb(e.memory.weights), gb(e.memory.cache),
               gb(e.memory.state), gb(e.memory.activations), gb(e.memory.workspace),
               (long long)e.batch, (long long)e.maxBatch);
}

/// --plan-file: the chosen layout (rank 1, or --explain's) as braid-run's
/// --generate / --serve flags, with the cost model's figures for it.
static Error writeServePlan(const InferenceContext &ctx, const Workload &w,
                            const ServeChoice &chosen) {
  Expected<ServeRunFlags> flags = serveRunFlags(chosen, w);
  if (!flags)
    return flags.takeError();
  json::Object root{{"model", ctx.model.name},
                    {"hardware", ctx.hw.name},
                    {"gpus", ctx.gpus},
                    {"prompt", w.prompt},
                    {"output", w.output},
                    {"dtype", serveDtypeName(w.dtype)},
                    {"batching", std::string(batching)},
                    {"layout", chosen.str()},
                    {"predicted", choiceJson(chosen)}};
  return writeServePlanFile(ctx.planFile, std::move(root), *flags);
}

Error runInference(const InferenceContext &ctx, raw_ostream &os) {
  Expected<Workload> w = workload(ctx);
  if (!w)
    return w.takeError();
  double fp8 = fp8PeakFlops(ctx.hw, ctx.hardwareSource);
  if (w->dtype == ServeDtype::FP8 && fp8 <= 0)
    return error("--dtype fp8: " + ctx.hw.name +
                 " has no FP8 rate (a hardware description file gives one as peak_fp8_flops)");
  Expected<ServeSearchOptions> options = serveOptions(ctx);
  if (!options)
    return options.takeError();
  InferenceCost cost(ctx.model, ctx.hw, ctx.cal, *w, fp8);

  ServeSearchResult result;
  if (!ctx.evaluate.empty()) {
    Expected<ServeChoice> c = evaluateOne(cost, *options, ctx.evaluate);
    if (!c)
      return c.takeError();
    result.best.push_back(*c);
  } else {
    result = searchServing(cost, *options);
    if (result.best.empty())
      return error("no serving layout of " + ctx.model.name + " on " + Twine(ctx.gpus) + " x " +
                   ctx.hw.name + " (" + Twine(int64_t(gb(ctx.hw.memoryBytes))) +
                   " GiB each) fits" +
                   (options->objective == ServeObjective::Targets ? " and meets the targets"
                                                                  : "") +
                   (options->rate > 0 ? " and sustains the rate" : ""));
  }
  if (ctx.explain > result.best.size())
    return error("--explain " + Twine(ctx.explain) + ": only " + Twine(result.best.size()) +
                 " layouts");
  if (!ctx.planFile.empty())
    if (Error e = writeServePlan(ctx, *w, result.best[ctx.explain ? ctx.explain - 1 : 0]))
      return e;

  if (ctx.json) {
    json::Array layouts;
    for (const ServeChoice &c : result.best)
      layouts.push_back(choiceJson(c));
    json::Object root{{"model", ctx.model.name},
                      {"parameters", ctx.model.parameters()},
                      {"hardware", ctx.hw.name},
                      {"gpus", ctx.gpus},
                      {"prompt", w->prompt},
                      {"output", w->output},
                      {"dtype", serveDtypeName(w->dtype)},
                      {"objective", serveObjectiveName(options->objective)},
                      {"batching", std::string(batching)},
                      {"layouts", std::move(layouts)}};
    if (ctx.evaluate.empty())
      root["search"] = json::Object{{"evaluated", int64_t(result.evaluated)},
                                    {"seconds", result.seconds}};
    os << json::Value(std::move(root)) << "\n";
    return Error::success();
  }
  os << "braid-plan --inference: " << ctx.model.name << " ("
     << format("%.2f", ctx.model.parameters() / 1e9) << " B parameters, " << ctx.model.family
     << ") on " << ctx.gpus << " x " << ctx.hw.name << ", prompt " << w->prompt << ", output "
     << w->output << ", " << serveDtypeName(w->dtype) << ", ";
  if (options->rate > 0)
    os << format("rate %g requests/s (ranked by latency)", options->rate);
  else
    os << "objective " << serveObjectiveName(options->objective);
  os << ", " << batching << " batching\n";
  if (ctx.evaluate.empty())
    os << format("searched %llu layouts in %.3f s\n", (unsigned long long)result.evaluated,
                 result.seconds);
  size_t listed = std::min<size_t>(result.best.size(), std::max(1u, ctx.top));
  printTable(os, ArrayRef<ServeChoice>(result.best).take_front(listed));
  if (ctx.explain || !ctx.evaluate.empty())
    printExplain(os, ctx.explain ? ctx.explain : 1,
                 result.best[ctx.explain ? ctx.explain - 1 : 0]);
  return Error::success();
}

} // namespace braid::plan::report
