//===- PlannerInputs.cpp - fuzz target: what braid-plan reads -------------===//
//
// braid-plan's inputs that are not MLIR: a model given as key=value,...
// (--model), a hardware description and a compute calibration (JSON files
// of one's own cluster), a cluster size and a global batch. The input's first
// bytes are the model (up to a backslash, FuzzedDataProvider's string), the
// last bytes choose the GPUs, the batch, which description the rest is
// (none: the built-in H100's; the hardware; the calibration) and the
// search's choices. What parses
// goes through the search, and when no plan fits, the smallest cluster that
// holds the model, as braid-plan does: a message or plans whose step, MFU
// and memory are positive finite numbers, never a crash, a sanitizer report
// or a hang. Seeds: the built-in descriptions and the
// published models' shapes (test/Fuzz/planner-inputs.py).
//
//===----------------------------------------------------------------------===//

#include "braid/CostModel/ComputeCost.h"
#include "braid/CostModel/Hardware.h"
#include "braid/Planner/Search.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {
bool verbose() {
  static const bool on = std::getenv("BRAID_FUZZ_VERBOSE") != nullptr;
  return on;
}

/// The error's text, printed when verbose (a bad input's message).
template <typename T>
bool failed(llvm::Expected<T> &value) {
  if (value)
    return false;
  std::string message = llvm::toString(value.takeError());
  if (verbose())
    llvm::errs() << "braid-fuzz-plan: " << message << "\n";
  return true;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider in(data, size);
  // From the input's end: the cluster, the batch, what the rest describes,
  // then the search's choices as braid-plan's --zero and --recompute lists
  // (bit masks) and its limits on virtual stages and the micro-batch, which
  // also keep a search of thousands of GPUs to a fraction of a second.
  int64_t gpus = in.ConsumeIntegralInRange<int64_t>(1, 4096);
  int64_t globalBatch = in.ConsumeIntegralInRange<int64_t>(1, 1 << 16);
  int which = in.ConsumeIntegralInRange<int>(0, 2);
  braid::plan::SearchOptions options;
  options.gpus = gpus;
  options.globalBatch = globalBatch;
  options.top = 3;
  unsigned zeroMask = in.ConsumeIntegralInRange<unsigned>(1, 15);
  unsigned recomputeMask = in.ConsumeIntegralInRange<unsigned>(1, 7);
  options.zeroStages.clear();
  for (int z = 0; z < 4; ++z)
    if (zeroMask & (1u << z))
      options.zeroStages.push_back(z);
  options.recomputes.clear();
  for (braid::plan::Recompute r : {braid::plan::Recompute::None,
                                   braid::plan::Recompute::Selective,
                                   braid::plan::Recompute::Full})
    if (recomputeMask & (1u << int(r)))
      options.recomputes.push_back(r);
  options.maxVirtualStages = in.ConsumeIntegralInRange<int64_t>(1, 8);
  options.maxMicroBatch = in.ConsumeIntegralInRange<int64_t>(1, 16);
  std::string modelSpec = in.ConsumeRandomLengthString(size);
  std::string json = in.ConsumeRemainingBytesAsString();

  llvm::Expected<braid::plan::ModelShape> model = braid::plan::ModelShape::fromString(modelSpec);
  if (failed(model))
    return 0;
  llvm::Expected<braid::cost::Hardware> hw =
      which == 1 ? braid::cost::Hardware::parse(json) : braid::cost::Hardware::named("h100-sxm");
  if (failed(hw) || !hw->missingPlannerKeys().empty()) // braid-plan's message
    return 0;
  llvm::Expected<braid::cost::ComputeCalibration> cal =
      which == 2 ? braid::cost::ComputeCalibration::parse(json)
                 : braid::cost::ComputeCalibration::named("h100-sxm");
  if (failed(cal))
    return 0;
  llvm::Expected<braid::plan::Runtime> rt = braid::plan::Runtime::named("braid");
  if (failed(rt))
    return 0;

  braid::plan::PlanCost cost(*model, *hw, *cal, *rt);
  braid::plan::SearchResult result = braid::plan::searchPlans(cost, options);
  // A plan's figures are numbers a user can act on: a positive, finite step
  // and MFU, a finite memory. Anything else is a finding.
  for (const braid::plan::RankedPlan &r : result.best) {
    const braid::plan::Estimate &e = r.estimate;
    if (!(std::isfinite(e.stepSeconds) && e.stepSeconds > 0 && std::isfinite(e.mfu) &&
          e.mfu > 0 && std::isfinite(e.memoryBytes()) && e.memoryBytes() > 0)) {
      llvm::errs() << "braid-fuzz-plan: " << r.plan.gridString() << ": step " << e.stepSeconds
                   << " s, MFU " << e.mfu << ", memory " << e.memoryBytes() << " bytes\n";
      std::abort();
    }
  }
  if (result.best.empty()) {
    braid::plan::RankedPlan smallest;
    int64_t n = braid::plan::smallestCluster(cost, &smallest);
    if (verbose())
      llvm::errs() << "braid-fuzz-plan: no plan fits; smallest cluster " << n << "\n";
  } else if (verbose()) {
    llvm::errs() << "braid-fuzz-plan: " << result.best.size() << " plans, first "
                 << result.best.front().plan.gridString() << "\n";
  }
  return 0;
}
