//===- PlanFile.cpp - a chosen plan, written for braid-run ----------------===//

#include "braid/Planner/PlanFile.h"

#include "braid/Pipelines.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace braid::plan;
using namespace llvm;
using mlir::braid::Precision;
using mlir::braid::Recompute;
using mlir::braid::ScheduleKind;

namespace {
Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// "7,8,8,7", as --pp-layout takes it.
std::string layoutText(ArrayRef<int64_t> layout) {
  std::string text;
  for (int64_t layers : layout)
    text += (text.empty() ? "" : ",") + std::to_string(layers);
  return text;
}

json::Object flagsJson(const RunFlags &f) {
  std::string recompute = stringifyEnum(f.recompute).str();
  std::string schedule = stringifyEnum(f.schedule).str();
  std::string layout = layoutText(f.ppLayout);
  std::string dtype = f.dtype ? stringifyEnum(*f.dtype).str() : "";
  json::Array argv{"--grid", f.grid, "--zero", std::to_string(f.zero), "--recompute",
                   recompute, "--microbatches", std::to_string(f.microbatches)};
  if (f.grid.find("pp=") != std::string::npos) {
    argv.push_back("--schedule");
    argv.push_back(schedule);
    if (f.virtualStages > 1) {
      argv.push_back("--virtual-stages");
      argv.push_back(std::to_string(f.virtualStages));
    }
    if (!layout.empty()) {
      argv.push_back("--pp-layout");
      argv.push_back(layout);
    }
  }
  if (f.sequenceParallel)
    argv.push_back("--sequence-parallel");
  if (f.dtype) {
    argv.push_back("--dtype");
    argv.push_back(dtype);
  }
  return json::Object{{"grid", f.grid},
                      {"zero", f.zero},
                      {"recompute", recompute},
                      {"microbatches", f.microbatches},
                      {"schedule", schedule},
                      {"virtual_stages", f.virtualStages},
                      {"pp_layout", layout},
                      {"sequence_parallel", f.sequenceParallel},
                      {"dtype", dtype},
                      {"braid_run_flags", std::move(argv)}};
}

/// Where a plan file's values are read from, for messages.
struct Section {
  StringRef path, name;
  const json::Object &values;

  Error bad(const Twine &message) const {
    return fail(path + ": section '" + name + "': " + message);
  }

  /// The value of `key`, one of enum E's keywords.
  template <typename E> Expected<E> choice(StringRef key) const {
    StringRef word = values.getString(key).value_or("");
    if (std::optional<E> value = mlir::braid::symbolizeEnum<E>(word))
      return *value;
    return bad(key + " must be " + mlir::braid::enumKeywords<E>() + ", found '" + word + "'");
  }

  /// The layers per chunk of `pp_layout` ("7,8,8,7"; none when absent).
  Expected<std::vector<int64_t>> layout() const {
    StringRef text = values.getString("pp_layout").value_or("");
    std::vector<int64_t> counts;
    SmallVector<StringRef> items;
    if (!text.empty())
      text.split(items, ',');
    for (StringRef item : items) {
      int64_t n;
      if (item.trim().getAsInteger(10, n) || n < 1)
        return bad("pp_layout must list positive layer counts (e.g. 2,3), found '" + text +
                   "'");
      counts.push_back(n);
    }
    return counts;
  }
};
} // namespace

void RunFlags::applyTo(TrainingPipelineOptions &options) const {
  options.grid = grid;
  options.zero = zero;
  options.recompute = recompute;
  options.microbatches = int(microbatches);
  // A schedule orders micro-batches: braid-run refuses one given for a step
  // that has neither a pipeline nor several micro-batches.
  if (microbatches > 1 || grid.find("pp=") != std::string::npos)
    options.schedule = schedule;
  options.virtualStages = int(virtualStages);
  options.ppLayout = ArrayRef<int64_t>(ppLayout);
  options.sequenceParallel = sequenceParallel;
  if (dtype)
    options.dtype = *dtype;
}

RunFlags braid::plan::runFlags(const Plan &p, bool bf16) {
  RunFlags f;
  f.grid = p.gridString();
  f.zero = p.zero;
  f.recompute = p.recompute;
  f.microbatches = p.microbatches;
  f.virtualStages = p.vpp;
  f.schedule = p.schedule();
  // Chunks exist only in a pipeline.
  if (p.pp > 1)
    f.ppLayout = p.layout;
  f.sequenceParallel = p.sequenceParallel && p.tp > 1;
  if (bf16)
    f.dtype = Precision::BF16;
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
  std::optional<StringRef> grid = s->getString("grid");
  std::optional<int64_t> zero = s->getInteger("zero"), micro = s->getInteger("microbatches"),
                         vpp = s->getInteger("virtual_stages");
  if (!grid || !s->getString("recompute") || !s->getString("schedule") || !zero || !micro ||
      !vpp)
    return fail(path + ": section '" + section +
                "' needs grid, zero, recompute, microbatches, schedule and virtual_stages");
  Section in{path, section, *s};
  RunFlags f;
  f.grid = grid->str();
  f.zero = int(*zero);
  f.microbatches = *micro;
  f.virtualStages = *vpp;
  f.sequenceParallel = s->getBoolean("sequence_parallel").value_or(false);
  Expected<Recompute> recompute = in.choice<Recompute>("recompute");
  if (!recompute)
    return recompute.takeError();
  f.recompute = *recompute;
  Expected<ScheduleKind> schedule = in.choice<ScheduleKind>("schedule");
  if (!schedule)
    return schedule.takeError();
  f.schedule = *schedule;
  Expected<std::vector<int64_t>> layout = in.layout();
  if (!layout)
    return layout.takeError();
  f.ppLayout = std::move(*layout);
  // An empty dtype: the model's own element type.
  if (!s->getString("dtype").value_or("").empty()) {
    Expected<Precision> dtype = in.choice<Precision>("dtype");
    if (!dtype)
      return dtype.takeError();
    f.dtype = *dtype;
  }
  return f;
}
