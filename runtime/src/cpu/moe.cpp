//===- moe.cpp - CPU kernels: router, dispatch, combine -------------------===//
//
// Slot assignment (shared by dispatch and combine, and by their gradients in
// grad_moe.cpp): MoeSlots of moe_slots.h.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "moe_slots.h"

#include <cmath>
#include <cstring>

using namespace braid::cpu;

namespace {

bool contains(const int32_t *sel, int64_t count, int64_t e) {
  for (int64_t i = 0; i < count; ++i)
    if (sel[i] == e)
      return true;
  return false;
}

template <typename T>
void routerImpl(const T *logits, T *weights, int32_t *indices, int64_t tokens, int64_t E,
                int64_t K, bool normalize) {
  for (int64_t t = 0; t < tokens; ++t) {
    const T *x = logits + t * E;
    int32_t *sel = indices + t * K;
    const RowStats stats = rowStats(x, E);
    const float mx = stats.max;
    // Softmax is increasing in the logit: the k largest probabilities are the
    // k largest logits, equal probabilities exactly equal logits. Ties go to
    // the lower index (strict > over increasing e); NaN ranks last.
    double chosen = 0.0;
    for (int64_t j = 0; j < K; ++j) {
      int64_t best = -1;
      float bv = 0.0f;
      for (int64_t e = 0; e < E; ++e) {
        if (contains(sel, j, e))
          continue;
        const float v = braid::load(x, e);
        if (best < 0 || v > bv || (std::isnan(bv) && !std::isnan(v))) {
          best = e;
          bv = v;
        }
      }
      sel[j] = int32_t(best);
      chosen += std::exp(double(bv) - double(mx));
    }
    // p_j = e^(x_j - max) / sum; renormalized: e^(x_j - max) / chosen.
    const double denom = normalize ? chosen : stats.sum;
    for (int64_t j = 0; j < K; ++j)
      braid::store(weights + t * K, j,
                   float(std::exp(double(braid::load(x, sel[j])) - double(mx)) / denom));
  }
}

template <typename T>
void dispatchImpl(const T *x, const int32_t *indices, T *out, int64_t tokens, int64_t H,
                  int64_t K, int64_t E, int64_t C, int64_t G) {
  MoeSlots slots("dispatch", indices, tokens, K, E, C, G);
  const int64_t S = G * C; // rows per expert
  std::memset(static_cast<void *>(out), 0, size_t(E * S * H) * sizeof(T)); // 0.0 is all zero bits
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < K; ++j) {
      const int64_t e = indices[t * K + j];
      const int64_t slot = slots.take(t, j, e);
      if (slot >= 0)
        std::memcpy(static_cast<void *>(out + (e * S + slot) * H),
                    static_cast<const void *>(x + t * H), size_t(H) * sizeof(T));
    }
}

} // namespace

extern "C" {

void braid_k_router(braid_rt *, braid_dtype dt, const void *logits, void *weights,
                    int32_t *indices, int64_t tokens, int64_t experts, int64_t top_k,
                    int32_t normalize) {
  if (top_k < 1 || top_k > experts)
    fail("router", "top_k %lld must lie in [1, experts = %lld]", (long long)top_k,
         (long long)experts);
  withFloatType(dt, "router", [&](auto tag) {
    using T = decltype(tag);
    routerImpl<T>(in<T>(logits), out<T>(weights), indices, tokens, experts, top_k,
                  normalize != 0);
  });
}

void braid_k_dispatch(braid_rt *, braid_dtype dt, const void *x, const int32_t *indices,
                      void *out_, int64_t tokens, int64_t hidden, int64_t top_k, int64_t experts,
                      int64_t capacity, int64_t groups) {
  withFloatType(dt, "dispatch", [&](auto tag) {
    using T = decltype(tag);
    dispatchImpl<T>(in<T>(x), indices, out<T>(out_), tokens, hidden, top_k, experts, capacity, groups);
  });
}

void braid_k_combine(braid_rt *, braid_dtype dt, const void *expert_out, const void *weights,
                     const int32_t *indices, void *out_, int64_t tokens, int64_t hidden,
                     int64_t top_k, int64_t experts, int64_t capacity, int64_t groups) {
  withFloatType(dt, "combine", [&](auto tag) {
    using T = decltype(tag);
    gatherPicks<T>("combine", in<T>(expert_out), in<T>(weights), indices, out<T>(out_), tokens,
                   hidden, top_k, experts, capacity, groups);
  });
}

} // extern "C"
