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
  assignSlotsKernel<<<static_cast<unsigned>(groups), threads, 0, stream>>>(
      indices, slots, tokens, topK, experts, capacity, deviceErrorRecord());
  BRAID_CUDA_CHECK_LAUNCH();
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
template <typename T>
__global__ void zeroKernel(T *__restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    out[i] = fromF<T>(0.0f);
}

} // namespace
} // namespace braid::cuda

#endif // BRAID_RUNTIME_CUDA_MOE_SLOTS_CUH
