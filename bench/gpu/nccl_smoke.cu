//===- nccl_smoke.cu - one-rank check of the NCCL communicators ------------===//
//
// Initializes a 1-rank world through the file store (BRAID_NCCL_STORE: a
// fresh temporary directory unless set) on the grid dp=1,tp=1 (so "tp" and
// "dp" are made with ncclCommSplit), then runs every collective through the
// C ABI on device buffers of the arena, with the producer on the compute
// stream, the collective on the comm stream and braid_event_wait in between:
// all_reduce (f32 sum/max/min, bf16, f16, i32, i64; in place and with an
// overlapping output, which is staged), all_gather (out of place and in
// place), reduce_scatter (out of place and in place), broadcast and
// all_to_all. With one rank every result equals the input; the check is that
// every path runs, is ordered and copies the right bytes. Prints PASS.
//
// Build (bench/gpu/check.sh does it against the standalone runtime build RT):
//   nvcc -std=c++17 -ccbin g++-12 -gencode arch=compute_90,code=sm_90 \
//     -I runtime/include -I runtime/src -DBRAID_RUNTIME_CUDA bench/gpu/nccl_smoke.cu \
//     RT/lib/libbraid_comm_nccl.a RT/lib/libbraid_kernels_cuda.a RT/lib/libbraid_runtime.a \
//     -lcublasLt -L/usr/local/cuda/lib -lnccl -Xlinker -rpath,/usr/local/cuda/lib
//
//===----------------------------------------------------------------------===//

#include "braid/numeric.h"
#include "braid/runtime.h"
#include "comm.h"
#include "cuda/comm_nccl.h"
#include "rt_impl.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace braid::rt;

namespace {

int failures = 0;

void expect(bool ok, const char *what) {
  std::printf("  %-48s %s\n", what, ok ? "ok" : "FAIL");
  if (!ok)
    ++failures;
}

cudaStream_t computeOf(braid_rt *rt) {
  return static_cast<cudaStream_t>(rt->backend->computeStream());
}

/// Uploads the input (synchronously). The ordering check is the
/// cudaMemsetAsync of the output on the compute stream right before each
/// collective: the comm stream must wait for it (ready event), or the memset
/// could land after the collective's result.
void produce(braid_rt *rt, void *dst, const void *src, size_t bytes) {
  rt->backend->copyToDevice(dst, src, int64_t(bytes));
}

template <typename T> std::vector<T> fetch(braid_rt *rt, const void *src, size_t n) {
  std::vector<T> out(n);
  rt->backend->copyToHost(out.data(), src, int64_t(n * sizeof(T))); // on the compute stream
  return out;
}

} // namespace

