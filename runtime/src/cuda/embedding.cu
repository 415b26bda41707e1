//===- embedding.cu - token (+ learned position) embedding ----------------===//
//
// out[t, :] = table[tokens[t], :] (+ pos[t % seq, :]); one thread per output
// element. A token outside [0, vocab) sets the device error record (the
// backend aborts at the next synchronize, naming the token) and yields 0.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

namespace braid::cuda {
namespace {

template <typename T>
__global__ void embeddingKernel(const void *__restrict__ tokens, int index64,
                                const T *__restrict__ table, const T *__restrict__ pos,
                                T *__restrict__ out, int64_t numTokens, int64_t seq,
                                int64_t vocab, int64_t hidden, DeviceError *error) {
  int64_t total = numTokens * hidden;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t t = i / hidden, c = i - t * hidden;
    long long token = loadIndex(tokens, index64, t);
    float v = 0.0f;
    if (token < 0 || token >= vocab) {
      if (c == 0)
        reportIndexError(error, kTokenOutOfRange, token, vocab, t);
    } else {
      v = toF(table[token * hidden + c]);
    }
    if (pos)
      v += toF(pos[(t % seq) * hidden + c]);
    out[i] = fromF<T>(v);
  }
}

} // namespace
} // namespace braid::cuda

extern "C" void braid_k_embedding(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                                  const void *tokens, const void *table, const void *pos,
                                  void *out, int64_t num_tokens, int64_t seq, int64_t vocab,
                                  int64_t hidden) {
  using namespace braid::cuda;
  BRAID_CHECK_INDEX_DTYPE(index_dt);
  if (num_tokens <= 0 || hidden <= 0)
    return;
  if (pos && seq <= 0)
    BRAID_CUDA_FATAL("embedding: seq %lld must be positive with a position table",
                     static_cast<long long>(seq));
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("embedding", num_tokens * hidden, streamOf(rt),
                                      embeddingKernel<T>, tokens, index_dt == BRAID_I64, table,
                                      pos, out, num_tokens, seq, vocab, hidden,
                                      deviceErrorRecord()));
}
