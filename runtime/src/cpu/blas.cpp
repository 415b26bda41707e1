//===- blas.cpp - the CPU kernels' use of a BLAS library ------------------===//
//
// BRAID_HAVE_BLAS: the runtime was built against a CBLAS (OpenBLAS). Without
// it every GEMM runs the reference kernel and BRAID_CPU_ACCUMULATE=f32 is
// refused rather than silently meaning f64.
//
//===----------------------------------------------------------------------===//

#include "blas.h"

#include "common.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>

#ifdef BRAID_HAVE_BLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
extern "C" int blas_thread_shutdown_(void);
#endif

namespace braid::cpu {

Accumulate accumulate() {
  static const Accumulate mode = [] {
    const char *text = std::getenv("BRAID_CPU_ACCUMULATE");
    if (!text || !*text)
#ifdef BRAID_HAVE_BLAS
      return Accumulate::F32;
#else
      return Accumulate::F64;
#endif
    if (!std::strcmp(text, "f64"))
      return Accumulate::F64;
    if (!std::strcmp(text, "f32")) {
#ifndef BRAID_HAVE_BLAS
      fail("gemm", "BRAID_CPU_ACCUMULATE=f32 needs a runtime built with BLAS "
                   "(install libopenblas-dev and reconfigure)");
#endif
      return Accumulate::F32;
    }
    fail("gemm", "BRAID_CPU_ACCUMULATE must be f32 or f64, found '%s'", text);
  }();
  return mode;
}

namespace {
/// A positive integer from the environment variable `name`, or 0 if unset.
int positiveEnv(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return 0;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end || value < 1 || value > 4096)
    fail("gemm", "%s must be a positive integer, found '%s'", name, text);
  return int(value);
}
} // namespace

int threadsPerRank() {
  static const int threads = [] {
    if (int n = positiveEnv("BRAID_CPU_THREADS"))
      return n;
    // Ranks started together on one machine share its cores; Braid's own
    // launch (BRAID_LOCAL_WORLD_SIZE, braid-run --launcher none), Open MPI,
    // MPICH/Hydra and Slurm each say how many there are.
    int local = 0;
    for (const char *name : {"BRAID_LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                             "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
      if (const char *text = std::getenv(name); text && *text) {
        local = std::atoi(text);
        break;
      }
    const int cores = int(std::thread::hardware_concurrency());
    return std::max(1, cores / std::max(1, local));
  }();
  return threads;
}

bool useBlas() {
#ifdef BRAID_HAVE_BLAS
  return accumulate() == Accumulate::F32;
#else
  return false;
#endif
}

#ifdef BRAID_HAVE_BLAS
namespace {
/// The library's threads, set once before its first use.
void initBlasThreads() {
  static std::once_flag threadsSet;
  std::call_once(threadsSet, [] { openblas_set_num_threads(threadsPerRank()); });
}
} // namespace
#endif

SerialBlas::SerialBlas(bool on) : on(on) {
#ifdef BRAID_HAVE_BLAS
  if (on) {
    initBlasThreads();
    openblas_set_num_threads(1);
    // OpenBLAS (0.3.21, pthreads) keeps its idle workers spinning for ~2^28
    // cycles after each threaded call, on the cores this kernel's threads
    // are about to use. Stopped, they are started again by the next
    // threaded call (tens of microseconds); results do not change.
    blas_thread_shutdown_();
  }
#endif
}

SerialBlas::~SerialBlas() {
#ifdef BRAID_HAVE_BLAS
  if (on)
    openblas_set_num_threads(threadsPerRank());
#endif
}

void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const float *a,
           int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
#ifdef BRAID_HAVE_BLAS
  initBlasThreads();
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0f, a, int(lda), b,
              int(ldb), beta, c, int(ldc));
#else
  (void)transA, (void)transB, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb,
      (void)beta, (void)c, (void)ldc;
  fail("gemm", "this runtime was built without BLAS");
#endif
}

} // namespace braid::cpu
