//===- moe.cu - router (softmax + top-k), dispatch and combine ------------===//
//
// router: one thread per token. p = softmax(logits[t]) in f32; the k picks are
// made in the total order (p descending, expert index ascending), so ties go
// to the lower index; each pick is the greatest element strictly after the
// previous pick in that order (O(k E) per token, no marks needed).
//
// dispatch / combine share the slot assignment of moe_slots.cuh (j-major then
// t, next free slot of the expert, dropped at capacity; one block, slots in
// the runtime scratch [T, k], -1: dropped), as do their gradients (grad_moe.cu).
// dispatch then zero-fills out and copies rows; combine sums over j in order
// 0..k-1 in f32 (deterministic).
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"
#include "cuda/moe_slots.cuh"

namespace braid::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void routerKernel(const T *__restrict__ logits, T *__restrict__ weights,
                             int32_t *__restrict__ indices, int64_t tokens, int64_t experts,
                             int64_t topK) {
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= tokens)
    return;
  const T *row = logits + t * experts;
  float m = -INFINITY;
  for (int64_t e = 0; e < experts; ++e)
    m = fmaxf(m, toF(row[e]));
  float sum = 0.0f;
  for (int64_t e = 0; e < experts; ++e)
    sum += expf(toF(row[e]) - m);
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
}

// normalize: recomputes the picked probabilities in f32 and divides by their
// sum (rather than reading back the stored weights, which for bf16 storage
// would round twice).
template <typename T>
__global__ void routerNormalizedKernel(const T *__restrict__ logits, T *__restrict__ weights,
                                       const int32_t *__restrict__ indices, int64_t tokens,
                                       int64_t experts, int64_t topK) {
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= tokens)
    return;
  const T *row = logits + t * experts;
  float m = -INFINITY;
  for (int64_t e = 0; e < experts; ++e)
    m = fmaxf(m, toF(row[e]));
  float sum = 0.0f;
  for (int64_t e = 0; e < experts; ++e)
    sum += expf(toF(row[e]) - m);
  float picked = 0.0f;
  for (int64_t j = 0; j < topK; ++j)
    picked += expf(toF(row[indices[t * topK + j]]) - m) / sum;
  for (int64_t j = 0; j < topK; ++j)
    weights[t * topK + j] = fromF<T>(expf(toF(row[indices[t * topK + j]]) - m) / sum / picked);
}

template <typename T>
__global__ void dispatchKernel(const T *__restrict__ x, const int32_t *__restrict__ indices,
                               const int32_t *__restrict__ slots, T *__restrict__ out,
                               int64_t tokens, int64_t hidden, int64_t topK, int64_t rows) {
  const int64_t total = tokens * topK * hidden;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t a = i / hidden, c = i - a * hidden; // assignment a = t * topK + j
    int32_t slot = slots[a];
    if (slot < 0)
      continue;
    int64_t t = a / topK;
    out[(static_cast<int64_t>(indices[a]) * rows + slot) * hidden + c] = x[t * hidden + c];
  }
}

template <typename T>
__global__ void combineKernel(const T *__restrict__ expertOut, const T *__restrict__ weights,
                              const int32_t *__restrict__ indices,
                              const int32_t *__restrict__ slots, T *__restrict__ out,
                              int64_t tokens, int64_t hidden, int64_t topK, int64_t rows) {
  const int64_t total = tokens * hidden;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t t = i / hidden, c = i - t * hidden;
    float acc = 0.0f;
    for (int64_t j = 0; j < topK; ++j) {
      int64_t a = t * topK + j;
      int32_t slot = slots[a];
      if (slot < 0)
        continue;
      acc = fmaf(toF(weights[a]),
                 toF(expertOut[(static_cast<int64_t>(indices[a]) * rows + slot) * hidden + c]),
                 acc);
    }
    out[i] = fromF<T>(acc);
  }
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
  cudaStream_t stream = streamOf(rt);
  BRAID_DISPATCH_FLOAT(dt, T, {
    routerKernel<T><<<gridFor(tokens, 128), 128, 0, stream>>>(
        static_cast<const T *>(logits), static_cast<T *>(weights), indices, tokens, experts,
        top_k);
    BRAID_CUDA_CHECK_LAUNCH();
    if (normalize) {
      routerNormalizedKernel<T><<<gridFor(tokens, 128), 128, 0, stream>>>(
          static_cast<const T *>(logits), static_cast<T *>(weights), indices, tokens, experts,
          top_k);
      BRAID_CUDA_CHECK_LAUNCH();
    }
  });
}

void braid_k_dispatch(braid_rt *rt, braid_dtype dt, const void *x, const int32_t *indices,
                      void *out, int64_t tokens, int64_t hidden, int64_t top_k, int64_t experts,
                      int64_t capacity, int64_t groups) {
  using namespace braid::cuda;
  checkMoe("dispatch", experts, capacity, top_k, tokens, groups);
  const int64_t rows = capacity * groups; // per expert
  cudaStream_t stream = streamOf(rt);
  int64_t outElems = experts * rows * hidden;
  BRAID_DISPATCH_FLOAT(dt, T, {
    zeroKernel<T><<<gridFor(outElems, kThreads), kThreads, 0, stream>>>(static_cast<T *>(out),
                                                                         outElems);
    BRAID_CUDA_CHECK_LAUNCH();
  });
  if (tokens <= 0 || hidden <= 0)
    return;
  int32_t *slots = assignSlots(stream, indices, tokens, top_k, experts, capacity, groups);
  BRAID_DISPATCH_FLOAT(dt, T, {
    dispatchKernel<T><<<gridFor(tokens * top_k * hidden, kThreads), kThreads, 0, stream>>>(
        static_cast<const T *>(x), indices, slots, static_cast<T *>(out), tokens, hidden, top_k,
        rows);
    BRAID_CUDA_CHECK_LAUNCH();
  });
}

void braid_k_combine(braid_rt *rt, braid_dtype dt, const void *expert_out, const void *weights,
                     const int32_t *indices, void *out, int64_t tokens, int64_t hidden,
                     int64_t top_k, int64_t experts, int64_t capacity, int64_t groups) {
  using namespace braid::cuda;
  checkMoe("combine", experts, capacity, top_k, tokens, groups);
  const int64_t rows = capacity * groups; // per expert
  if (tokens <= 0 || hidden <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  int32_t *slots = assignSlots(stream, indices, tokens, top_k, experts, capacity, groups);
  BRAID_DISPATCH_FLOAT(dt, T, {
    combineKernel<T><<<gridFor(tokens * hidden, kThreads), kThreads, 0, stream>>>(
        static_cast<const T *>(expert_out), static_cast<const T *>(weights), indices, slots,
        static_cast<T *>(out), tokens, hidden, top_k, rows);
    BRAID_CUDA_CHECK_LAUNCH();
  });
}

} // extern "C"
