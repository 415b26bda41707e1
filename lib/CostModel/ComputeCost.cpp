//===- ComputeCost.cpp - achievable compute rates of a GPU kind -----------===//

#include "braid/CostModel/ComputeCost.h"

#include "DataFiles.h"

#include "llvm/Support/JSON.h"

#include <algorithm>

using namespace braid::cost;

namespace {
#include "CalibrationData.inc"
} // namespace

llvm::Expected<ComputeCalibration> ComputeCalibration::parse(llvm::StringRef json) {
  llvm::Expected<llvm::json::Object> object = parseDescription(json, "a calibration");
  if (!object)
    return object.takeError();
  const llvm::json::Object *o = &*object;
  ComputeCalibration c;
  std::optional<llvm::StringRef> hw = o->getString("hardware");
  if (!hw)
    return descriptionError("a calibration names its hardware");
  c.hardware = hw->str();
  // Every fraction must be given: a calibration that silently fell back to a
  // default would not be the measurement it claims to be.
  struct Field {
    const char *key;
    double *out;
    bool fraction;
  } fields[] = {
      {"gemm_efficiency", &c.gemmEfficiency, true},
      {"gemm_half_dim", &c.gemmHalfDim, false},
      {"flash_forward_efficiency", &c.flashForwardEfficiency, true},
      {"flash_backward_efficiency", &c.flashBackwardEfficiency, true},
      {"memory_efficiency", &c.memoryEfficiency, true},
      {"scan_efficiency", &c.scanEfficiency, true},
      {"reserved_bytes", &c.reservedBytes, false},
  };
  for (Field &f : fields) {
    std::optional<double> v = o->getNumber(f.key);
    if (!v || !inRange(*v, 0, f.fraction ? 1 : kMaxRate) || (f.fraction && *v <= 0))
      return descriptionError(c.hardware + ": " + f.key +
                              (f.fraction ? " must be a fraction in (0, 1]"
                                          : " must be a number in [0, 1e21]"));
    *f.out = *v;
  }
  c.sources = readSources(*o);
  if (c.sources.empty())
    return descriptionError(c.hardware + ": a calibration cites its sources");
  return c;
}

llvm::Expected<ComputeCalibration> ComputeCalibration::named(llvm::StringRef name) {
  return parseNamed(name, kBuiltins, "compute calibration",
                    [](llvm::StringRef json) { return parse(json); });
}

double ComputeCalibration::gemmSeconds(const Hardware &hw, double m, double n,
                                       double k, double batch) const {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
    return 0;
  auto q = [&](double x) { return x / (x + gemmHalfDim); };
  double rate = hw.peakBf16Flops * gemmEfficiency * q(m) * q(n) * q(k);
  double compute = 2 * m * n * k * batch / rate;
  double memory = memorySeconds(hw, 2 * (m * k + k * n + m * n) * batch);
  return std::max(compute, memory) + hw.kernelLaunch;
}

double ComputeCalibration::flashSeconds(const Hardware &hw, double flops,
                                        bool backward) const {
  double efficiency = backward ? flashBackwardEfficiency : flashForwardEfficiency;
  return flops / (hw.peakBf16Flops * efficiency) + hw.kernelLaunch;
}

double ComputeCalibration::scanSeconds(const Hardware &hw, double flops,
                                       double bytes) const {
  return std::max(flops / (hw.peakBf16Flops * scanEfficiency), memorySeconds(hw, bytes)) +
         hw.kernelLaunch;
}
