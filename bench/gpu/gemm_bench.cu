//===- gemm_bench.cu - cuBLASLt GEMM self-test and TFLOP/s ----------------===//
//
// Links runtime/src/cuda/gemm_cublaslt.cu (the runtime's own GEMM path,
// braid_k_linear / braid_k_batch_matmul) with a null runtime context, so it
// measures exactly what generated programs run.
//
//  1. Self-test: every transpose combination, with and without bias, batched,
//     f32 and bf16, odd shapes, against a naive f64-accumulating kernel.
//     f32 must match to 1e-5 relative (TF32 off); bf16 to 1e-2.
//  2. Throughput: TFLOP/s = 2 m n k / time for a few shapes (not with
//     --selftest-only).
//
// Build (bench/gpu/check.sh does this):
//   nvcc -O2 -std=c++17 -ccbin g++-12 -gencode arch=compute_90,code=sm_90 \
//     -I runtime/include -I runtime/src -DBRAID_RUNTIME_CUDA \
//     bench/gpu/gemm_bench.cu runtime/src/cuda/gemm_cublaslt.cu -lcublasLt -o gemm_bench
//
//===----------------------------------------------------------------------===//

#include "cuda/common.cuh"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

// The runtime core is not linked: kernels get a null context (default stream).
namespace braid::rt {
Backend *backendOf(struct ::braid_rt *) { return nullptr; }
} // namespace braid::rt
extern "C" int64_t braid_dtype_size(braid_dtype dt) {
  return dt == BRAID_F32 || dt == BRAID_I32 ? 4 : dt == BRAID_I64 ? 8 : 2;
}

using namespace braid::cuda;

template <typename T> __global__ void fillKernel(T *p, int64_t n, uint32_t seed, float amp) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = fromF<T>(amp * (static_cast<float>(h & 0xffffff) / 16777216.0f - 0.5f));
  }
}

// ref[b, i, j] = sum_k A[b, i, k] B[b, k, j] (+ bias[j]) in f64.
template <typename T>
__global__ void refKernel(const T *a, const T *b, const T *bias, double *c, int64_t batch,
                          int64_t m, int64_t k, int64_t n, int ta, int tb) {
  int64_t total = batch * m * n;
  for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total;
       idx += (int64_t)gridDim.x * blockDim.x) {
    int64_t bi = idx / (m * n), i = (idx / n) % m, j = idx % n;
    const T *A = a + bi * m * k;
    const T *B = b + bi * k * n;
    double acc = bias ? (double)toF(bias[j]) : 0.0;
    for (int64_t p = 0; p < k; ++p) {
      double x = toF(ta ? A[p * m + i] : A[i * k + p]);
      double y = toF(tb ? B[j * k + p] : B[p * n + j]);
      acc += x * y;
    }
    c[idx] = acc;
  }
}

template <typename T> __global__ void toDouble(const T *x, double *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = toF(x[i]);
}

template <typename T>
bool selfTest(braid_dtype dt, const char *name, double tol) {
  const int64_t batch = 3, m = 67, k = 45, n = 33;
  T *a, *b, *bias, *c;
  double *ref, *got;
  cudaMalloc(&a, sizeof(T) * batch * m * k);
  cudaMalloc(&b, sizeof(T) * batch * k * n);
  cudaMalloc(&bias, sizeof(T) * n);
  cudaMalloc(&c, sizeof(T) * batch * m * n);
  cudaMalloc(&ref, sizeof(double) * batch * m * n);
  cudaMalloc(&got, sizeof(double) * batch * m * n);
  fillKernel<T><<<64, 256>>>(a, batch * m * k, 1, 2.0f);
  fillKernel<T><<<64, 256>>>(b, batch * k * n, 2, 2.0f);
  fillKernel<T><<<64, 256>>>(bias, n, 3, 2.0f);
  std::vector<double> hr(batch * m * n), hg(batch * m * n);
  bool ok = true;
  // case: 0 = batch_matmul (batched, any transposes), 1 = linear, 2 = linear + bias
  for (int kind = 0; kind < 3; ++kind)
    for (int ta = 0; ta < (kind == 0 ? 2 : 1); ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        const int64_t bt = kind == 0 ? batch : 1;
        const T *bv = kind == 2 ? bias : nullptr;
        if (kind == 0)
          braid_k_batch_matmul(nullptr, dt, a, b, c, bt, m, k, n, ta, tb);
        else
          braid_k_linear(nullptr, dt, a, b, bv, c, m, k, n, tb);
        refKernel<T><<<64, 256>>>(a, b, bv, ref, bt, m, k, n, ta, tb);
        toDouble<T><<<64, 256>>>(c, got, bt * m * n);
        BRAID_CUDA_CHECK(cudaDeviceSynchronize());
        BRAID_CUDA_CHECK(cudaMemcpy(hr.data(), ref, sizeof(double) * bt * m * n,
                                    cudaMemcpyDeviceToHost));
        BRAID_CUDA_CHECK(cudaMemcpy(hg.data(), got, sizeof(double) * bt * m * n,
                                    cudaMemcpyDeviceToHost));
        double maxRef = 0, maxErr = 0;
        for (int64_t i = 0; i < bt * m * n; ++i) {
          maxRef = std::fmax(maxRef, std::fabs(hr[i]));
          maxErr = std::fmax(maxErr, std::fabs(hr[i] - hg[i]));
        }
        double rel = maxErr / (maxRef > 0 ? maxRef : 1);
        bool pass = rel <= tol;
        ok &= pass;
        std::printf("  selftest %-4s %-12s ta=%d tb=%d bias=%d batch=%lld: max rel err %.2e %s\n",
                    name, kind == 0 ? "batch_matmul" : "linear", ta, tb, kind == 2 ? 1 : 0,
                    (long long)bt, rel, pass ? "ok" : "FAIL");
      }
  cudaFree(a), cudaFree(b), cudaFree(bias), cudaFree(c), cudaFree(ref), cudaFree(got);
  return ok;
}

