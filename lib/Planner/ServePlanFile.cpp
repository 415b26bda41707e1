//===- ServePlanFile.cpp - a chosen serving layout, written for braid-run -===//

#include "braid/Planner/ServePlanFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace braid::plan;

static Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// braid-run's --grid for `l`: its axes of size > 1, none on one rank.
static std::string gridOf(const ServeLayout &l) {
  return l.gpus() == 1 ? std::string() : l.str();
}

Expected<ServeRunFlags> braid::plan::serveRunFlags(const ServeChoice &c, const Workload &w,
                                                   int64_t pageSize) {
  // The planner's ep spans a stage's dp x tp ranks (data-parallel attention);
  // braid-run's ep is an axis of its own.
  if (c.decode.ep > 1 || c.prefill.ep > 1)
    return fail("--plan-file: layout " + c.str() +
                " puts the experts over dp x tp ranks, which braid-run's grids do not express "
                "yet (its ep is an axis of its own)");
  if (c.disaggregated && (c.prefillInstances != 1 || c.decodeInstances != 1))
    return fail("--plan-file: layout " + c.str() +
                " has several prefill or decode instances; braid-run --disaggregate runs one "
                "of each");
  ServeRunFlags f;
  f.grid = gridOf(c.decode);
  f.disaggregate = c.disaggregated;
  if (c.disaggregated)
    f.prefillGrid = gridOf(c.prefill);
  f.generate = w.output;
  f.batch = std::max<int64_t>(1, c.est.batch);
  f.promptLen = w.prompt;
  f.context = w.prompt + w.output;
  f.pageSize = pageSize;
  // Every sequence of a replica holds its whole context at the end.
  int64_t replicas = std::max<int64_t>(1, c.decode.dp);
  int64_t perReplica = (f.batch + replicas - 1) / replicas;
  f.kvPages = perReplica * ((f.context + pageSize - 1) / pageSize);
  f.prefillChunk = std::min(w.prompt, w.prefillChunk);
  return f;
}

Error braid::plan::writeServePlanFile(StringRef path, json::Object root,
                                      const ServeRunFlags &f) {
  json::Object run{{"generate", f.generate},   {"batch", f.batch},
                   {"prompt_len", f.promptLen}, {"context", f.context},
                   {"page_size", f.pageSize},   {"kv_pages", f.kvPages},
                   {"prefill_chunk", f.prefillChunk}, {"grid", f.grid},
                   {"disaggregate", f.disaggregate}};
  if (f.disaggregate)
    run["prefill_grid"] = f.prefillGrid;
  root["braid_serve_plan"] = 1;
  root["run"] = std::move(run);
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_Text);
  if (ec)
    return fail("--plan-file: cannot write " + path + ": " + ec.message());
  os << formatv("{0:2}", json::Value(std::move(root))) << "\n";
  return Error::success();
}

Expected<std::optional<ServeRunFlags>> braid::plan::readServePlanFile(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(path);
  if (!file)
    return fail("cannot read plan file " + path + ": " + file.getError().message());
  Expected<json::Value> value = json::parse((*file)->getBuffer());
  if (!value)
    return fail(path + ": not JSON: " + toString(value.takeError()));
  const json::Object *root = value->getAsObject();
  if (!root || !root->getInteger("braid_serve_plan"))
    return std::nullopt;
  const json::Object *run = root->getObject("run");
  if (!run)
    return fail(path + ": a serving plan without its 'run' section");
  ServeRunFlags f;
  for (auto [key, out] : {std::pair{"generate", &f.generate},
                          {"batch", &f.batch},
                          {"prompt_len", &f.promptLen},
                          {"context", &f.context},
                          {"page_size", &f.pageSize},
                          {"kv_pages", &f.kvPages},
                          {"prefill_chunk", &f.prefillChunk}}) {
    std::optional<int64_t> v = run->getInteger(key);
    if (!v || *v < 0)
      return fail(path + ": 'run' needs " + key + ", a count");
    *out = *v;
  }
  std::optional<StringRef> grid = run->getString("grid");
  if (!grid)
    return fail(path + ": 'run' needs grid, a string");
  f.grid = grid->str();
  f.disaggregate = run->getBoolean("disaggregate").value_or(false);
  if (f.disaggregate) {
    std::optional<StringRef> prefill = run->getString("prefill_grid");
    if (!prefill)
      return fail(path + ": 'run' with disaggregate needs prefill_grid");
    f.prefillGrid = prefill->str();
  }
  return std::optional<ServeRunFlags>(std::move(f));
}
