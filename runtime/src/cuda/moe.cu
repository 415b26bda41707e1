//===- moe.cu - router (softmax + top-k), dispatch and combine ------------===//
//
// router: one thread per token. p = softmax(logits[t]) in f32; the k picks are
// made in the total order (p descending, expert index ascending), so ties go
// to the lower index; each pick is the greatest element strictly after the
// previous pick in that order (O(k E) per token, no marks needed). With
// normalize, the same thread then rescales its picks to sum to 1.
//
// dispatch / combine share the slot assignment of moe_slots.cuh (j-major then
// t, next free slot of the expert, dropped at capacity; one block, slots in
// the runtime scratch [T, k], -1: dropped), as do their gradients (grad_moe.cu).
// dispatch then zero-fills out and scatters token rows into it; combine
// gathers them back, summing over j in order 0..k-1 in f32 (deterministic).
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"
#include "cuda/moe_slots.cuh"

namespace braid::cuda {
namespace {

template <typename T>
__global__ void routerKernel(const T *__restrict__ logits, T *__restrict__ weights,
                             int32_t *__restrict__ indices, int64_t tokens, int64_t experts,
                             int64_t topK, int normalize) {
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= tokens)
    return;
  const T *row = logits + t * experts;
  float m, sum;
  routerSoftmaxStats(row, experts, m, sum);
  float prevP = INFINITY;
  int64_t prevE = -1;
  for (int64_t j = 0; j < topK; ++j) {
    float bestP = -1.0f;
    int64_t bestE = -1;
    for (int64_t e = 0; e < experts; ++e) {
      float p = expf(toF(row[e]) - m) / sum;
      bool after = p < prevP || (p == prevP && e > prevE);
      if (after && (p > bestP || bestE < 0)) { // ascending e: ties keep the lower index
        bestP = p;
        bestE = e;
      }
    }
    prevP = bestP;
    prevE = bestE;
    indices[t * topK + j] = static_cast<int32_t>(bestE);
    weights[t * topK + j] = fromF<T>(bestP); // raw probability
  }
  if (!normalize)
    return;
  // Recomputes the picked probabilities in f32 and divides by their sum
  // (rather than reading back the stored weights, which for bf16 storage
  // would round twice).
  float picked = 0.0f;
  for (int64_t j = 0; j < topK; ++j)
    picked += expf(toF(row[indices[t * topK + j]]) - m) / sum;
  for (int64_t j = 0; j < topK; ++j)
    weights[t * topK + j] = fromF<T>(expf(toF(row[indices[t * topK + j]]) - m) / sum / picked);
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_router(braid_rt *rt, braid_dtype dt, const void *logits, void *weights,
                    int32_t *indices, int64_t tokens, int64_t experts, int64_t top_k,
                    int32_t normalize) {
  using namespace braid::cuda;
  if (top_k < 1 || top_k > experts)
    BRAID_CUDA_FATAL("router: top_k %lld must be in [1, %lld]", static_cast<long long>(top_k),
                     static_cast<long long>(experts));
  if (tokens <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launch("router", gridFor(tokens, kRouterThreads), kRouterThreads,
                              streamOf(rt), routerKernel<T>, logits, weights, indices, tokens,
                              experts, top_k, normalize ? 1 : 0));
}

void braid_k_dispatch(braid_rt *rt, braid_dtype dt, const void *x, const int32_t *indices,
                      void *out, int64_t tokens, int64_t hidden, int64_t top_k, int64_t experts,
                      int64_t capacity, int64_t groups) {
  using namespace braid::cuda;
  checkMoe("dispatch", experts, capacity, top_k, tokens, groups);
  const int64_t rows = capacity * groups; // per expert
  cudaStream_t stream = streamOf(rt);
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("dispatch", experts * rows * hidden, stream, zeroKernel<T>,
                                      out, experts * rows * hidden));
  if (tokens <= 0 || hidden <= 0)
    return;
  int32_t *slots = assignSlots(stream, indices, tokens, top_k, experts, capacity, groups);
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("dispatch", tokens * top_k * hidden, stream,
                                      scatterPicksKernel<T>, x, nullptr, indices, slots, out,
                                      tokens, hidden, top_k, rows));
}

void braid_k_combine(braid_rt *rt, braid_dtype dt, const void *expert_out, const void *weights,
                     const int32_t *indices, void *out, int64_t tokens, int64_t hidden,
                     int64_t top_k, int64_t experts, int64_t capacity, int64_t groups) {
  braid::cuda::gatherPicks("combine", rt, dt, expert_out, weights, indices, out, tokens, hidden,
                           top_k, experts, capacity, groups);
}

} // extern "C"
