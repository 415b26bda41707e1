//===- fp16.cpp - cudasim: f16 conversions ----------------------------------===//
//
// __half to and from float, rounding to nearest even as the device does (the
// bf16 conversions are inline in cudasim.h: they are a shift and a rounding).
//
//===----------------------------------------------------------------------===//

#include "cudasim/cudasim.h"
#include "internal.h"

#include <cmath>
#include <cstdint>

float __half2float(__half h) {
  uint32_t sign = uint32_t(h.bits & 0x8000) << 16, exp = (h.bits >> 10) & 0x1f,
           man = h.bits & 0x3ff;
  if (exp == 0x1f)
    return cudasimBitsToFloat(sign | 0x7f800000 | (man << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return cudasimBitsToFloat(sign | ((exp + 112) << 23) | (man << 13));
}

__half __float2half_rn(float f) {
  uint32_t u = cudasimFloatToBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  if (std::isnan(f))
    return __half{static_cast<uint16_t>(sign | 0x7e00)};
  float a = std::fabs(f);
  if (a >= 65520.0f) // rounds to infinity
    return __half{static_cast<uint16_t>(sign | 0x7c00)};
  if (a < 6.103515625e-05f) { // subnormal: a multiple of 2^-24, rounded to nearest even
    float scaled = a * 16777216.0f;
    auto m = static_cast<uint32_t>(std::nearbyint(scaled)); // default mode: to nearest even
    return __half{static_cast<uint16_t>(sign | m)};
  }
  uint32_t exp = ((u >> 23) & 0xff) - 112, man = u & 0x7fffff;
  uint32_t h = (exp << 10) | (man >> 13);
  uint32_t rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // a carry into the exponent is the right result
  return __half{static_cast<uint16_t>(sign | h)};
}
