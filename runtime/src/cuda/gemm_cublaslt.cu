//===- gemm_cublaslt.cu - linear and batch_matmul through cuBLASLt --------===//
//
// Row-major C[m, n] = A[m, k] B[k, n] is computed as the column-major product
// C^T[n, m] = B^T[n, k] A^T[k, m]: the row-major buffers are passed unchanged
// as column-major matrices with operands swapped, so no copy is needed;
// transposed operands ("w[n, k]^T", "a[k, m]^T") become CUBLAS_OP_T.
// The linear bias (per output feature n) is a per-row vector of the
// column-major C, i.e. cuBLASLt's BIAS epilogue; when no algorithm supports
// the epilogue for a shape the bias is added by a separate kernel.
//
// Numerics: CUBLAS_COMPUTE_32F for every storage type (f32 accumulate; f32
// inputs do NOT use TF32, so f32 results match a CPU f32 GEMM to ~1e-6).
//
// One cuBLASLt handle and a 64 MiB workspace per device, created lazily;
// plans (descriptors, layouts, chosen algorithm) are cached per shape and
// pointer alignment. GEMMs run on the runtime's compute stream only, so the
// workspace is never used concurrently.
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

#include <cublasLt.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#define BRAID_CUBLAS_CHECK(expr)                                                                 \
  do {                                                                                           \
    cublasStatus_t status_ = (expr);                                                             \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                                        \
      BRAID_CUDA_FATAL("%s failed: %s (%d)", #expr, cublasLtGetStatusString(status_),            \
                       static_cast<int>(status_));                                               \
  } while (0)

namespace braid::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t(64) << 20;

struct PlanKey {
  int dtype, transA, transB, bias;
  int64_t batch, m, n, k;
  int alignA, alignB, alignC, alignBias;
  bool operator<(const PlanKey &o) const {
    return std::tie(dtype, transA, transB, bias, batch, m, n, k, alignA, alignB, alignC,
                    alignBias) < std::tie(o.dtype, o.transA, o.transB, o.bias, o.batch, o.m, o.n,
                                          o.k, o.alignA, o.alignB, o.alignC, o.alignBias);
  }
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layoutA = nullptr, layoutB = nullptr, layoutC = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool biasInEpilogue = false;
};

struct Context {
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  std::map<PlanKey, Plan> plans;
};

std::mutex &gemmMutex() {
  static std::mutex m;
  return m;
}

Context &contextFor(int device) {
  static std::map<int, Context> contexts; // per device, never destroyed (process lifetime)
  Context &ctx = contexts[device];
  if (!ctx.handle) {
    BRAID_CUBLAS_CHECK(cublasLtCreate(&ctx.handle));
    BRAID_CUDA_CHECK(cudaMalloc(&ctx.workspace, kWorkspaceBytes));
  }
  return ctx;
}

int alignmentOf(const void *p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  int a = 256;
  while (a > 1 && (v % static_cast<uintptr_t>(a)) != 0)
    a >>= 1;
  return a;
}

cudaDataType_t cudaTypeOf(braid_dtype dt) {
  switch (dt) {
  case BRAID_F32:
    return CUDA_R_32F;
  case BRAID_BF16:
    return CUDA_R_16BF;
  case BRAID_F16:
    return CUDA_R_16F;
  default:
    BRAID_CUDA_FATAL("gemm: unsupported dtype %d", static_cast<int>(dt));
  }
}

cublasLtMatrixLayout_t makeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                                  int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t layout;
  BRAID_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows),
                                                static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    BRAID_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    BRAID_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return layout;
}

bool choose(Context &ctx, Plan &plan, const PlanKey &key) {
  cublasLtMatmulPreference_t pref;
  BRAID_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = kWorkspaceBytes;
  BRAID_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  uint32_t a = static_cast<uint32_t>(key.alignA), b = static_cast<uint32_t>(key.alignB),
           c = static_cast<uint32_t>(key.alignC);
  // cuBLASLt's A is our B operand and vice versa (see the header comment).
  BRAID_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &b, sizeof(b)));
  BRAID_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &a, sizeof(a)));
  BRAID_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &c, sizeof(c)));
  BRAID_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &c, sizeof(c)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(ctx.handle, plan.desc, plan.layoutA, plan.layoutB,
                                     plan.layoutC, plan.layoutC, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0)
    return false;
  plan.algo = result.algo;
  return true;
}