int main() {
  if (!std::getenv("BRAID_NCCL_STORE")) {
    char dir[] = "/tmp/braid-nccl-store.XXXXXX";
    if (!mkdtemp(dir)) {
      std::perror("mkdtemp");
      return 1;
    }
    setenv("BRAID_NCCL_STORE", dir, 1);
  }
  setenv("BRAID_WORLD_SIZE", "1", 0);
  setenv("BRAID_RANK", "0", 0);

  int32_t size = 0, rank = 0, local = 0;
  std::string store;
  nccl::storeRanks(&size, &rank, &local, &store);
  nccl::selectDevice(local);
  Grid grid;
  std::string error;
  if (!parseGrid("dp=1,tp=1", &grid, &error)) {
    std::fprintf(stderr, "grid: %s\n", error.c_str());
    return 1;
  }
  nccl::Bootstrap boot;
  boot.size = size;
  boot.rank = rank;
  boot.storeDir = store;
  std::printf("nccl_smoke: world %d, rank %d, device %d, store %s\n", size, rank, local,
              store.c_str());

  const int64_t arenaBytes = 64 << 20;
  std::unique_ptr<braid_rt> rt =
      createRuntime(makeCudaBackend(), arenaBytes, Options{}, nccl::makeCommProvider(grid, boot));
  char *arena = rt->arena;

  braid_comm *world = braid_rt_comm(rt.get(), "world");
  braid_comm *tp = braid_rt_comm(rt.get(), "tp");
  braid_comm *dp = braid_rt_comm(rt.get(), "dp");
  expect(world->impl && std::strcmp(world->impl->kind(), "nccl") == 0, "world is an nccl comm");
  expect(braid_comm_size(world) == 1 && braid_comm_rank(world) == 0, "world size 1, rank 0");
  expect(braid_comm_size(tp) == 1 && braid_comm_size(dp) == 1, "tp / dp (ncclCommSplit) size 1");

  const size_t n = 1 << 20;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = float(int(i % 1000) - 500) * 0.25f;
  float *a = reinterpret_cast<float *>(arena);
  float *b = reinterpret_cast<float *>(arena + (8 << 20));

  // all_reduce f32 out of place, for each op.
  for (braid_redop op : {BRAID_RED_SUM, BRAID_RED_MAX, BRAID_RED_MIN}) {
    produce(rt.get(), a, x.data(), n * 4);
    cudaMemsetAsync(b, 0, n * 4, computeOf(rt.get()));
    braid_event_wait(rt.get(), braid_all_reduce(rt.get(), world, a, b, int64_t(n), BRAID_F32, op));
    expect(fetch<float>(rt.get(), b, n) == x, op == BRAID_RED_SUM   ? "all_reduce f32 sum"
                                               : op == BRAID_RED_MAX ? "all_reduce f32 max"
                                                                     : "all_reduce f32 min");
  }
  // in place, on a split communicator
  produce(rt.get(), a, x.data(), n * 4);
  braid_event_wait(rt.get(), braid_all_reduce(rt.get(), tp, a, a, int64_t(n), BRAID_F32,
                                              BRAID_RED_SUM));
  expect(fetch<float>(rt.get(), a, n) == x, "all_reduce f32 in place on 'tp'");
  // overlapping output (staged through a stream-ordered copy)
  produce(rt.get(), a, x.data(), n * 4);
  braid_event_wait(rt.get(), braid_all_reduce(rt.get(), world, a, a + 1, int64_t(n - 1),
                                              BRAID_F32, BRAID_RED_SUM));
  {
    std::vector<float> got = fetch<float>(rt.get(), a, n), want(x);
    std::memmove(want.data() + 1, x.data(), (n - 1) * 4);
    expect(got == want, "all_reduce f32 overlapping (staged)");
  }
  // 16-bit floats and integers
  for (braid_dtype dt : {BRAID_BF16, BRAID_F16}) {
    std::vector<uint16_t> h(n);
    for (size_t i = 0; i < n; ++i)
      h[i] = dt == BRAID_BF16 ? braid::float_to_bf16(x[i]) : braid::float_to_f16(x[i]);
    produce(rt.get(), a, h.data(), n * 2);
    braid_event_wait(rt.get(), braid_all_reduce(rt.get(), world, a, b, int64_t(n), dt,
                                                BRAID_RED_SUM));
    expect(fetch<uint16_t>(rt.get(), b, n) == h,
           dt == BRAID_BF16 ? "all_reduce bf16 sum" : "all_reduce f16 sum");
  }
  {
    std::vector<int32_t> h(n);
    for (size_t i = 0; i < n; ++i)
      h[i] = int32_t(i) - 7;
    produce(rt.get(), a, h.data(), n * 4);
    braid_event_wait(rt.get(), braid_all_reduce(rt.get(), world, a, b, int64_t(n), BRAID_I32,
                                                BRAID_RED_MAX));
    expect(fetch<int32_t>(rt.get(), b, n) == h, "all_reduce i32 max");
    std::vector<int64_t> l(n / 2);
    for (size_t i = 0; i < n / 2; ++i)
      l[i] = (int64_t(1) << 40) + int64_t(i);
    produce(rt.get(), a, l.data(), n * 4);
    braid_event_wait(rt.get(), braid_all_reduce(rt.get(), world, a, b, int64_t(n / 2), BRAID_I64,
                                                BRAID_RED_MIN));
    expect(fetch<int64_t>(rt.get(), b, n / 2) == l, "all_reduce i64 min");
  }

  // all_gather, out of place and in place (this rank's block already in recv)
  produce(rt.get(), a, x.data(), n * 4);
  cudaMemsetAsync(b, 0, n * 4, computeOf(rt.get()));
  braid_event_wait(rt.get(), braid_all_gather(rt.get(), world, a, b, int64_t(n), BRAID_F32));
  expect(fetch<float>(rt.get(), b, n) == x, "all_gather f32");
  braid_event_wait(rt.get(), braid_all_gather(rt.get(), dp, b, b, int64_t(n), BRAID_F32));
  expect(fetch<float>(rt.get(), b, n) == x, "all_gather f32 in place on 'dp'");

  // reduce_scatter, out of place and in place
  produce(rt.get(), a, x.data(), n * 4);
  cudaMemsetAsync(b, 0, n * 4, computeOf(rt.get()));
  braid_event_wait(rt.get(), braid_reduce_scatter(rt.get(), world, a, b, int64_t(n), BRAID_F32,
                                                  BRAID_RED_SUM));
  expect(fetch<float>(rt.get(), b, n) == x, "reduce_scatter f32");
  braid_event_wait(rt.get(), braid_reduce_scatter(rt.get(), world, a, a, int64_t(n), BRAID_F32,
                                                  BRAID_RED_SUM));
  expect(fetch<float>(rt.get(), a, n) == x, "reduce_scatter f32 in place");

  // broadcast from root 0
  produce(rt.get(), a, x.data(), n * 4);
  braid_event_wait(rt.get(), braid_broadcast(rt.get(), world, a, int64_t(n), BRAID_F32, 0));
  expect(fetch<float>(rt.get(), a, n) == x, "broadcast f32");

  // all_to_all (grouped ncclSend/ncclRecv, here to oneself)
  produce(rt.get(), a, x.data(), n * 4);
  cudaMemsetAsync(b, 0, n * 4, computeOf(rt.get()));
  braid_event_wait(rt.get(), braid_all_to_all(rt.get(), world, a, b, int64_t(n), BRAID_F32));
  expect(fetch<float>(rt.get(), b, n) == x, "all_to_all f32");

  // Many collectives in flight before any wait (event pool, stream order).
  produce(rt.get(), a, x.data(), n * 4);
  std::vector<braid_event *> events;
  for (int i = 0; i < 16; ++i)
    events.push_back(braid_all_reduce(rt.get(), world, a, a, int64_t(n), BRAID_F32,
                                      BRAID_RED_SUM));
  for (braid_event *e : events)
    braid_event_wait(rt.get(), e);
  expect(fetch<float>(rt.get(), a, n) == x, "16 all_reduce in flight");

  rt->backend->synchronize();
  destroyRuntime(std::move(rt));
  std::printf(failures ? "FAIL (%d checks)\n" : "PASS\n", failures);
  return failures ? 1 : 0;
}
