//===- grad_moe.cpp - CPU backward kernels: router, dispatch, combine -----===//
//
// router_grad, per token, softmax in double (max in f32 as the forward), the
// selected indices fixed (duplicates allowed):
//   raw        w_j = p_{i_j}:  dx_e = p_e (sum_{j: i_j = e} dw_j - U),
//              U = sum_j dw_j w_j
//   normalize  w_j = p_{i_j} / sum_j' p_{i_j'} (a softmax over the selected
//              logits): dx_e = sum_{j: i_j = e} w_j (dw_j - U), 0 elsewhere.
// dispatch_grad / combine_grad recompute the slots of braid_k_dispatch
// (j-major then t, drops past capacity) with MoeSlots (moe_slots.h), the
// implementation the forward kernels use.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "moe_slots.h"

#include <cmath>
#include <cstring>

using namespace braid::cpu;

namespace {

template <typename T>
void routerGradImpl(const T *logits, const int32_t *indices, const T *dweights, T *dlogits,
                    int64_t tokens, int64_t E, int64_t K, bool normalize) {
  for (int64_t t = 0; t < tokens; ++t) {
    const T *x = logits + t * E;
    const int32_t *sel = indices + t * K;
    const T *dw = dweights + t * K;
    for (int64_t j = 0; j < K; ++j)
      if (sel[j] < 0 || sel[j] >= E)
        fail("router_grad", "expert index %lld of token %lld (choice %lld) is outside [0, %lld)",
             (long long)sel[j], (long long)t, (long long)j, (long long)E);
    const RowStats stats = rowStats(x, E);
    const float mx = stats.max;
    double chosen = 0.0;
    for (int64_t j = 0; j < K; ++j)
      chosen += std::exp(double(braid::load(x, sel[j])) - double(mx));
    const double denom = normalize ? chosen : stats.sum;
    // U = sum_j dw_j w_j.
    double U = 0.0;
    for (int64_t j = 0; j < K; ++j)
      U += double(braid::load(dw, j)) * std::exp(double(braid::load(x, sel[j])) - double(mx)) /
           denom;
    for (int64_t e = 0; e < E; ++e) {
      const double pe = std::exp(double(braid::load(x, e)) - double(mx));
      double g = 0.0, mult = 0.0; // sum of dw_j and count over j with i_j == e
      for (int64_t j = 0; j < K; ++j)
        if (sel[j] == e) {
          g += braid::load(dw, j);
          mult += 1.0;
        }
      double v;
      if (normalize)
        v = pe / denom * (g - mult * U);
      else
        v = pe / denom * (g - U);
      braid::store(dlogits + t * E, e, float(v));
    }
  }
}

template <typename T>
void combineGradImpl(const T *eo, const T *weights, const int32_t *indices, const T *dy, T *deo,
                     T *dw, int64_t tokens, int64_t H, int64_t K, int64_t E, int64_t C, int64_t G) {
  MoeSlots slots("combine_grad", indices, tokens, K, E, C, G);
  const int64_t S = G * C; // rows per expert
  std::memset(static_cast<void *>(deo), 0, size_t(E * S * H) * sizeof(T)); // unused slots
  for (int64_t t = 0; t < tokens; ++t) {
    const T *dyr = dy + t * H;
    for (int64_t j = 0; j < K; ++j) {
      const int64_t e = indices[t * K + j];
      const int64_t slot = slots.take(t, j, e);
      if (slot < 0) {
        braid::store(dw, t * K + j, 0.0f);
        continue;
      }
      const T *row = eo + (e * S + slot) * H;
      T *drow = deo + (e * S + slot) * H;
      const float w = braid::load(weights, t * K + j);
      double dot = 0.0;
      for (int64_t h = 0; h < H; ++h) {
        const float g = braid::load(dyr, h);
        dot += double(g) * double(braid::load(row, h));
        braid::store(drow, h, w * g);
      }
      braid::store(dw, t * K + j, float(dot));
    }
  }
}

} // namespace

extern "C" {

void braid_k_router_grad(braid_rt *, braid_dtype dt, const void *logits, const int32_t *indices,
                         const void *dweights, void *dlogits, int64_t tokens, int64_t experts,
                         int64_t top_k, int32_t normalize) {
  if (top_k < 1 || top_k > experts)
    fail("router_grad", "top_k %lld must lie in [1, experts = %lld]", (long long)top_k,
         (long long)experts);
  withFloatType(dt, "router_grad", [&](auto tag) {
    using T = decltype(tag);
    routerGradImpl<T>(in<T>(logits), indices, in<T>(dweights), out<T>(dlogits), tokens, experts,
                      top_k, normalize != 0);
  });
}

void braid_k_dispatch_grad(braid_rt *, braid_dtype dt, const void *ddispatched,
                           const int32_t *indices, void *dx, int64_t tokens, int64_t hidden,
                           int64_t top_k, int64_t experts, int64_t capacity, int64_t groups) {
  withFloatType(dt, "dispatch_grad", [&](auto tag) {
    using T = decltype(tag);
    gatherPicks<T>("dispatch_grad", in<T>(ddispatched), nullptr, indices, out<T>(dx), tokens,
                   hidden, top_k, experts, capacity, groups);
  });
}

void braid_k_combine_grad(braid_rt *, braid_dtype dt, const void *expert_out,
                          const void *weights, const int32_t *indices, const void *dy,
                          void *dexpert_out, void *dweights, int64_t tokens, int64_t hidden,
                          int64_t top_k, int64_t experts, int64_t capacity, int64_t groups) {
  withFloatType(dt, "combine_grad", [&](auto tag) {
    using T = decltype(tag);
    combineGradImpl<T>(in<T>(expert_out), in<T>(weights), indices, in<T>(dy),
                       out<T>(dexpert_out), out<T>(dweights), tokens, hidden, top_k, experts,
                       capacity, groups);
  });
}

} // extern "C"
