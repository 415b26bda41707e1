//===- embedding_grad.h - the table gradient of the CPU embeddings -*- C++ -*-===//
//
// Shared by embedding_grad (grad_embedding_loss.cpp) and its vocabulary shard
// embedding_grad_shard (spmd.cpp): each table row's cotangent is the sum of
// the dy rows of the tokens that map to it, in double (kColBlock columns at a
// time) and stored once, so bf16/f16 tables see one rounding per element,
// not one per occurrence. Grouping scans the tokens (O(num_tokens x distinct
// tokens) comparisons, no scratch).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_EMBEDDING_GRAD_H
#define BRAID_RUNTIME_CPU_EMBEDDING_GRAD_H

#include "common.h"

#include <cstring>

namespace braid::cpu {

/// dtable [V, H] = zero, then row k = the sum of dy's rows t with
/// rowOf(t) == k; tokens with rowOf(t) < 0 are skipped.
template <typename T, typename RowOf>
void sumRowsByToken(RowOf &&rowOf, const T *dy, T *dtable, int64_t T_, int64_t V, int64_t H) {
  constexpr int64_t kColBlock = 2048;
  std::memset(static_cast<void *>(dtable), 0, size_t(V * H) * sizeof(T)); // all-zero bits
  double acc[kColBlock];
  for (int64_t t = 0; t < T_; ++t) {
    const int64_t row = rowOf(t);
    if (row < 0)
      continue;
    bool seen = false; // an earlier occurrence already summed this token's rows
    for (int64_t u = 0; u < t && !seen; ++u)
      seen = rowOf(u) == row;
    if (seen)
      continue;
    for (int64_t h0 = 0; h0 < H; h0 += kColBlock) {
      const int64_t hb = H - h0 < kColBlock ? H - h0 : kColBlock;
      for (int64_t h = 0; h < hb; ++h)
        acc[h] = braid::load(dy + t * H + h0, h);
      for (int64_t u = t + 1; u < T_; ++u)
        if (rowOf(u) == row)
          for (int64_t h = 0; h < hb; ++h)
            acc[h] += braid::load(dy + u * H + h0, h);
      for (int64_t h = 0; h < hb; ++h)
        braid::store(dtable + row * H + h0, h, float(acc[h]));
    }
  }
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_EMBEDDING_GRAD_H
