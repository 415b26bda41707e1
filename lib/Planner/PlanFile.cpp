//===- PlanFile.cpp - a chosen plan, written for braid-run ----------------===//

#include "PlanFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace braid::plan;
using namespace llvm;

namespace {
Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

json::Object flagsJson(const RunFlags &f) {
  json::Array argv{"--grid", f.grid, "--zero", std::to_string(f.zero), "--recompute",
                   f.recompute, "--microbatches", std::to_string(f.microbatches)};
  if (f.grid.find("pp=") != std::string::npos) {
    argv.push_back("--schedule");
    argv.push_back(f.schedule);
    if (f.virtualStages > 1) {
      argv.push_back("--virtual-stages");
      argv.push_back(std::to_string(f.virtualStages));
    }
    if (!f.ppLayout.empty()) {
      argv.push_back("--pp-layout");
      argv.push_back(f.ppLayout);
    }
  }
  if (f.sequenceParallel)
    argv.push_back("--sequence-parallel");
  if (!f.dtype.empty()) {
    argv.push_back("--dtype");
    argv.push_back(f.dtype);
  }
  return json::Object{{"grid", f.grid},
                      {"zero", f.zero},
                      {"recompute", f.recompute},
                      {"microbatches", f.microbatches},
                      {"schedule", f.schedule},
                      {"virtual_stages", f.virtualStages},
                      {"pp_layout", f.ppLayout},
                      {"sequence_parallel", f.sequenceParallel},
                      {"dtype", f.dtype},
                      {"braid_run_flags", std::move(argv)}};
}
} // namespace

RunFlags braid::plan::runFlags(const Plan &p, bool bf16) {
  RunFlags f;
  f.grid = p.gridString();
  f.zero = p.zero;
  f.recompute = mlir::braid::stringifyRecompute(p.recompute).str();
  f.microbatches = p.microbatches;
  f.virtualStages = p.vpp;
  f.schedule = mlir::braid::stringifyScheduleKind(p.schedule()).str();
  for (size_t i = 0; i < p.layout.size(); ++i)
    f.ppLayout += (i ? "," : "") + std::to_string(p.layout[i]);
  f.sequenceParallel = p.sequenceParallel && p.tp > 1;
  if (bf16)
    f.dtype = "bf16";
  return f;
}

ReducedPlan braid::plan::reducePlan(const ModelShape &model, const Plan &full,
                                    int64_t maxRanks) {
  ReducedPlan r;
  Plan &p = r.plan;
  auto two = [](int64_t n) -> int64_t { return n > 1 ? 2 : 1; };
  p.pp = two(full.pp);
  p.dp = two(full.dp);
  p.ep = two(full.ep);
  p.cp = two(full.cp);
  p.tp = two(full.tp);
  // Too many ranks: drop axes, plain data parallelism first (unless ZeRO
  // shards over it), the pipeline and tp last.
  std::vector<int64_t *> order;
  if (full.zero == 0)
    order.push_back(&p.dp);
  order.insert(order.end(), {&p.ep, &p.cp, &p.dp, &p.tp, &p.pp});
  for (int64_t *axis : order)
    if (p.gpus() > maxRanks)
      *axis = 1;
  p.vpp = p.pp > 1 ? std::min<int64_t>(full.vpp, 2) : 1;
  p.zeroBubble = full.zeroBubble && p.pp > 1 && p.vpp == 1;
  p.microBatch = 1;
  p.microbatches = p.pp > 1 ? 2 * p.pp : std::min<int64_t>(full.microbatches, 2);
  p.zero = p.dp * p.ep * p.cp > 1 ? full.zero : 0;
  p.recompute = full.recompute;
  p.sequenceParallel = full.sequenceParallel;
  static const std::map<std::string, std::string> tiny = {
      {"gpt", "gpt-tiny"}, {"llama", "llama-tiny"}, {"moe", "moe-tiny"},
      {"mamba", "mamba-tiny"}, {"hybrid", "hybrid-tiny"}};
  r.preset = tiny.at(model.family);
  int64_t layers = 2 * p.pp * p.vpp;
  if (model.family == "hybrid") // keep every layer kind of its 4-layer period
    layers = (layers + 3) / 4 * 4;
  r.overrides["layers"] = layers;
  r.overrides["batch"] = p.dp * p.ep * p.microBatch * p.microbatches;
  return r;
}

