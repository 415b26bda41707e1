//===- cublaslt.cpp - cudasim's cuBLASLt matmul ----------------------------===//
//
// D = alpha op(A) op(B) + beta C (+ bias broadcast over D's columns), every
// matrix column-major with its layout's leading dimension and batch stride,
// as cuBLASLt documents it. Shapes that do not agree, a missing bias pointer
// or a pointer less aligned than the algorithm was chosen for fail with
// CUBLAS_STATUS_INVALID_VALUE and a message, where cuBLASLt would fail or
// read out of bounds.
//
//===----------------------------------------------------------------------===//

#include "cublasLt.h"
#include "internal.h"

#include <cstdio>
#include <vector>

namespace cudasim::blas {
struct Handle {};
struct MatmulDesc {
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  cudaDataType_t biasType = CUDA_R_32F;
  bool biasTypeSet = false;
};
struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct Preference {
  uint64_t workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256}; // A, B, C, D
};
} // namespace cudasim::blas

namespace {
using namespace cudasim::blas;

template <typename T> bool set(T &field, const void *buf, size_t bytes) {
  if (bytes != sizeof(T))
    return false;
  std::memcpy(&field, buf, sizeof(T));
  return true;
}

cudasim::Scalar scalar(cudaDataType_t t) {
  return t == CUDA_R_32F ? cudasim::Scalar::F32
         : t == CUDA_R_16F ? cudasim::Scalar::F16
                           : cudasim::Scalar::BF16;
}
size_t elementBytes(cudaDataType_t t) { return cudasim::scalarBytes(scalar(t)); }
float load(cudaDataType_t t, const void *p, int64_t i) {
  return static_cast<float>(cudasim::loadScalar(scalar(t), p, size_t(i)));
}
void store(cudaDataType_t t, void *p, int64_t i, float v) {
  cudasim::storeScalar(scalar(t), p, size_t(i), v);
}

/// The Create calls: a new T of `args`.
template <typename T, typename... A> cublasStatus_t create(T **object, A... args) {
  *object = new T{args...};
  return CUBLAS_STATUS_SUCCESS;
}
/// The Destroy calls.
template <typename T> cublasStatus_t destroy(T *object) {
  delete object;
  return CUBLAS_STATUS_SUCCESS;
}
/// The SetAttribute calls: whether the attribute was known and its size right.
cublasStatus_t setStatus(bool ok) {
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t invalid(const char *why) {
  std::fprintf(stderr, "cudasim: cublasLtMatmul: %s\n", why);
  return CUBLAS_STATUS_INVALID_VALUE;
}

/// The shape problems of D = op(A) op(B) + C, or null.
const char *checkShapes(const MatmulDesc &desc, const Layout &a, const Layout &b,
                        const Layout &c, const Layout &d) {
  uint64_t m = d.rows, n = d.cols;
  uint64_t aRows = desc.transA == CUBLAS_OP_N ? a.rows : a.cols;
  uint64_t k = desc.transA == CUBLAS_OP_N ? a.cols : a.rows;
  uint64_t bRows = desc.transB == CUBLAS_OP_N ? b.rows : b.cols;
  uint64_t bCols = desc.transB == CUBLAS_OP_N ? b.cols : b.rows;
  if (aRows != m || bCols != n || bRows != k)
    return "op(A) op(B) does not have D's shape";
  if (c.rows != m || c.cols != n)
    return "C and D differ in shape";
  for (const Layout *l : {&a, &b, &c, &d})
    if (l->ld < static_cast<int64_t>(std::max<uint64_t>(l->rows, 1)))
      return "a leading dimension is smaller than its matrix's rows";
  if (a.type != d.type || b.type != d.type || c.type != d.type)
    return "mixed operand types (not used by Braid)";
  int32_t batch = d.batch;
  for (const Layout *l : {&a, &b, &c})
    if (l->batch != batch && l->batch != 1)
      return "batch counts differ";
  return nullptr;
}
} // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) { return create(handle); }
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) { return destroy(handle); }
const char *cublasLtGetStatusString(cublasStatus_t status) {
  static constexpr cudasim::StatusText<cublasStatus_t> kTexts[] = {
      {CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS"},
      {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED"},
      {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE"},
      {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED"}};
  return cudasim::textOf(kTexts, status, "CUBLAS_STATUS_UNKNOWN");
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return create(desc);
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) { return destroy(desc); }
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t bytes) {
  bool ok = false;
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    ok = set(desc->transA, buf, bytes);
    break;
  case CUBLASLT_MATMUL_DESC_TRANSB:
    ok = set(desc->transB, buf, bytes);
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    ok = set(desc->epilogue, buf, bytes);
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    ok = set(desc->bias, buf, bytes);
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    ok = set(desc->biasType, buf, bytes);
    desc->biasTypeSet = ok;
    break;
  }
  return setStatus(ok);
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType_t type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  return create(layout, type, rows, cols, ld);
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  return destroy(layout);
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t bytes) {
  bool ok = false;
  if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT)
    ok = set(layout->batch, buf, bytes) && layout->batch >= 1;
  else if (attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)
    ok = set(layout->stride, buf, bytes);
  return setStatus(ok);
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  return create(pref);
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return destroy(pref);
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t bytes) {
  bool ok = false;
  switch (attr) {
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    ok = set(pref->workspace, buf, bytes);
    break;
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    ok = set(pref->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, bytes);
    break;
  }
  return setStatus(ok);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int *returned) {
  if (!handle || !desc || !a || !b || !c || !d || !pref || requested < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  if (const char *why = checkShapes(*desc, *a, *b, *c, *d))
    return invalid(why);
  // An algorithm needs its operands aligned to their element size at least;
  // the preference says how much more the caller guarantees.
  for (uint32_t align : pref->align)
    if (align < elementBytes(d->type))
      return CUBLAS_STATUS_SUCCESS; // no algorithm
  results[0] = cublasLtMatmulHeuristicResult_t{};
  for (int i = 0; i < 4; ++i)
    results[0].algo.data[i] = pref->align[i];
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *a, cublasLtMatrixLayout_t aDesc,
                              const void *b, cublasLtMatrixLayout_t bDesc, const void *beta,
                              const void *c, cublasLtMatrixLayout_t cDesc, void *d,
                              cublasLtMatrixLayout_t dDesc, const cublasLtMatmulAlgo_t *algo,
                              void *, size_t, cudaStream_t stream) {
  if (!handle || !desc || !aDesc || !bDesc || !cDesc || !dDesc || !algo)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (const char *why = checkShapes(*desc, *aDesc, *bDesc, *cDesc, *dDesc))
    return invalid(why);
  const void *pointers[4] = {a, b, c, d};
  for (int i = 0; i < 4; ++i)
    if (reinterpret_cast<uintptr_t>(pointers[i]) % algo->data[i] != 0)
      return invalid("an operand is less aligned than the algorithm was chosen for");
  const bool bias = desc->epilogue == CUBLASLT_EPILOGUE_BIAS;
  if (bias && (!desc->bias || (desc->biasTypeSet && desc->biasType != dDesc->type)))
    return invalid("the bias epilogue without a bias pointer of D's type");
  const Layout A = *aDesc, B = *bDesc, C = *cDesc, D = *dDesc;
  const MatmulDesc op = *desc;
  const float al = *static_cast<const float *>(alpha), be = *static_cast<const float *>(beta);
  const int64_t m = static_cast<int64_t>(D.rows), n = static_cast<int64_t>(D.cols);
  const int64_t k = static_cast<int64_t>(op.transA == CUBLAS_OP_N ? A.cols : A.rows);
  // Every operand must lie in device memory (or mapped host memory) whole.
  auto span = [](const Layout &l) {
    int64_t batches = l.batch > 1 ? l.batch : 1;
    return static_cast<size_t>(((batches - 1) * l.stride + (static_cast<int64_t>(l.cols) - 1) *
                                                              l.ld + static_cast<int64_t>(l.rows)) *
                               static_cast<int64_t>(elementBytes(l.type)));
  };
  if (!cudasim::isDevicePointer(a, span(A)) || !cudasim::isDevicePointer(b, span(B)) ||
      (be != 0.0f && !cudasim::isDevicePointer(c, span(C))) ||
      !cudasim::isDevicePointer(d, span(D)))
    return invalid("an operand is not (wholly) in device memory");
  cudasim::enqueue(stream, [=] {
    std::vector<float> opA(static_cast<size_t>(m * k)), opB(static_cast<size_t>(k * n)),
        out(static_cast<size_t>(m * n));
    for (int64_t batch = 0; batch < D.batch; ++batch) {
      auto offset = [&](const Layout &l) { return l.batch > 1 ? batch * l.stride : 0; };
      int64_t oa = offset(A), ob = offset(B), oc = offset(C), od = offset(D);
      for (int64_t i = 0; i < m; ++i) // opA row-major [m][k]
        for (int64_t p = 0; p < k; ++p)
          opA[i * k + p] = load(A.type, a, oa + (op.transA == CUBLAS_OP_N ? i + p * A.ld
                                                                           : p + i * A.ld));
      for (int64_t p = 0; p < k; ++p) // opB row-major [k][n]
        for (int64_t j = 0; j < n; ++j)
          opB[p * n + j] = load(B.type, b, ob + (op.transB == CUBLAS_OP_N ? p + j * B.ld
                                                                           : j + p * B.ld));
      std::fill(out.begin(), out.end(), 0.0f);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p) {
          float x = opA[i * k + p];
          for (int64_t j = 0; j < n; ++j)
            out[i * n + j] += x * opB[p * n + j];
        }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i) {
          float v = al * out[i * n + j];
          if (be != 0.0f)
            v += be * load(C.type, c, oc + i + j * C.ld);
          if (bias)
            v += load(D.type, op.bias, i);
          store(D.type, d, od + i + j * D.ld, v);
        }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}