Plan &planFor(Context &ctx, const PlanKey &key) {
  auto it = ctx.plans.find(key);
  if (it != ctx.plans.end())
    return it->second;
  Plan plan;
  cudaDataType_t type = cudaTypeOf(static_cast<braid_dtype>(key.dtype));
  BRAID_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // Operand 1 (cuBLASLt "A") is our B: [k, n] row-major = n x k col-major (ld n), or with
  // transB [n, k] row-major = k x n col-major (ld k) under OP_T.
  cublasOperation_t opA = key.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  // Operand 2 (cuBLASLt "B") is our A: [m, k] row-major = k x m col-major (ld k), or with
  // transA [k, m] row-major = m x k col-major (ld m) under OP_T.
  cublasOperation_t opB = key.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  BRAID_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)));
  BRAID_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)));
  int64_t m = key.m, n = key.n, k = key.k;
  plan.layoutA = key.transB ? makeLayout(type, k, n, k, key.batch, n * k)
                            : makeLayout(type, n, k, n, key.batch, n * k);
  plan.layoutB = key.transA ? makeLayout(type, m, k, m, key.batch, m * k)
                            : makeLayout(type, k, m, k, key.batch, m * k);
  plan.layoutC = makeLayout(type, n, m, n, key.batch, m * n);
  bool ok = false;
  if (key.bias) {
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    BRAID_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    cudaDataType_t biasType = type;
    BRAID_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof(biasType)));
    ok = choose(ctx, plan, key);
    plan.biasInEpilogue = ok;
    if (!ok) {
      epilogue = CUBLASLT_EPILOGUE_DEFAULT;
      BRAID_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    }
  }
  if (!ok && !choose(ctx, plan, key))
    BRAID_CUDA_FATAL("cuBLASLt found no algorithm for dtype %d batch %lld m %lld n %lld k %lld "
                     "transA %d transB %d (alignments %d/%d/%d)",
                     key.dtype, static_cast<long long>(key.batch), static_cast<long long>(m),
                     static_cast<long long>(n), static_cast<long long>(k), key.transA,
                     key.transB, key.alignA, key.alignB, key.alignC);
  return ctx.plans.emplace(key, plan).first->second;
}

template <typename T>
__global__ void addBiasKernel(T *y, const T *b, int64_t rows, int64_t n) {
  int64_t total = rows * n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fromF<T>(toF(y[i]) + toF(b[i % n]));
}

/// C[batch, m, n] = op(A) op(B) (+ bias[n]) on `stream`.
void gemm(cudaStream_t stream, braid_dtype dt, const void *a, const void *b, const void *bias,
          void *c, int64_t batch, int64_t m, int64_t k, int64_t n, int transA, int transB) {
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  if (k <= 0) { // empty contraction: C = 0 (+ bias)
    BRAID_DISPATCH_FLOAT(dt, T, {
      launchElements("gemm", batch * m * n, stream, zeroKernel<T>, c, batch * m * n);
      if (bias)
        launchElements("gemm", batch * m * n, stream, addBiasKernel<T>, c, bias, batch * m, n);
    });
    return;
  }
  int device = 0;
  BRAID_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(gemmMutex());
  Context &ctx = contextFor(device);
  PlanKey key{static_cast<int>(dt), transA ? 1 : 0, transB ? 1 : 0, bias ? 1 : 0, batch, m, n, k,
              alignmentOf(a), alignmentOf(b), alignmentOf(c), bias ? alignmentOf(bias) : 256};
  Plan &plan = planFor(ctx, key);
  if (plan.biasInEpilogue)
    BRAID_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float alpha = 1.0f, beta = 0.0f;
  BRAID_CUBLAS_CHECK(cublasLtMatmul(ctx.handle, plan.desc, &alpha, b, plan.layoutA, a,
                                    plan.layoutB, &beta, c, plan.layoutC, c, plan.layoutC,
                                    &plan.algo, ctx.workspace, kWorkspaceBytes, stream));
  if (bias && !plan.biasInEpilogue) {
    BRAID_DISPATCH_FLOAT(dt, T,
                         launchElements("gemm", batch * m * n, stream, addBiasKernel<T>, c, bias,
                                        batch * m, n));
  }
}

} // namespace
} // namespace braid::cuda

extern "C" {

void braid_k_linear(braid_rt *rt, braid_dtype dt, const void *x, const void *w, const void *b,
                    void *y, int64_t rows, int64_t k, int64_t n, int32_t flags) {
  // cuBLASLt's result for a row does not depend on the rows beside it at
  // these sizes: BRAID_LINEAR_ROWS_APART needs nothing more.
  braid::cuda::gemm(braid::cuda::streamOf(rt), dt, x, w, b, y, 1, rows, k, n, 0,
                    flags & BRAID_LINEAR_TRANSPOSE_W);
}

void braid_k_batch_matmul(braid_rt *rt, braid_dtype dt, const void *a, const void *b, void *c,
                          int64_t batch, int64_t m, int64_t k, int64_t n, int32_t transpose_a,
                          int32_t transpose_b) {
  braid::cuda::gemm(braid::cuda::streamOf(rt), dt, a, b, nullptr, c, batch, m, k, n, transpose_a,
                    transpose_b);
}

} // extern "C"
