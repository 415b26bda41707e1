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
#include <type_traits>

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
namespace {

/// fn(C()) with C the C++ type of t's elements.
template <typename Fn> auto withScalar(Scalar t, Fn &&fn) {
  switch (t) {
  case Scalar::F64:
    return fn(double());
  case Scalar::F16:
    return fn(__half());
  case Scalar::BF16:
    return fn(__nv_bfloat16());
  case Scalar::I8:
    return fn(int8_t());
  case Scalar::U8:
    return fn(uint8_t());
  case Scalar::I32:
    return fn(int32_t());
  case Scalar::U32:
    return fn(uint32_t());
  case Scalar::F32:
    break;
  }
  return fn(float());
}

template <typename C> double toDouble(C v) { return static_cast<double>(v); }
double toDouble(__half v) { return __half2float(v); }
double toDouble(__nv_bfloat16 v) { return __bfloat162float(v); }

/// v as a C: the 16-bit floats from v rounded to f32 first.
template <typename C> C fromDouble(double v) {
  if constexpr (std::is_same_v<C, __half>)
    return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<C, __nv_bfloat16>)
    return __float2bfloat16_rn(static_cast<float>(v));
  else
    return static_cast<C>(v);
}

} // namespace

size_t scalarBytes(Scalar t) {
  return withScalar(t, [](auto c) { return sizeof(c); });
}

double loadScalar(Scalar t, const void *p, size_t i) {
  return withScalar(t, [&](auto c) { return toDouble(static_cast<const decltype(c) *>(p)[i]); });
}

void storeScalar(Scalar t, void *p, size_t i, double v) {
  withScalar(t, [&](auto c) {
    using C = decltype(c);
    static_cast<C *>(p)[i] = fromDouble<C>(v);
  });
}

} // namespace cudasim
