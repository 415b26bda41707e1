//===- vexp.h - an exp of f32 that loops vectorize ----------------*- C++ -*-===//
//
// Internal to runtime/src/cpu. The selective scan takes one exp per state
// element and step; the C library's expf is a call per element, which keeps
// its loops scalar. expLanes is straight-line f32 arithmetic (no calls, no
// branches), so a loop over it vectorizes at the build's vector width:
//   n = round(x log2 e) (the 1.5 * 2^23 rounding trick; valid while the
//       build keeps IEEE semantics, i.e. without -ffast-math),
//   r = x - n ln 2 in two parts (Cody and Waite), |r| <= ln 2 / 2,
//   exp(r) by Cephes' degree-7 polynomial (1 + r + r^2 p(r)),
//   2^n by building the exponent's bits.
// Accuracy: within 1 ulp of exp over the clamped range (0.99 at worst;
// test/Kernels/vexp-accuracy.test checks it against double). Inputs are
// clamped to [-87.33, 88], where 2^n stays a normal float: exp(x) below
// e^-87.33 gives about 1.2e-38 instead of a denormal or zero, which a
// scan's decay cannot tell from 0 (it multiplies states of order 1); NaN is
// not propagated (the scan's inputs are finite).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_VEXP_H
#define BRAID_RUNTIME_CPU_VEXP_H

#include <cstdint>
#include <cstring>

namespace braid::cpu {

inline float expLanes(float x) {
  x = x < -87.33654f ? -87.33654f : x;
  x = x > 88.0f ? 88.0f : x;
  const float shifter = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + shifter) - shifter;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const int32_t bits = (int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_VEXP_H
