//===- grad_common.cuh - helpers of the backward CUDA kernels ---*- CUDA -*-===//
//
// Deterministic column reductions: a gradient that sums over rows (bias,
// gamma, conv weights, ...) is computed in two passes without atomics:
//  1. a kernel writes partial sums per chunk of kRowsPerChunk rows into a
//     scratch buffer partial[chunks][n] (each thread owns one column and walks
//     its chunk's rows in order);
//  2. reduceChunksKernel sums the chunks of each column in order 0..chunks-1
//     and stores the result in the gradient's storage type.
// The result depends only on the shapes, never on scheduling: bitwise
// reproducible from run to run.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_GRAD_COMMON_CUH
#define BRAID_RUNTIME_CUDA_GRAD_COMMON_CUH

#include "cuda/common.cuh"

namespace braid::cuda::grad {

using cuda::kThreads;
constexpr int64_t kRowsPerChunk = 64;

inline int64_t chunksFor(int64_t rows) { return (rows + kRowsPerChunk - 1) / kRowsPerChunk; }

/// The chunks of `rows` for pass 1, stopping with a message when they exceed
/// the grid's y dimension.
inline int64_t checkedChunks(const char *kernel, int64_t rows) {
  const int64_t chunks = chunksFor(rows);
  if (chunks > 65535)
    BRAID_CUDA_FATAL("%s: %lld rows exceed the grid", kernel, static_cast<long long>(rows));
  return chunks;
}

/// The grid of pass 1: x over the `columns` (kThreads each), y over the chunks.
inline dim3 chunkGrid(int64_t columns, int64_t chunks) {
  return dim3(static_cast<unsigned>((columns + kThreads - 1) / kThreads),
              static_cast<unsigned>(chunks));
}

struct ColumnChunk {
  int64_t column, firstRow, endRow;
};

/// The column this thread of pass 1 owns and the rows [firstRow, endRow) of
/// its chunk (the column may lie past the last one: the caller checks).
__device__ __forceinline__ ColumnChunk columnChunk(int64_t rows) {
  const int64_t r0 = blockIdx.y * kRowsPerChunk;
  return {blockIdx.x * (int64_t)blockDim.x + threadIdx.x, r0, min(rows, r0 + kRowsPerChunk)};
}

/// out[c] = sum over k < chunks of partial[k * n + c] (in order), for c < n.
template <typename T>
__global__ void reduceChunksKernel(const float *__restrict__ partial, T *__restrict__ out,
                                   int64_t chunks, int64_t n) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < n;
       c += (int64_t)gridDim.x * blockDim.x) {
    float acc = 0.0f;
    for (int64_t k = 0; k < chunks; ++k)
      acc += partial[k * n + c];
    out[c] = fromF<T>(acc);
  }
}

template <typename T>
void launchReduceChunks(cudaStream_t stream, const float *partial, void *out, int64_t chunks,
                        int64_t n) {
  launch("reduce_chunks", gridFor(n, kThreads), kThreads, stream, reduceChunksKernel<T>, partial,
         out, chunks, n);
}

/// Rounds a byte count up to a multiple of 256 (scratch sub-buffer alignment).
inline int64_t alignUp(int64_t bytes) { return (bytes + 255) / 256 * 256; }

} // namespace braid::cuda::grad

#endif // BRAID_RUNTIME_CUDA_GRAD_COMMON_CUH
