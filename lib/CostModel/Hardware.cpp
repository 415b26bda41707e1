//===- Hardware.cpp - hardware descriptions for the cost model ------------===//

#include "braid/CostModel/Hardware.h"

#include "DataFiles.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace braid::cost;

namespace {
/// The built-in descriptions: (name, JSON), generated from hardware/*.json.
#include "HardwareData.inc"

bool readLink(const llvm::json::Object *link, LinkClass *out) {
  if (!link)
    return false;
  std::optional<llvm::StringRef> kind = link->getString("kind");
  std::optional<double> bw = link->getNumber("bytes_per_s");
  std::optional<double> lat = link->getNumber("step_latency_s");
  if (!kind || !bw || !lat || !inRange(*bw, 1, kMaxRate) || !inRange(*lat, 0, kMaxSeconds))
    return false;
  *out = {kind->str(), *bw, *lat, 0};
  if (std::optional<double> node = link->getNumber("node_bytes_per_s")) {
    if (!inRange(*node, 1, kMaxRate))
      return false;
    out->nodeBytesPerSecond = *node;
  }
  return true;
}
} // namespace

llvm::Expected<Hardware> Hardware::parse(llvm::StringRef json) {
  llvm::Expected<llvm::json::Object> object = parseDescription(json, "a hardware description");
  if (!object)
    return object.takeError();
  const llvm::json::Object *o = &*object;
  Hardware hw;
  std::optional<llvm::StringRef> name = o->getString("name");
  std::optional<int64_t> devices = o->getInteger("devices_per_node");
  std::optional<double> latency = o->getNumber("collective_latency_s");
  if (!name || !devices || *devices < 1 || *devices > (int64_t(1) << 20) || !latency ||
      !inRange(*latency, 0, kMaxSeconds))
    return descriptionError("a hardware description needs name, devices_per_node >= 1 and "
                            "collective_latency_s (seconds, >= 0)");
  hw.name = name->str();
  hw.devicesPerNode = *devices;
  hw.collectiveLatency = *latency;
  if (std::optional<llvm::StringRef> d = o->getString("description"))
    hw.description = d->str();
  // What the planner needs and the compiler's step simulation of CPU ranks
  // may leave out (0: not given).
  struct Optional {
    const char *key;
    double *out;
    bool seconds; ///< else a rate or a size
  } optional[] = {{"memory_bytes", &hw.memoryBytes, false},
                  {"peak_bf16_flops", &hw.peakBf16Flops, false},
                  {"hbm_bytes_per_s", &hw.hbmBytesPerSecond, false},
                  {"kernel_launch_s", &hw.kernelLaunch, true}};
  for (const Optional &f : optional)
    if (const llvm::json::Value *v = o->get(f.key)) {
      std::optional<double> n = v->getAsNumber();
      if (!n || !(f.seconds ? inRange(*n, 0, kMaxSeconds) : inRange(*n, 1, kMaxRate)))
        return descriptionError(hw.name + ": " + f.key + " must be a number in " +
                                (f.seconds ? "[0, 1e3] (seconds)" : "[1, 1e21]"));
      *f.out = *n;
    }
  if (!readLink(o->getObject("intra_node"), &hw.intraNode) ||
      !readLink(o->getObject("inter_node"), &hw.interNode))
    return descriptionError(hw.name + ": intra_node and inter_node need kind, bytes_per_s "
                                      "> 0 and step_latency_s >= 0 (and node_bytes_per_s > 0 "
                                      "if given)");
  if (const llvm::json::Object *rates = o->getObject("op_flops_per_s"))
    for (const auto &[op, rate] : *rates) {
      std::optional<double> r = rate.getAsNumber();
      if (!r || !inRange(*r, 1, kMaxRate))
        return descriptionError(hw.name + ": op_flops_per_s." + op.str() + " must be a rate > 0");
      hw.opFlopsPerSecond[op.str()] = *r;
    }
  if (const llvm::json::Value *cores = o->get("host_cores")) {
    std::optional<int64_t> n = cores->getAsInteger();
    if (!n || *n < 1)
      return descriptionError(hw.name + ": host_cores must be an integer >= 1");
    hw.hostCores = *n;
  }
  hw.sources = readSources(*o);
  if (hw.sources.empty())
    return descriptionError(hw.name + ": a description cites its sources");
  return hw;
}

llvm::Expected<Hardware> Hardware::named(llvm::StringRef name) {
  // A cluster of one's own: a description in a file.
  return parseNamed(name, kBuiltins, "hardware description",
                    [](llvm::StringRef json) { return parse(json); });
}

std::vector<std::string> Hardware::names() {
  std::vector<std::string> out;
  for (const Builtin &b : kBuiltins)
    out.push_back(b.name);
  return out;
}
