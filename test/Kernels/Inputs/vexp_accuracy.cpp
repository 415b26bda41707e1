// The vectorizable exp of the CPU selective scan (runtime/src/cpu/vexp.h)
// against double exp: every 1e-4 over [-87.33, 88] (the clamped range) and
// every float in [-1, 1] step 2^-16, within 1 ulp of the correctly rounded
// float; below the range it gives about the smallest normal float (not 0),
// above it exp(88) (not inf).
// Run by test/Kernels/vexp-accuracy.test.

#include "vexp.h"

#include <cfloat>
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
  for (double x = -87.33; x <= 88.0; x += 1e-4)
    if (double e = ulpError(float(x)); e > worst)
      worst = e, at = float(x);
  for (double x = -1.0; x <= 1.0; x += 1.0 / 65536)
    if (double e = ulpError(float(x)); e > worst)
      worst = e, at = float(x);
  std::printf("worst %.3f ulp at %g\n", worst, double(at));
  const float tiny = braid::cpu::expLanes(-1000.0f);
  const bool low = tiny > 0 && tiny <= 1.01f * FLT_MIN;
  const bool high = braid::cpu::expLanes(1000.0f) == braid::cpu::expLanes(88.0f) &&
                    std::isfinite(braid::cpu::expLanes(1000.0f));
  std::printf(low && high ? "clamped ok\n" : "clamped WRONG\n");
  return worst < 1.0 && low && high ? 0 : 1;
}
