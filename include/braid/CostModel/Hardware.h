//===- Hardware.h - hardware descriptions for the cost model ----*- C++ -*-===//
//
// A cluster as the cost model sees it: nodes of `devicesPerNode` GPUs, a link
// class inside a node (NVLink through NVSwitch) and one between nodes
// (InfiniBand), each with the bandwidth a GPU has on it in one direction and
// the latency of one step of a ring over it. The descriptions are data
// (lib/CostModel/hardware/*.json, vendor figures with their sources), built
// into the library and looked up by name.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_COSTMODEL_HARDWARE_H
#define BRAID_LIB_COSTMODEL_HARDWARE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace braid::cost {

/// A class of links between GPUs.
struct LinkClass {
  std::string kind;           ///< "nvlink4", "infiniband-ndr", ...
  double bytesPerSecond = 0;  ///< per GPU, one direction
  double stepLatency = 0;     ///< seconds per step of a ring over it
  /// What a whole node's GPUs send over it at once, when they share fewer
  /// ports than they are (0: bytesPerSecond each, a port per GPU as on a
  /// DGX).
  double nodeBytesPerSecond = 0;
};

struct Hardware {
  std::string name, description;
  int64_t devicesPerNode = 0;
  double memoryBytes = 0, peakBf16Flops = 0, hbmBytesPerSecond = 0;
  /// Seconds every collective costs besides its steps (launch, sync).
  double collectiveLatency = 0;
  /// Seconds a kernel costs besides its work (its launch; 0 when a
  /// description does not say).
  double kernelLaunch = 0;
  LinkClass intraNode, interNode;
  std::vector<std::string> sources;
  /// Measured FLOP rates of products by op ("linear", "batch_matmul",
  /// "attention", ...: the op's name without its dialect), which time those
  /// ops at the roofline instead of the peak (a description of CPU ranks
  /// measured from a run's trace: each kernel's rate differs there by more
  /// than a shape model holds). Empty for the built-in GPUs.
  std::map<std::string, double> opFlopsPerSecond;
  /// The cores a run's ranks share when they are CPU ranks on one machine
  /// that has fewer cores than ranks (0: each rank has its own device, as
  /// GPUs do). Ranks computing at once then share them: each computes at
  /// min(1, hostCores / ranks computing) of its rate, and a rank that waits
  /// lends its core to those that compute (bench/overlap's four ranks on
  /// two cores). The simulation of a step applies it (StepSimulation.h);
  /// the overlap scheduler, which orders one rank's ops, does not.
  int64_t hostCores = 0;
  /// The cores `ranks` ranks share: hostCores when they are fewer than the
  /// ranks, else 0 (each rank computes alone).
  int64_t sharedCores(int64_t ranks) const {
    return hostCores > 0 && hostCores < ranks ? hostCores : 0;
  }

  /// The keys a description leaves out that the planner needs to time and
  /// fit plans (memory_bytes, peak_bf16_flops, hbm_bytes_per_s; the
  /// compiler's step simulation of CPU ranks does without), comma-separated;
  /// empty when it gives them all.
  std::string missingPlannerKeys() const {
    std::string missing;
    for (auto [key, value] : {std::pair<const char *, double>{"memory_bytes", memoryBytes},
                              {"peak_bf16_flops", peakBf16Flops},
                              {"hbm_bytes_per_s", hbmBytesPerSecond}})
      if (value <= 0)
        missing += (missing.empty() ? "" : ", ") + std::string(key);
    return missing;
  }

  /// Parses a description (the JSON of lib/CostModel/hardware).
  static llvm::Expected<Hardware> parse(llvm::StringRef json);
  /// The built-in description `name` ("h100-sxm", "h200-sxm", "a100-sxm"),
  /// or the one in file `name` when it ends in ".json".
  static llvm::Expected<Hardware> named(llvm::StringRef name);
  /// The names of the built-in descriptions.
  static std::vector<std::string> names();

  /// The seconds of work of `flops` reading and writing `bytes`, at the
  /// roofline (the slower of the peak rate and the memory bandwidth).
  double rooflineSeconds(double flops, double bytes) const {
    return std::max(flops / peakBf16Flops, bytes / hbmBytesPerSecond);
  }
};

} // namespace braid::cost

#endif // BRAID_LIB_COSTMODEL_HARDWARE_H
