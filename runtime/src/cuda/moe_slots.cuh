//===- moe_slots.cuh - MoE slot assignment of the CUDA kernels --*- CUDA -*-===//
//
// The one place of the slot rule shared by dispatch / combine (moe.cu) and
// their gradients (grad_moe.cu): the tokens form `groups` consecutive groups,
// each with `capacity` slots per expert (group g's are rows [g C, (g+1) C) of
// an expert's buffer); within a group, assignments (t, j) in the order
// j-major then t take the next free slot of their expert, dropped at
// capacity. It is computed by one block per group in which thread e walks the
// group's assignments in order and counts those of expert e (a sequential
// prefix per expert: O(T k / G) per thread, correct first, and cheap next to
// the expert GEMMs). Rows go to a scratch buffer [T, k] (-1: dropped); an
// expert index outside [0, experts) is dropped and sets the device error
// record.
//
// Two moves through the slots serve all four kernels: scatterPicks puts
// token rows (times the pick's weight, for combine's gradient) into the
// expert buffers (dispatch, combine_grad's dexpert_out), and gatherPicks sums
// a token's expert rows over its picks j = 0..k-1 in f32 (times the weights:
// combine; unweighted: dispatch_grad).
//
// Internal linkage (unnamed namespace): each including .cu gets its own copy
// of the kernel, launched by its own assignSlots().
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_MOE_SLOTS_CUH
#define BRAID_RUNTIME_CUDA_MOE_SLOTS_CUH

#include "cuda/common.cuh"

