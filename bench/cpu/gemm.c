/* cblas_sgemm throughput on the shapes of GPT-2 small's GEMMs (row-major;
 * NN, NT, TN as linear and its gradients use them), to choose the BLAS
 * library the CPU kernels link (bench/cpu/README.md):
 *   cc -O2 bench/cpu/gemm.c -o gemm-openblas \
 *     -I/usr/include/x86_64-linux-gnu/openblas-pthread \
 *     /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so
 *   cc -O2 bench/cpu/gemm.c -o gemm-blis \
 *     -I/usr/include/x86_64-linux-gnu/blis-openmp \
 *     /usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4 -lpthread -lm
 *   OPENBLAS_NUM_THREADS=1 ./gemm-openblas; BLIS_NUM_THREADS=1 ./gemm-blis */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(void) {
  const int shapes[][3] = {{1024, 768, 2304}, {1024, 3072, 768}, {1024, 768, 3072},
                           {768, 1024, 3072}};
  for (int s = 0; s < 4; s++) {
    const int m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
    float *a = malloc(4L * m * k), *b = malloc(4L * k * n), *c = malloc(4L * m * n);
    for (long i = 0; i < (long)m * k; i++)
      a[i] = (i % 7) * 0.1f;
    for (long i = 0; i < (long)k * n; i++)
      b[i] = (i % 5) * 0.1f;
    for (int t = 0; t < 3; t++) { /* NN, NT, TN */
      enum CBLAS_TRANSPOSE ta = t == 2 ? CblasTrans : CblasNoTrans,
                           tb = t == 1 ? CblasTrans : CblasNoTrans;
      const int lda = t == 2 ? m : k, ldb = t == 1 ? k : n;
      cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n); /* warm-up */
      double t0 = now();
      int runs = 0;
      while (now() - t0 < 0.5) {
        cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n);
        runs++;
      }
      const double dt = (now() - t0) / runs;
      printf("%dx%dx%d %s %.1f GFLOP/s\n", m, k, n, t == 0 ? "NN" : t == 1 ? "NT" : "TN",
             2.0 * m * n * k / dt / 1e9);
    }
    free(a);
    free(b);
    free(c);
  }
  return 0;
}