template <typename T>
void bench(braid_dtype dt, const char *name, int64_t m, int64_t k, int64_t n, bool bias) {
  T *a, *b, *bv = nullptr, *c;
  if (cudaMalloc(&a, sizeof(T) * m * k) != cudaSuccess ||
      cudaMalloc(&b, sizeof(T) * k * n) != cudaSuccess ||
      cudaMalloc(&c, sizeof(T) * m * n) != cudaSuccess) {
    std::printf("  %s %lldx%lldx%lld: out of memory\n", name, (long long)m, (long long)k,
                (long long)n);
    cudaGetLastError();
    return;
  }
  if (bias)
    cudaMalloc(&bv, sizeof(T) * n);
  fillKernel<T><<<1024, 256>>>(a, m * k, 1, 1.0f);
  fillKernel<T><<<1024, 256>>>(b, k * n, 2, 1.0f);
  if (bias)
    fillKernel<T><<<64, 256>>>(bv, n, 3, 1.0f);
  for (int i = 0; i < 3; ++i)
    braid_k_linear(nullptr, dt, a, b, bv, c, m, k, n, 0);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  BRAID_CUDA_CHECK(cudaDeviceSynchronize());
  const double flops = 2.0 * m * n * k;
  int iters = static_cast<int>(std::fmax(3.0, std::fmin(50.0, 2e13 / flops)));
  cudaEventRecord(e0);
  for (int i = 0; i < iters; ++i)
    braid_k_linear(nullptr, dt, a, b, bv, c, m, k, n, 0);
  cudaEventRecord(e1);
  BRAID_CUDA_CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  double sec = ms / 1e3 / iters;
  std::printf("  gemm %-4s m=%-6lld k=%-6lld n=%-6lld%s %9.3f ms  %7.1f TFLOP/s\n", name,
              (long long)m, (long long)k, (long long)n, bias ? " +bias" : "      ", sec * 1e3,
              flops / sec / 1e12);
  cudaFree(a), cudaFree(b), cudaFree(c);
  if (bv)
    cudaFree(bv);
  cudaEventDestroy(e0), cudaEventDestroy(e1);
}

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  cudaDeviceProp prop{};
  BRAID_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (sm_%d%d, %d SMs, %.0f GiB)\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
  bool ok = selfTest<float>(BRAID_F32, "f32", 1e-5);
  ok &= selfTest<__nv_bfloat16>(BRAID_BF16, "bf16", 1e-2);
  std::printf("selftest: %s\n", ok ? "PASS" : "FAIL");
  // The self-test alone: what the CPU emulation (runtime/cudasim) runs.
  if (argc > 1 && std::strcmp(argv[1], "--selftest-only") == 0)
    return ok ? 0 : 1;
  bench<__nv_bfloat16>(BRAID_BF16, "bf16", 4096, 4096, 4096, false);
  bench<__nv_bfloat16>(BRAID_BF16, "bf16", 8192, 8192, 8192, false);
  bench<__nv_bfloat16>(BRAID_BF16, "bf16", 4096, 4096, 14336, true);
  bench<float>(BRAID_F32, "f32", 4096, 4096, 4096, false);
  if (!quick)
    bench<float>(BRAID_F32, "f32", 8192, 8192, 8192, false);
  return ok ? 0 : 1;
}