namespace braid::cuda {
namespace {

__global__ void assignSlotsKernel(const int32_t *__restrict__ indices, int32_t *__restrict__ slots,
                                  int64_t tokens, int64_t topK, int64_t experts, int64_t capacity,
                                  DeviceError *error) {
  const int64_t groupTokens = tokens / gridDim.x;
  const int64_t first = blockIdx.x * groupTokens, last = first + groupTokens;
  const int64_t base = blockIdx.x * capacity;
  for (int64_t e = threadIdx.x; e < experts; e += blockDim.x) {
    int64_t count = 0;
    for (int64_t j = 0; j < topK; ++j)
      for (int64_t t = first; t < last; ++t) {
        int32_t idx = indices[t * topK + j];
        if (idx == e) {
          slots[t * topK + j] = count < capacity ? static_cast<int32_t>(base + count) : -1;
          ++count;
        }
      }
  }
  // Out-of-range experts: no thread owns them; mark them dropped and report.
  for (int64_t i = first * topK + threadIdx.x; i < last * topK; i += blockDim.x) {
    int32_t idx = indices[i];
    if (idx < 0 || idx >= experts) {
      slots[i] = -1;
      reportIndexError(error, kExpertOutOfRange, idx, experts, i);
    }
  }
}

/// The rows [tokens, topK] of `indices` in the runtime scratch (group *
/// capacity + slot, or -1), computed on `stream` (valid until the next
/// scratch() call).
int32_t *assignSlots(cudaStream_t stream, const int32_t *indices, int64_t tokens, int64_t topK,
                     int64_t experts, int64_t capacity, int64_t groups) {
  auto *slots = static_cast<int32_t *>(
      scratch(stream, tokens * topK * static_cast<int64_t>(sizeof(int32_t))));
  int threads = experts >= 1024 ? 1024 : static_cast<int>((experts + 31) / 32 * 32);
  launch("assign_slots", static_cast<unsigned>(groups), threads, stream, assignSlotsKernel,
         indices, slots, tokens, topK, experts, capacity, deviceErrorRecord());
  return slots;
}

/// Aborts unless experts, capacity and top_k are positive and the tokens
/// form `groups` equal groups.
void checkMoe(const char *op, int64_t experts, int64_t capacity, int64_t topK, int64_t tokens,
              int64_t groups) {
  if (experts <= 0 || capacity <= 0 || topK <= 0)
    BRAID_CUDA_FATAL("%s: experts %lld, capacity %lld and top_k %lld must be positive", op,
                     static_cast<long long>(experts), static_cast<long long>(capacity),
                     static_cast<long long>(topK));
  if (groups <= 0 || tokens % groups != 0)
    BRAID_CUDA_FATAL("%s: %lld tokens do not form %lld equal groups", op,
                     static_cast<long long>(tokens), static_cast<long long>(groups));
}

/// out[0, n) = 0 in storage type T.
/// The router's softmax statistics of one token's logits: their max `m` and
/// the f32 sum of exp(x - m), in expert order (router and router_grad).
template <typename T>
__device__ __forceinline__ void routerSoftmaxStats(const T *row, int64_t experts, float &m,
                                                   float &sum) {
  m = -INFINITY;
  for (int64_t e = 0; e < experts; ++e)
    m = fmaxf(m, toF(row[e]));
  sum = 0.0f;
  for (int64_t e = 0; e < experts; ++e)
    sum += expf(toF(row[e]) - m);
}

/// Threads per block of the router kernels (one thread per token).
constexpr int kRouterThreads = 128;

/// The expert row of assignment `a` (token t = a / topK), or null when dropped.
template <typename T>
__device__ __forceinline__ T *slotRow(T *buffer, const int32_t *indices, const int32_t *slots,
                                      int64_t a, int64_t rows, int64_t hidden) {
  const int32_t slot = slots[a];
  return slot < 0 ? nullptr : buffer + (static_cast<int64_t>(indices[a]) * rows + slot) * hidden;
}

/// buffer[expert slot of (t, j)] = src[t] (times weights[t, j] when non-null).
template <typename T>
__global__ void scatterPicksKernel(const T *__restrict__ src, const T *__restrict__ weights,
                                   const int32_t *__restrict__ indices,
                                   const int32_t *__restrict__ slots, T *__restrict__ buffer,
                                   int64_t tokens, int64_t hidden, int64_t topK, int64_t rows) {
  const int64_t total = tokens * topK * hidden;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t a = i / hidden, c = i - a * hidden; // assignment a = t * topK + j
    T *dst = slotRow(buffer, indices, slots, a, rows, hidden);
    if (!dst)
      continue;
    const T v = src[(a / topK) * hidden + c];
    dst[c] = weights ? fromF<T>(toF(weights[a]) * toF(v)) : v;
  }
}

/// out[t] = sum over j of buffer[expert slot of (t, j)] (times weights[t, j]
/// when non-null), dropped picks skipped.
template <typename T>
__global__ void gatherPicksKernel(const T *__restrict__ buffer, const T *__restrict__ weights,
                                  const int32_t *__restrict__ indices,
                                  const int32_t *__restrict__ slots, T *__restrict__ out,
                                  int64_t tokens, int64_t hidden, int64_t topK, int64_t rows) {
  const int64_t total = tokens * hidden;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t t = i / hidden, c = i - t * hidden;
    float acc = 0.0f;
    for (int64_t j = 0; j < topK; ++j) {
      const T *row = slotRow(buffer, indices, slots, t * topK + j, rows, hidden);
      if (!row)
        continue;
      acc = weights ? fmaf(toF(weights[t * topK + j]), toF(row[c]), acc) : acc + toF(row[c]);
    }
    out[i] = fromF<T>(acc);
  }
}

/// out [tokens, hidden] = the sum over each token's picks of their expert rows
/// of `buffer`, times `weights` when non-null (combine; dispatch_grad).
inline void gatherPicks(const char *name, braid_rt *rt, braid_dtype dt, const void *buffer,
                        const void *weights, const int32_t *indices, void *out, int64_t tokens,
                        int64_t hidden, int64_t topK, int64_t experts, int64_t capacity,
                        int64_t groups) {
  checkMoe(name, experts, capacity, topK, tokens, groups);
  if (tokens <= 0 || hidden <= 0)
    return;
  cudaStream_t stream = streamOf(rt);
  int32_t *slots = assignSlots(stream, indices, tokens, topK, experts, capacity, groups);
  BRAID_DISPATCH_FLOAT_IN(name, dt, T,
                          launchElements(name, tokens * hidden, stream, gatherPicksKernel<T>,
                                         buffer, weights, indices, slots, out, tokens, hidden,
                                         topK, capacity * groups));
}

} // namespace
} // namespace braid::cuda

#endif // BRAID_RUNTIME_CUDA_MOE_SLOTS_CUH
