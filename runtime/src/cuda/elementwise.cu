//===- elementwise.cu - unary, binary, glu, transpose ---------------------===//
//
// Grid-stride loops over the flat element range; arithmetic in f32.
// transpose works on any element size (it only moves bytes) and any rank up
// to kMaxRank, by index arithmetic: output linear index -> output coordinates
// -> input offset through the permuted input strides.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

namespace braid::cuda {
namespace {

constexpr int kMaxRank = 8;

template <typename T>
__global__ void unaryKernel(int act, const T *__restrict__ x, T *__restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fromF<T>(applyAct(act, toF(x[i])));
}

template <typename T>
__global__ void binaryKernel(int op, const T *__restrict__ a, const T *__restrict__ b,
                             T *__restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float u = toF(a[i]), v = toF(b[i]);
    y[i] = fromF<T>(op == BRAID_BIN_ADD ? u + v : u * v);
  }
}

template <typename T>
__global__ void gluKernel(int act, const T *__restrict__ gate, const T *__restrict__ up,
                          T *__restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fromF<T>(applyAct(act, toF(gate[i])) * toF(up[i]));
}

struct TransposeDims {
  int rank;
  int64_t outShape[kMaxRank];
  int64_t inStride[kMaxRank]; // input stride of the dimension that output dim i reads
};

template <typename E>
__global__ void transposeKernel(const E *__restrict__ x, E *__restrict__ y, TransposeDims dims,
                                int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rem = i, src = 0;
    for (int d = dims.rank - 1; d >= 0; --d) {
      int64_t c = rem % dims.outShape[d];
      rem /= dims.outShape[d];
      src += c * dims.inStride[d];
    }
    y[i] = x[src];
  }
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_unary(braid_rt *rt, braid_dtype dt, braid_act act, const void *x, void *y,
                   int64_t n) {
  using namespace braid::cuda;
  checkAct("unary", act);
  if (n <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("unary", n, streamOf(rt), unaryKernel<T>, act, x, y, n));
}

void braid_k_binary(braid_rt *rt, braid_dtype dt, braid_binop op, const void *a, const void *b,
                    void *y, int64_t n) {
  using namespace braid::cuda;
  if (op != BRAID_BIN_ADD && op != BRAID_BIN_MUL)
    BRAID_CUDA_FATAL("binary: unknown op %d", static_cast<int>(op));
  if (n <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("binary", n, streamOf(rt), binaryKernel<T>, op, a, b, y, n));
}

void braid_k_glu(braid_rt *rt, braid_dtype dt, braid_act act, const void *gate, const void *up,
                 void *y, int64_t n) {
  using namespace braid::cuda;
  checkAct("glu", act);
  if (n <= 0)
    return;
  BRAID_DISPATCH_FLOAT(dt, T,
                       launchElements("glu", n, streamOf(rt), gluKernel<T>, act, gate, up, y, n));
}

void braid_k_transpose(braid_rt *rt, braid_dtype dt, const void *x, void *y, int32_t rank,
                       const int64_t *shape, const int64_t *perm) {
  using namespace braid::cuda;
  if (rank < 0 || rank > kMaxRank)
    BRAID_CUDA_FATAL("transpose: rank %d outside [0, %d]", rank, kMaxRank);
  TransposeDims dims{};
  dims.rank = rank;
  int64_t inStride[kMaxRank];
  int64_t n = 1;
  for (int d = rank - 1; d >= 0; --d) {
    inStride[d] = n;
    n *= shape[d];
  }
  bool seen[kMaxRank] = {};
  for (int i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
      BRAID_CUDA_FATAL("transpose: permutation entry %lld is invalid",
                       static_cast<long long>(perm[i]));
    seen[perm[i]] = true;
    dims.outShape[i] = shape[perm[i]];
    dims.inStride[i] = inStride[perm[i]];
  }
  if (n <= 0)
    return;
  BRAID_DISPATCH_BITS_IN("transpose", dt, E,
                         launchElements("transpose", n, streamOf(rt), transposeKernel<E>, x, y,
                                        dims, n));
}

} // extern "C"