Error braid::plan::writePlanFile(StringRef path, const ModelShape &model,
                                 const cost::Hardware &hw, int64_t gpus, int64_t globalBatch,
                                 const RankedPlan &chosen) {
  Plan full = chosen.plan;
  if (full.layout.empty() && full.pp > 1)
    full.layout = chosen.estimate.layout;
  ReducedPlan reduced = reducePlan(model, chosen.plan);
  json::Object overrides;
  for (auto &[key, value] : reduced.overrides)
    overrides[key] = value;
  json::Array build{"python3", "-m", "braid.models", reduced.preset};
  for (auto &[key, value] : reduced.overrides) {
    build.push_back("--" + key);
    build.push_back(std::to_string(value));
  }
  const Estimate &e = chosen.estimate;
  json::Object root{
      {"braid_plan", 1},
      {"model", json::Object{{"name", model.name},
                             {"family", model.family},
                             {"parameters", model.parameters()},
                             {"seq", model.seq}}},
      {"hardware", hw.name},
      {"gpus", gpus},
      {"global_batch", globalBatch},
      {"plan", flagsJson(runFlags(full, /*bf16=*/true))},
      {"predicted", json::Object{{"step_s", e.stepSeconds},
                                 {"mfu", e.mfu},
                                 {"tokens_per_s", e.tokensPerSecond},
                                 {"memory_bytes", e.memoryBytes()},
                                 {"exposed_comm_s", e.exposedSeconds()},
                                 {"bubble_s", e.bubbleSeconds}}},
      {"reduced", [&] {
         json::Object o = flagsJson(runFlags(reduced.plan, /*bf16=*/false));
         o["preset"] = reduced.preset;
         o["overrides"] = std::move(overrides);
         o["model_build"] = std::move(build);
         return o;
       }()}};
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_Text);
  if (ec)
    return fail("cannot write " + path + ": " + ec.message());
  os << formatv("{0:2}", json::Value(std::move(root))) << "\n";
  return Error::success();
}

Expected<RunFlags> braid::plan::readPlanFile(StringRef path, StringRef section) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(path);
  if (!file)
    return fail("cannot read plan file " + path + ": " + file.getError().message());
  Expected<json::Value> value = json::parse((*file)->getBuffer());
  if (!value)
    return fail(path + ": not JSON: " + toString(value.takeError()));
  const json::Object *root = value->getAsObject();
  if (!root || !root->getInteger("braid_plan"))
    return fail(path + ": not a plan file of braid-plan (no braid_plan key)");
  const json::Object *s = root->getObject(section);
  if (!s)
    return fail(path + ": no '" + section + "' section");
  RunFlags f;
  std::optional<StringRef> grid = s->getString("grid"), recompute = s->getString("recompute"),
                           schedule = s->getString("schedule");
  std::optional<int64_t> zero = s->getInteger("zero"), micro = s->getInteger("microbatches"),
                         vpp = s->getInteger("virtual_stages");
  if (!grid || !recompute || !schedule || !zero || !micro || !vpp)
    return fail(path + ": section '" + section +
                "' needs grid, zero, recompute, microbatches, schedule and virtual_stages");
  f.grid = grid->str();
  f.recompute = recompute->str();
  f.schedule = schedule->str();
  f.zero = int(*zero);
  f.microbatches = *micro;
  f.virtualStages = *vpp;
  if (std::optional<StringRef> layout = s->getString("pp_layout"))
    f.ppLayout = layout->str();
  if (std::optional<StringRef> dtype = s->getString("dtype"))
    f.dtype = dtype->str();
  f.sequenceParallel = s->getBoolean("sequence_parallel").value_or(false);
  return f;
}
