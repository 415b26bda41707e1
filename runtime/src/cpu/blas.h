//===- blas.h - the CPU kernels' use of a BLAS library ----------*- C++ -*-===//
//
// Internal to runtime/src/cpu. GEMMs (f32 ones directly, bf16 and f16 ones on
// f32 copies: matmul.cpp) go to the BLAS library the runtime was built with (OpenBLAS, chosen on measurement: see bench/cpu/README.md)
// unless BRAID_CPU_ACCUMULATE=f64 asks for the f64-accumulating reference
// kernel. The library's threads are set once, before the first call, to
// BRAID_CPU_THREADS or else to this machine's cores shared by the ranks on it.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_BLAS_H
#define BRAID_RUNTIME_CPU_BLAS_H

#include <cstdint>

namespace braid::cpu {

/// How f32 GEMMs accumulate: BRAID_CPU_ACCUMULATE=f32 (the default when the
/// runtime has BLAS: the library's sgemm) or f64 (the reference kernel: exact
/// products, a sum that hardly depends on how k is split).
enum class Accumulate { F32, F64 };
Accumulate accumulate();

/// Threads of one rank: BRAID_CPU_THREADS, else max(1, cores / ranks on this
/// machine) with the local rank count from the MPI launcher's environment.
int threadsPerRank();

/// Whether GEMMs go to BLAS (the runtime has it and accumulate() is F32).
bool useBlas();

/// Row-major C[m, n] = op(A) op(B) + beta C with op(A) = A[m, k] (lda) or
/// A[k, m]^T, op(B) = B[k, n] (ldb) or B[n, k]^T. Only when useBlas().
void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const float *a,
           int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/// While alive (and `on`), sgemm runs on its calling thread only: for a
/// kernel that calls sgemm from several threads of its own at once (a
/// threaded call would wait on the library's lock or oversubscribe the
/// cores). The setting is the library's, process-wide: safe because a rank
/// runs its kernels one at a time and its communication thread calls no BLAS.
class SerialBlas {
public:
  explicit SerialBlas(bool on);
  ~SerialBlas();
  SerialBlas(const SerialBlas &) = delete;
  SerialBlas &operator=(const SerialBlas &) = delete;

private:
  bool on;
};

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_BLAS_H
