//===- numeric.h - Braid storage types and shared pointwise math -*- C++ -*-===//
//
// Storage types (bf16, f16 as raw bits), their conversions to and from f32
// (round-to-nearest-even, NaN stays NaN), typed load/store and the pointwise
// functions of the braid ops. Everything is `BRAID_HD`: the CPU kernels, the
// CUDA kernels and the generated fused kernels (braid/codegen.h) all use these
// definitions, so fused and unfused code compute the same formulas (on the CPU
// bit for bit).
//
// Header only, C++17, no exceptions, no dependency on the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_NUMERIC_H
#define BRAID_NUMERIC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef BRAID_HD
#ifdef __CUDACC__
#define BRAID_HD __host__ __device__
#else
#define BRAID_HD
#endif
#endif

namespace braid {

/// bfloat16 storage: the upper 16 bits of an IEEE f32.
struct bf16 {
  uint16_t bits;
};

/// IEEE binary16 storage.
struct f16 {
  uint16_t bits;
};

//===--- Bit casts ---------------------------------------------------------===//

/// The bits of `from` read as a To of the same size (std::bit_cast of C++20;
/// memcpy compiles to a register move on the host and the device alike).
template <typename To, typename From> BRAID_HD inline To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

BRAID_HD inline uint32_t float_bits(float f) { return bit_cast<uint32_t>(f); }
BRAID_HD inline float bits_float(uint32_t u) { return bit_cast<float>(u); }

//===--- Conversions -------------------------------------------------------===//

BRAID_HD inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t(h) << 16); }

/// Round to nearest, ties to even; NaN stays a (quiet) NaN with its sign,
/// infinities and overflow to infinity as IEEE rounding gives.
BRAID_HD inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

BRAID_HD inline float f16_to_float(uint16_t h) {
  const uint32_t shifted_exp = 0x7c00u << 13;
  uint32_t o = uint32_t(h & 0x7fffu) << 13;
  uint32_t e = shifted_exp & o;
  o += uint32_t(127 - 15) << 23;
  float r;
  if (e == shifted_exp) { // inf / NaN (payload kept)
    o += uint32_t(128 - 16) << 23;
    r = bits_float(o);
  } else if (e == 0) { // zero / subnormal: renormalize through an f32 subtraction
    o += 1u << 23;
    r = bits_float(o) - bits_float(113u << 23);
  } else {
    r = bits_float(o);
  }
  return bits_float(float_bits(r) | (uint32_t(h & 0x8000u) << 16));
}

/// Round to nearest, ties to even (subnormals included); NaN -> quiet NaN.
BRAID_HD inline uint16_t float_to_f16(float f) {
  uint32_t u = float_bits(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint32_t o;
  if (u >= (uint32_t(127 + 16) << 23)) { // >= 2^16: inf (or NaN)
    o = u > 0x7f800000u ? (0x7e00u | ((u >> 13) & 0x3ffu)) : 0x7c00u;
  } else if (u < (uint32_t(113) << 23)) { // below 2^-14: subnormal or zero
    const uint32_t magic = uint32_t((127 - 15) + (23 - 10) + 1) << 23;
    float v = bits_float(u) + bits_float(magic); // the f32 addition rounds (RNE)
    o = float_bits(v) - magic;
  } else {
    uint32_t mant_odd = (u >> 13) & 1u;
    u += (uint32_t(15 - 127) << 23) + 0xfffu; // rebias; rounding part 1
    u += mant_odd;                              // ties to even
    o = u >> 13;                                // overflow carries into inf
  }
  return uint16_t(o | (sign >> 16));
}

//===--- Typed load / store (element i of a tensor) ------------------------===//

BRAID_HD inline float load(const float *p, int64_t i) { return p[i]; }
BRAID_HD inline float load(const bf16 *p, int64_t i) { return bf16_to_float(p[i].bits); }
BRAID_HD inline float load(const f16 *p, int64_t i) { return f16_to_float(p[i].bits); }

BRAID_HD inline void store(float *p, int64_t i, float v) { p[i] = v; }
BRAID_HD inline void store(bf16 *p, int64_t i, float v) { p[i].bits = float_to_bf16(v); }
BRAID_HD inline void store(f16 *p, int64_t i, float v) { p[i].bits = float_to_f16(v); }

//===--- Pointwise math (f32) ----------------------------------------------===//
// The exact formulas of the CPU kernels; keep them in one place. The global
// C functions (::expf, ...) are host libm on the host and the CUDA math
// library in device code.

BRAID_HD inline float exp(float x) { return ::expf(x); }

/// 1 / (1 + exp(-x)); saturates to 0 / 1 without NaN.
BRAID_HD inline float sigmoid(float x) { return 1.0f / (1.0f + ::expf(-x)); }

/// x / (1 + exp(-x)).
BRAID_HD inline float silu(float x) { return x / (1.0f + ::expf(-x)); }

/// 0.5 x (1 + erf(x / sqrt 2)).
BRAID_HD inline float gelu(float x) {
  return 0.5f * x * (1.0f + ::erff(x * 0.70710678118654752f));
}

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (GPT-2).
BRAID_HD inline float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + ::tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}

/// max(x, 0); NaN stays NaN.
BRAID_HD inline float relu(float x) { return x < 0.0f ? 0.0f : x; }

BRAID_HD inline float neg(float x) { return -x; }

/// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow for large x,
/// no cancellation for very negative x.
BRAID_HD inline float softplus(float x) {
  return (x > 0.0f ? x : 0.0f) + ::log1pf(::expf(-::fabsf(x)));
}

/// The braid_act numbering of braid/runtime.h (0 silu, 1 gelu, 2 gelu_tanh,
/// 3 sigmoid, 4 relu, 5 exp, 6 neg). Unknown codes give NaN; the kernels
/// reject them before calling this.
BRAID_HD inline float activation(int act, float x) {
  switch (act) {
  case 0: return silu(x);
  case 1: return gelu(x);
  case 2: return gelu_tanh(x);
  case 3: return sigmoid(x);
  case 4: return relu(x);
  case 5: return exp(x);
  case 6: return neg(x);
  default: return bits_float(0x7fc00000u);
  }
}

} // namespace braid

#endif // BRAID_NUMERIC_H
