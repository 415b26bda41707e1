//===- moe_slots.h - MoE slot assignment of the CPU kernels -----*- C++ -*-===//
//
// The one place of the slot rule shared by dispatch, combine (moe.cpp) and
// their gradients (grad_moe.cpp). The tokens form `groups` consecutive
// groups of tokens / groups; expert e has `capacity` slots per group, group g
// owning rows [g * capacity, (g + 1) * capacity) of e's buffer. Within a
// group, assignments (t, j) are ordered j-major, then t; each takes the next
// free slot of its expert in the group and is dropped once the expert holds
// `capacity`. Processed token by token, the slot of (t, j) is base[j][e] +
// (number of earlier tokens t' < t of the group with indices[t', j] == e),
// where base[j][e] counts e in the group's columns j' < j; one counter per
// (j, e) in a bounded local array, recomputed as each group starts, gives it
// without a T x k workspace.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_MOE_SLOTS_H
#define BRAID_RUNTIME_CPU_MOE_SLOTS_H

#include "common.h"

#include <cstdint>

namespace braid::cpu {

/// Slot counters of one dispatch/combine call. Construction validates top_k,
/// the expert count, the groups and every index (aborting with `kernel` in
/// the message); then take(t, j, e) must be called for every assignment
/// (t, j), e = indices[t * K + j], in the order t ascending, then j
/// ascending.
class MoeSlots {
public:
  MoeSlots(const char *kernel, const int32_t *indices, int64_t tokens, int64_t K, int64_t E,
           int64_t capacity, int64_t groups)
      : indices(indices), K(K), E(E), capacity(capacity) {
    if (K < 1 || K > kMaxTopK)
      fail(kernel, "top_k %lld is outside [1, %lld]", (long long)K, (long long)kMaxTopK);
    if (E < 1 || E * K > kMaxExpertSlots)
      fail(kernel, "%lld experts x top_k %lld exceed the supported %lld slots counters",
           (long long)E, (long long)K, (long long)kMaxExpertSlots);
    if (capacity < 1 || groups < 1 || tokens % groups != 0)
      fail(kernel, "%lld tokens do not form %lld groups of capacity %lld", (long long)tokens,
           (long long)groups, (long long)capacity);
    for (int64_t i = 0; i < tokens * K; ++i)
      if (indices[i] < 0 || indices[i] >= E)
        fail(kernel, "expert index %lld of token %lld (choice %lld) is outside [0, %lld)",
             (long long)indices[i], (long long)(i / K), (long long)(i % K), (long long)E);
    groupTokens = tokens / groups;
  }

  /// The row of e's buffer (group * capacity + slot) of assignment (t, j) to
  /// expert e, or -1 when it is dropped (the expert is full in t's group).
  int64_t take(int64_t t, int64_t j, int64_t e) {
    if (t >= groupEnd)
      startGroup(t / groupTokens);
    const int64_t slot = next[j * E + e]++;
    if (slot < capacity)
      return group * capacity + slot;
    ++droppedCount;
    return -1;
  }

  /// Assignments dropped so far.
  int64_t dropped() const { return droppedCount; }

private:
  const int32_t *indices;
  int64_t K, E, capacity, groupTokens = 1;
  int64_t group = -1, groupEnd = 0, droppedCount = 0;
  int32_t next[kMaxExpertSlots];

  /// next[j * E + e] = assignments to e in group g's columns j' < j.
  void startGroup(int64_t g) {
    group = g;
    groupEnd = (g + 1) * groupTokens;
    for (int64_t i = 0; i < E * K; ++i)
      next[i] = 0;
    for (int64_t t = g * groupTokens; t < groupEnd; ++t)
      for (int64_t j = 0; j < K; ++j)
        ++next[j * E + indices[t * K + j]];
    for (int64_t e = 0; e < E; ++e) {
      int32_t running = 0;
      for (int64_t j = 0; j < K; ++j) {
        const int32_t c = next[j * E + e];
        next[j * E + e] = running;
        running += c;
      }
    }
  }
};

/// out [tokens, H] = for each token the sum over its kept picks j (in order)
/// of weights[t, j] times its expert row of `buffer` [E, C G, H], in f32 per
/// block of columns: combine, and with weights null (every weight 1, a
/// product that is exact) dispatch_grad.
template <typename T>
void gatherPicks(const char *kernel, const T *buffer, const T *weights, const int32_t *indices,
                 T *out, int64_t tokens, int64_t H, int64_t K, int64_t E, int64_t C, int64_t G) {
  constexpr int64_t HB = 256; // hidden columns per f32 accumulator block
  MoeSlots slots(kernel, indices, tokens, K, E, C, G);
  const int64_t S = G * C; // rows per expert
  const T *rows[kMaxTopK];
  float w[kMaxTopK];
  float acc[HB];
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t kept = 0;
    for (int64_t j = 0; j < K; ++j) {
      const int64_t e = indices[t * K + j];
      const int64_t slot = slots.take(t, j, e);
      if (slot >= 0) {
        rows[kept] = buffer + (e * S + slot) * H;
        w[kept++] = weights ? braid::load(weights, t * K + j) : 1.0f;
      }
    }
    for (int64_t h0 = 0; h0 < H; h0 += HB) {
      const int64_t hb = H - h0 < HB ? H - h0 : HB;
      for (int64_t h = 0; h < hb; ++h)
        acc[h] = 0.0f;
      for (int64_t r = 0; r < kept; ++r)
        for (int64_t h = 0; h < hb; ++h)
          acc[h] += w[r] * braid::load(rows[r], h0 + h);
      for (int64_t h = 0; h < hb; ++h)
        braid::store(out + t * H, h0 + h, acc[h]);
    }
  }
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_MOE_SLOTS_H
