//===- row_lse.cuh - block log-sum-exp of a row -----------------*- CUDA -*-===//
//
// Shared by cross_entropy (loss.cu) and cross_entropy_grad (grad_embedding.cu):
// one block reduces a row to (M, S) with logsumexp(row) = M + log(S), through
// an online (max, sum) pair per thread, merged across each warp by shuffles,
// then across the warps by thread 0 in warp order. Deterministic.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_ROW_LSE_CUH
#define BRAID_RUNTIME_CUDA_ROW_LSE_CUH

#include "cuda/common.cuh"

namespace braid::cuda {

/// The shape checks of cross_entropy and its gradient (one block per row of
/// a non-empty [rows, vocab]).
inline void checkLossShape(const char *kernel, int64_t rows, int64_t vocab) {
  if (rows <= 0 || vocab <= 0)
    BRAID_CUDA_FATAL("%s: needs rows and vocab > 0, got %lld and %lld", kernel,
                     static_cast<long long>(rows), static_cast<long long>(vocab));
  checkRows(kernel, rows);
}

/// (m, s) := the merge of the online pairs (m, s) and (m2, s2).
__device__ __forceinline__ void mergeLse(float &m, float &s, float m2, float s2) {
  if (m2 == -INFINITY)
    return;
  if (m == -INFINITY) {
    m = m2;
    s = s2;
    return;
  }
  float mn = fmaxf(m, m2);
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

/// Called by every thread of the block (blockDim.x a multiple of 32, <= 1024)
/// for row[0, n): thread 0 gets M and S with logsumexp(row) = M + log(S);
/// the other threads' M and S are unspecified. sm and ss hold 32 floats of
/// shared memory each. Ends with thread 0 past a __syncthreads().
template <typename T>
__device__ __forceinline__ void blockRowLse(const T *__restrict__ row, int64_t n, float *sm,
                                            float *ss, float &M, float &S) {
  float m = -INFINITY, s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float x = toF(row[i]);
    if (x > m) {
      s = (m == -INFINITY ? 0.0f : s * expf(m - x)) + 1.0f;
      m = x;
    } else {
      s += expf(x - m);
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    mergeLse(m, s, m2, s2);
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sm[warp] = m;
    ss[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    M = sm[0];
    S = ss[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w)
      mergeLse(M, S, sm[w], ss[w]);
  }
}

} // namespace braid::cuda

#endif // BRAID_RUNTIME_CUDA_ROW_LSE_CUH
