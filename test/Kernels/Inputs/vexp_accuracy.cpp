// The vectorizable exp of the CPU attention softmax and selective scan
// (runtime/src/cpu/vexp.h) against double exp: every 1e-4 over [-87, 88]
// and every float in [-1, 1] step 2^-16, within 1 ulp of the correctly
// rounded float; below -87 (and at -inf) it gives 0, above 88 exp(88) (not
// inf).
// Run by test/Kernels/vexp-accuracy.test.

#include "vexp.h"

#include <cmath>
#include <cstdio>

static double ulpError(float x) {
  const double ref = std::exp(double(x));
  const float rounded = float(ref);
  const double ulp = double(std::nextafter(rounded, INFINITY)) - double(rounded);
  return std::fabs(double(braid::cpu::expLanes(x)) - ref) / ulp;
}

int main() {
  double worst = 0;
  float at = 0;
  for (double x = -87.0; x <= 88.0; x += 1e-4)
    if (double e = ulpError(float(x)); e > worst)
      worst = e, at = float(x);
  for (double x = -1.0; x <= 1.0; x += 1.0 / 65536)
    if (double e = ulpError(float(x)); e > worst)
      worst = e, at = float(x);
  std::printf("worst %.3f ulp at %g\n", worst, double(at));
  const bool low = braid::cpu::expLanes(-87.5f) == 0.0f &&
                   braid::cpu::expLanes(-INFINITY) == 0.0f;
  const bool high = braid::cpu::expLanes(1000.0f) == braid::cpu::expLanes(88.0f) &&
                    std::isfinite(braid::cpu::expLanes(1000.0f));
  std::printf(low && high ? "clamped ok\n" : "clamped WRONG\n");
  return worst < 1.0 && low && high ? 0 : 1;
}
