/* Copy bandwidth of the machine with T threads, as STREAM's Copy counts it:
 * (bytes read + bytes written) / time, the best of R repetitions; and its
 * read bandwidth: bytes summed / time, the best of R.
 *
 *   cc -O3 -march=native -pthread -o copy_bw copy_bw.c && ./copy_bw MIB THREADS REPS
 *
 * prints "copy_bw GB/s: X" and "read_bw GB/s: Y". A decode step only reads
 * its weights, and a core can have only so many reads in flight: on the
 * 2-core Xeon of bench/inference/README.md a sum reads at about 0.6 of the
 * copy count, so read_bw is the tighter bound of the two. Each thread copies its own contiguous
 * slice of a MIB MiB source into a MIB MiB destination with memcpy (glibc
 * uses non-temporal stores at these sizes, so no write-allocate reads are
 * counted that did not happen); both arrays are touched first so page
 * faults stay out of the timing. bench/inference/run.py builds and runs it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct slice {
  char *dst;
  const char *src;
  size_t bytes;
};

static void *copy_slice(void *arg) {
  struct slice *s = (struct slice *)arg;
  memcpy(s->dst, s->src, s->bytes);
  return NULL;
}

struct sum_slice {
  const float *src;
  size_t count;
  float sum;
};

/* Sums with eight independent vector accumulators (GCC/Clang vector
 * extensions: no dependency chain holds the loads back), so that the loop is
 * bound by memory, not by the latency of its additions. */
typedef float vec8 __attribute__((vector_size(32), aligned(4)));

static void *sum_slice(void *arg) {
  struct sum_slice *s = (struct sum_slice *)arg;
  vec8 acc[8] = {{0}};
  size_t i = 0;
  for (; i + 64 <= s->count; i += 64)
    for (int l = 0; l < 8; ++l)
      acc[l] += *(const vec8 *)(s->src + i + 8 * l);
  float total = 0;
  for (; i < s->count; ++i)
    total += s->src[i];
  for (int l = 0; l < 8; ++l)
    for (int e = 0; e < 8; ++e)
      total += acc[l][e];
  s->sum = total;
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MIB THREADS REPS\n", argv[0]);
    return 2;
  }
  size_t bytes = (size_t)atol(argv[1]) << 20;
  int threads = atoi(argv[2]), reps = atoi(argv[3]);
  if (bytes == 0 || threads < 1 || reps < 1) {
    fprintf(stderr, "%s: MIB, THREADS and REPS must be positive\n", argv[0]);
    return 2;
  }
  char *src = malloc(bytes), *dst = malloc(bytes);
  if (!src || !dst) {
    fprintf(stderr, "%s: cannot allocate 2 x %zu bytes\n", argv[0], bytes);
    return 1;
  }
  memset(src, 1, bytes);
  memset(dst, 2, bytes);
  pthread_t *ids = calloc((size_t)threads, sizeof(pthread_t));
  struct slice *slices = calloc((size_t)threads, sizeof(struct slice));
  size_t per = bytes / (size_t)threads;
  for (int t = 0; t < threads; ++t) {
    size_t begin = per * (size_t)t;
    slices[t].dst = dst + begin;
    slices[t].src = src + begin;
    slices[t].bytes = t + 1 == threads ? bytes - begin : per;
  }
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    double start = now();
    for (int t = 0; t < threads; ++t)
      pthread_create(&ids[t], NULL, copy_slice, &slices[t]);
    for (int t = 0; t < threads; ++t)
      pthread_join(ids[t], NULL);
    double rate = 2.0 * (double)bytes / (now() - start) / 1e9;
    if (rate > best)
      best = rate;
  }
  printf("copy_bw GB/s: %.2f\n", best);
  struct sum_slice *sums = calloc((size_t)threads, sizeof(struct sum_slice));
  size_t floats = bytes / sizeof(float), per_sum = floats / (size_t)threads;
  for (int t = 0; t < threads; ++t) {
    sums[t].src = (const float *)src + per_sum * (size_t)t;
    sums[t].count = t + 1 == threads ? floats - per_sum * (size_t)t : per_sum;
  }
  double best_read = 0, checksum = 0;
  for (int r = 0; r < reps; ++r) {
    double start = now();
    for (int t = 0; t < threads; ++t)
      pthread_create(&ids[t], NULL, sum_slice, &sums[t]);
    for (int t = 0; t < threads; ++t)
      pthread_join(ids[t], NULL);
    double rate = (double)bytes / (now() - start) / 1e9;
    if (rate > best_read)
      best_read = rate;
    for (int t = 0; t < threads; ++t)
      checksum += sums[t].sum;
  }
  printf("read_bw GB/s: %.2f (checksum %g)\n", best_read, checksum);
  free(sums);
  free(ids);
  free(slices);
  free(src);
  free(dst);
  return 0;
}
