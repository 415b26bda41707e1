//===- to_f32.h - contiguous runs of a storage type to f32 ------*- C++ -*-===//
//
// Internal to runtime/src/cpu. The conversions the low-precision GEMMs and
// the staged kernels (staged_f32.h) run on their operands. bf16 is a shift
// and vectorizes as it is; f16's scalar decoding (numeric.h) does not, and
// took five times bf16's time, so on x86 with F16C a run of f16 values is
// converted eight at a time by the hardware (VCVTPH2PS: exact for every
// finite and infinite value; a signaling NaN comes out quiet, where the
// scalar decoding keeps its payload bits).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_TO_F32_H
#define BRAID_RUNTIME_CPU_TO_F32_H

#include "common.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>
#define BRAID_CPU_F16C_DISPATCH 1
#endif

namespace braid::cpu {

#ifdef BRAID_CPU_F16C_DISPATCH
__attribute__((target("avx,f16c"))) inline void f16RunToF32F16C(const uint16_t *src,
                                                                   float *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(src + i))));
  for (; i < n; ++i)
    dst[i] = braid::f16_to_float(src[i]);
}

inline bool hasF16C() {
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return has;
}
#endif

/// dst[i] = src[i] as f32 for i in [0, n): exact.
inline void toF32(const float *src, float *dst, int64_t n) {
  std::memcpy(dst, src, size_t(n) * sizeof(float));
}
inline void toF32(const braid::bf16 *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = braid::bf16_to_float(src[i].bits);
}
inline void toF32(const braid::f16 *src, float *dst, int64_t n) {
#ifdef BRAID_CPU_F16C_DISPATCH
  if (hasF16C())
    return f16RunToF32F16C(reinterpret_cast<const uint16_t *>(src), dst, n);
#endif
  for (int64_t i = 0; i < n; ++i)
    dst[i] = braid::f16_to_float(src[i].bits);
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_TO_F32_H
