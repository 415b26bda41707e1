//===- mamba_scan.h - one step of a Mamba channel's scan --------*- C++ -*-===//
//
// Internal to runtime/src/cpu. The selective scan of training (mamba.cpp)
// and of inference (mamba_step.cpp) advance a channel's state by the same
// step, here once: h[n] = exp(dt a[n]) h[n] + dt x b[n], then y = sum_n
// c[n] h[n] in n order. The state update is compiled for the machine's
// vectors (clones.h) with the baseline's arithmetic, so every path computes
// the same values.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_MAMBA_SCAN_H
#define BRAID_RUNTIME_CPU_MAMBA_SCAN_H

#include "common.h"

#include <cstdint>
#include <type_traits>

namespace braid::cpu {

/// h[n] = exp(dt a[n]) h[n] + dtx b[n] for n < N (mamba.cpp).
void updateScanState(float *h, const float *a, const float *b, float dt, float dtx, int64_t N);

/// One step of a channel's scan at input x with step dt (softplus already
/// applied), the row's B and C of N values: updates h and returns the
/// channel's output before the skip term.
template <typename T>
inline float scanStep(float *h, const float *a, const T *bRow, const T *cRow, float dt, float x,
                      int64_t N) {
  if constexpr (std::is_same_v<T, float>) {
    updateScanState(h, a, bRow, dt, dt * x, N);
  } else {
    float b[kMaxState];
    for (int64_t n = 0; n < N; ++n)
      b[n] = braid::load(bRow, n);
    updateScanState(h, a, b, dt, dt * x, N);
  }
  float out = 0.0f;
  for (int64_t n = 0; n < N; ++n)
    out += braid::load(cRow, n) * h[n];
  return out;
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_MAMBA_SCAN_H
