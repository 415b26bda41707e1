//===- mamba_halo.h - the extended input of a chunk's convolution --*- C++ -*-===//
//
// Shared by the conv1d kernels and their gradients (mamba.cpp,
// grad_mamba.cpp): a chunk's convolution reads concat(halo, x) along the
// sequence, the halo being the K-1 inputs before the chunk (absent: zeros,
// the causal padding of a whole sequence).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_MAMBA_HALO_H
#define BRAID_RUNTIME_CPU_MAMBA_HALO_H

#include "common.h"

namespace braid::cpu {

/// Element u of the extended input concat(halo, x) along the sequence.
template <typename T>
inline float extLoad(const T *x, const T *halo, int64_t b, int64_t u, int64_t c, int64_t S,
                     int64_t C, int64_t K) {
  if (u < K - 1)
    return halo ? braid::load(halo, (b * (K - 1) + u) * C + c) : 0.0f;
  return braid::load(x, (b * S + u - (K - 1)) * C + c);
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_MAMBA_HALO_H
