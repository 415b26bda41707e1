//===- clones.h - kernels compiled for the machine's vectors ----*- C++ -*-===//
//
// Internal to runtime/src/cpu. The library is built for the baseline x86-64
// (SSE2), so that it runs wherever it is copied. A hot loop marked
// BRAID_CPU_CLONES is compiled three times, for x86-64-v4 (AVX-512), v3
// (AVX2, FMA) and the baseline, and the loader picks the best the machine
// has. A clone must compute the same values as the baseline: write fused
// multiply-adds explicitly (__builtin_fmaf), or keep the compiler from
// contracting (`#pragma clang fp contract(off)`), so that results do not
// depend on the machine.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_CLONES_H
#define BRAID_RUNTIME_CPU_CLONES_H

#if defined(__x86_64__) && defined(__clang__)
#define BRAID_CPU_CLONES                                                       \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BRAID_CPU_CLONES
#endif

#endif // BRAID_RUNTIME_CPU_CLONES_H
