//===- scalars.cpp - cudasim: element types ---------------------------------===//
//
// __half to and from float, rounding to nearest even as the device does (the
// bf16 conversions are inline in cudasim.h: they are a shift and a rounding),
// and loads and stores by element type for the cuBLASLt and NCCL emulations.
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

namespace cudasim {

size_t scalarBytes(Scalar t) {
  switch (t) {
  case Scalar::I8:
  case Scalar::U8:
    return 1;
  case Scalar::F16:
  case Scalar::BF16:
    return 2;
  case Scalar::F32:
  case Scalar::I32:
  case Scalar::U32:
    return 4;
  case Scalar::F64:
    return 8;
  }
  return 0;
}

double loadScalar(Scalar t, const void *p, size_t i) {
  switch (t) {
  case Scalar::F32:
    return static_cast<const float *>(p)[i];
  case Scalar::F64:
    return static_cast<const double *>(p)[i];
  case Scalar::F16:
    return __half2float(static_cast<const __half *>(p)[i]);
  case Scalar::BF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case Scalar::I8:
    return static_cast<const int8_t *>(p)[i];
  case Scalar::U8:
    return static_cast<const uint8_t *>(p)[i];
  case Scalar::I32:
    return static_cast<const int32_t *>(p)[i];
  case Scalar::U32:
    return static_cast<const uint32_t *>(p)[i];
  }
  return 0;
}

void storeScalar(Scalar t, void *p, size_t i, double v) {
  switch (t) {
  case Scalar::F32:
    static_cast<float *>(p)[i] = static_cast<float>(v);
    return;
  case Scalar::F64:
    static_cast<double *>(p)[i] = v;
    return;
  case Scalar::F16:
    static_cast<__half *>(p)[i] = __float2half_rn(static_cast<float>(v));
    return;
  case Scalar::BF16:
    static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
    return;
  case Scalar::I8:
    static_cast<int8_t *>(p)[i] = static_cast<int8_t>(v);
    return;
  case Scalar::U8:
    static_cast<uint8_t *>(p)[i] = static_cast<uint8_t>(v);
    return;
  case Scalar::I32:
    static_cast<int32_t *>(p)[i] = static_cast<int32_t>(v);
    return;
  case Scalar::U32:
    static_cast<uint32_t *>(p)[i] = static_cast<uint32_t>(v);
    return;
  }
}

} // namespace cudasim
