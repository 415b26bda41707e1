//===- moe_slots.h - MoE slot assignment of the CPU kernels -----*- C++ -*-===//
//
// The one place of the slot rule shared by dispatch, combine (moe.cpp) and
// their gradients (grad_moe.cpp): assignments (t, j) are ordered j-major, then
// t; each takes the next free slot of its expert and is dropped once the
// expert holds `capacity`. Processed token by token, the slot of (t, j) is
// base[j][e] + (number of earlier tokens t' < t with indices[t', j] == e),
// where base[j][e] counts e in the columns j' < j; one counter per (j, e) in a
// bounded local array gives it without a T x k workspace.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_MOE_SLOTS_H
#define BRAID_RUNTIME_CPU_MOE_SLOTS_H

#include "common.h"

#include <cstdint>

namespace braid::cpu {

/// Slot counters of one dispatch/combine call. Construction validates top_k,
/// the expert count and every index (aborting with `kernel` in the message);
/// then take(j, e) must be called for every assignment (t, j), e =
/// indices[t * K + j], in the order t ascending, then j ascending.
class MoeSlots {
public:
  MoeSlots(const char *kernel, const int32_t *indices, int64_t tokens, int64_t K, int64_t E,
           int64_t capacity)
      : E(E), capacity(capacity) {
    if (K < 1 || K > kMaxTopK)
      fail(kernel, "top_k %lld is outside [1, %lld]", (long long)K, (long long)kMaxTopK);
    if (E < 1 || E * K > kMaxExpertSlots)
      fail(kernel, "%lld experts x top_k %lld exceed the supported %lld slots counters",
           (long long)E, (long long)K, (long long)kMaxExpertSlots);
    // next[j * E + e] = assignments to e in columns j' < j.
    for (int64_t i = 0; i < E * K; ++i)
      next[i] = 0;
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t j = 0; j < K; ++j) {
        const int64_t e = indices[t * K + j];
        if (e < 0 || e >= E)
          fail(kernel, "expert index %lld of token %lld (choice %lld) is outside [0, %lld)",
               (long long)e, (long long)t, (long long)j, (long long)E);
        ++next[j * E + e];
      }
    for (int64_t e = 0; e < E; ++e) {
      int32_t running = 0;
      for (int64_t j = 0; j < K; ++j) {
        const int32_t c = next[j * E + e];
        next[j * E + e] = running;
        running += c;
      }
    }
  }

  /// The slot of the next assignment (t, j) to expert e, or -1 when it is
  /// dropped (the expert is full).
  int64_t take(int64_t j, int64_t e) {
    const int64_t slot = next[j * E + e]++;
    return slot < capacity ? slot : -1;
  }

private:
  int64_t E, capacity;
  int32_t next[kMaxExpertSlots];
};

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_MOE_SLOTS_H
