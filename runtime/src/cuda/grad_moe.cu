//===- grad_moe.cu - router, dispatch and combine backward ----------------===//
//
// router_grad: one thread per token, f32. With p = softmax(logits[t]) and the
// picked experts i_j fixed:
//   raw weights        dp[i_j] = dw_j
//   normalize (w_j = p[i_j] / P, P = sum_j p[i_j])
//                      dp[i_j] = (dw_j - sum_k dw_k w_k) / P
//   softmax            dlogits[e] = p[e] (dp[e] - sum_f p[f] dp[f])
// (dp is 0 off the picks). Out-of-range indices are ignored here (the forward
// dispatch/combine report them).
//
// dispatch_grad / combine_grad use the forward's slot assignment (j-major then
// t, next free slot of the expert, dropped at capacity): assignSlots of
// moe_slots.cuh, the implementation the forward uses, so the two always
// agree. Slots live in the runtime scratch [T, k].
//   dispatch_grad: dx[t, :] = sum over kept j (in order) of dd[e, slot, :].
//   combine_grad:  dexpert_out zero-filled, then dexpert_out[e, slot, :] =
//                  w[t, j] dy[t, :] for kept assignments; dweights[t, j] =
//                  dot(dy[t, :], expert_out[e, slot, :]) (one warp per
//                  assignment, fixed-order warp reduction) or 0 when dropped.
// No atomics: deterministic.
//
//===----------------------------------------------------------------------===//

#include "cuda/grad_common.cuh"
#include "cuda/moe_slots.cuh"

namespace braid::cuda {
namespace {

template <typename T>
__global__ void routerGradKernel(const T *__restrict__ logits, const int32_t *__restrict__ indices,
                                 const T *__restrict__ dweights, T *__restrict__ dlogits,
                                 int64_t tokens, int64_t experts, int64_t topK, int normalize) {
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= tokens)
    return;
  const T *row = logits + t * experts;
  const int32_t *idx = indices + t * topK;
  const T *dw = dweights + t * topK;
  float m, sum;
  routerSoftmaxStats(row, experts, m, sum);
  const float inv = 1.0f / sum;
  auto prob = [&](int64_t e) { return expf(toF(row[e]) - m) * inv; };
  // Picked mass and (normalize) sum_k dw_k w_k.
  float picked = 0.0f;
  for (int64_t j = 0; j < topK; ++j) {
    int32_t e = idx[j];
    if (e >= 0 && e < experts)
      picked += prob(e);
  }
  float dwDotW = 0.0f;
  if (normalize)
    for (int64_t j = 0; j < topK; ++j) {
      int32_t e = idx[j];
      if (e >= 0 && e < experts)
        dwDotW += toF(dw[j]) * prob(e) / picked;
    }
  auto dpOf = [&](int64_t j) {
    return normalize ? (toF(dw[j]) - dwDotW) / picked : toF(dw[j]);
  };
  // sum_f p[f] dp[f] over the picks.
  float pDotDp = 0.0f;
  for (int64_t j = 0; j < topK; ++j) {
    int32_t e = idx[j];
    if (e >= 0 && e < experts)
      pDotDp += prob(e) * dpOf(j);
  }
  for (int64_t e = 0; e < experts; ++e) {
    float dp = 0.0f;
    for (int64_t j = 0; j < topK; ++j)
      if (idx[j] == e)
        dp += dpOf(j);
    dlogits[t * experts + e] = fromF<T>(prob(e) * (dp - pDotDp));
  }
}

template <typename T>
__global__ void combineGradWeightKernel(const T *__restrict__ expertOut,
                                        const int32_t *__restrict__ indices,
                                        const int32_t *__restrict__ slots,
                                        const T *__restrict__ dy, T *__restrict__ dweights,
                                        int64_t tokens, int64_t hidden, int64_t topK,
                                        int64_t rows) {
  const int lane = threadIdx.x & 31;
  const int64_t warpsTotal = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t a = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
       a < tokens * topK; a += warpsTotal) {
    const T *eo = slotRow(expertOut, indices, slots, a, rows, hidden);
    float acc = 0.0f;
    if (eo) {
      const T *g = dy + (a / topK) * hidden;
      for (int64_t c = lane; c < hidden; c += 32)
        acc = fmaf(toF(g[c]), toF(eo[c]), acc);
    }
    acc = warpSum(acc);
    if (lane == 0)
      dweights[a] = fromF<T>(acc);
  }
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_router_grad(braid_rt *rt, braid_dtype dt, const void *logits,
                         const int32_t *indices, const void *dweights, void *dlogits,
                         int64_t tokens, int64_t experts, int64_t top_k, int32_t normalize) {
  using namespace braid::cuda;
  if (top_k < 1 || top_k > experts)
    BRAID_CUDA_FATAL("router_grad: top_k %lld must be in [1, %lld]",
                     static_cast<long long>(top_k), static_cast<long long>(experts));
  if (tokens <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launch("router_grad", gridFor(tokens, kRouterThreads), kRouterThreads,
                              streamOf(rt), routerGradKernel<T>, logits, indices, dweights,
                              dlogits, tokens, experts, top_k, normalize ? 1 : 0));
}

void braid_k_dispatch_grad(braid_rt *rt, braid_dtype dt, const void *ddispatched,
                           const int32_t *indices, void *dx, int64_t tokens, int64_t hidden,
                           int64_t top_k, int64_t experts, int64_t capacity, int64_t groups) {
  braid::cuda::gatherPicks("dispatch_grad", rt, dt, ddispatched, nullptr, indices, dx, tokens,
                           hidden, top_k, experts, capacity, groups);
}

void braid_k_combine_grad(braid_rt *rt, braid_dtype dt, const void *expert_out,
                          const void *weights, const int32_t *indices, const void *dy,
                          void *dexpert_out, void *dweights, int64_t tokens, int64_t hidden,
                          int64_t top_k, int64_t experts, int64_t capacity, int64_t groups) {
  using namespace braid::cuda;
  checkMoe("combine_grad", experts, capacity, top_k, tokens, groups);
  const int64_t rows = capacity * groups; // per expert
  cudaStream_t stream = streamOf(rt);
  int64_t expertElems = experts * rows * hidden;
  if (dexpert_out)
    BRAID_DISPATCH_FLOAT(dt, T,
                         launchElements("combine_grad", expertElems, stream, zeroKernel<T>,
                                        dexpert_out, expertElems));
  if (tokens <= 0)
    return;
  if (hidden <= 0) {
    if (dweights)
      BRAID_CUDA_CHECK(
          cudaMemsetAsync(dweights, 0, tokens * top_k * braid_dtype_size(dt), stream));
    return;
  }
  int32_t *slots = assignSlots(stream, indices, tokens, top_k, experts, capacity, groups);
  BRAID_DISPATCH_FLOAT(dt, T, {
    if (dexpert_out)
      launchElements("combine_grad", tokens * top_k * hidden, stream, scatterPicksKernel<T>, dy,
                     weights, indices, slots, dexpert_out, tokens, hidden, top_k, rows);
    if (dweights)
      launchElements("combine_grad", tokens * top_k * 32, stream, combineGradWeightKernel<T>,
                     expert_out, indices, slots, dy, dweights, tokens, hidden, top_k, rows);
  });
}

} // extern "C"
