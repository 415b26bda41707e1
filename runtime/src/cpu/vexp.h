//===- vexp.h - an exp of f32 that loops vectorize ----------------*- C++ -*-===//
//
// Internal to runtime/src/cpu. The blocked attention's softmax and the
// selective scan take one exp per element; the C library's expf is a call
// per element, which keeps their loops scalar. expLanes is straight-line f32
// arithmetic (no calls, no branches), so a loop over it vectorizes at the
// build's vector width (Cephes' expf):
//   n = round(x log2 e) (the 1.5 * 2^23 rounding trick; valid while the
//       build keeps IEEE semantics, i.e. without -ffast-math),
//   r = x - n ln 2 in two parts (Cody and Waite), |r| <= ln 2 / 2,
//   e^r by a degree-7 polynomial (1 + r + r^2 p(r)),
//   2^n put into the exponent's bits.
// Accuracy: within 1 ulp of exp on [-87, 88] (0.99 at worst;
// test/Kernels/vexp-accuracy.test checks it against double). Below -87 it
// returns 0 (the true value is below 2^-125: nothing next to a softmax row's
// largest term, 1, nor as a scan's decay of states of order 1; -inf, a
// masked score, gives 0); above 88 it returns e^88 (finite); NaN is not
// propagated.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_VEXP_H
#define BRAID_RUNTIME_CPU_VEXP_H

#include "braid/numeric.h"

#include <cstdint>

namespace braid::cpu {

inline float expLanes(float x) {
#ifdef __clang__
  // The same value in every clone (clones.h): the baseline build has no
  // fused multiply-add to contract the polynomial into.
#pragma clang fp contract(off)
#endif
  const float xc = x > 88.0f ? 88.0f : (x < -87.0f ? -87.0f : x);
  const float magic = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer
  float fn = xc * 1.44269504088896341f + magic;
  const int32_t n = int32_t(braid::float_bits(fn)) - 0x4B400000;
  fn -= magic;
  float r = xc - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const float twoN = braid::bits_float(uint32_t(n + 127) << 23);
  return x < -87.0f ? 0.0f : p * twoN;
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_VEXP_H
