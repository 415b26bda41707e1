// A hand-written stand-in for one stage of a pipelined Braid program
// (test/Runtime/pipeline-runtime.py): built with -DSTAGE=0 or -DSTAGE=1, the
// two programs run together on the grid pp=2,dp=2 (mpirun -np 2 stage0 : -np 2
// stage1), stage S on the ranks whose pp coordinate is S.
//
//   stage  tensor  global  split          local   init         step
//   0      s0.w    [6, 5]  dim 0 over dp  [3, 5]  normal(0.5)  w *= 2
//   0      tied    [4, 3]  -              [4, 3]  normal(0.5)  tied += 1
//   1      s1.w    [5, 7]  dim 1 over dp  [5, 4]  normal(1.0)  w *= -0.5 (padding stays 0)
//   1      s1.r    [3]     -              [3]     ones         r += 1
//   1      tied    [4, 3]  mirror         [4, 3]  normal(2.0)  tied *= -3
//
// Stage 1's `tied` is the mirror of stage 0's: stage 1 must dump it neither
// after init nor as updated.tied. It starts and evolves differently, so a
// file written by stage 1 differs from stage 0's.
//
// Each step (bracketed as op "pipeline", label "F<step>", around the ops it
// runs, for the trace) sends a 4 MiB message (beyond MPI's eager limit) and
// then a small one to the other stage's rank of the same dp coordinate, on
// the "pp" communicator, then overwrites the sent buffer and receives the
// peer's two messages: both stages send first, which deadlocks unless a send
// returns without waiting for its receive. The received data is checked
// (mismatches go to stderr as "rank R: FAIL ..."). The step announces a
// sharded value (x0 = 3 w on stage 0, x1 = w + 1 on stage 1) and writes the
// loss: the failures summed over the world, plus 100 on stage 1 (so that a
// loss.npy written by stage 1 shows).
#include "braid/runtime.h"

#include <stdio.h>
#include <string.h>

#ifndef STAGE
#error "build with -DSTAGE=0 or -DSTAGE=1"
#endif

namespace {

constexpr int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }
constexpr int64_t kBig = int64_t(1) << 20; // f32 elements: 4 MiB
constexpr int64_t kSmall = 16;

const int64_t kTiedShape[] = {4, 3};
const char *const kGroups[] = {"dp", "pp", "world"};

#if STAGE == 0
const int64_t kWShape[] = {3, 5};
const int64_t kWGlobal[] = {6, 5};
const char *const kWSplit[] = {"dp", ""};
#else
const int64_t kWShape[] = {5, 4};
const int64_t kWGlobal[] = {5, 7};
const char *const kWSplit[] = {"", "dp"};
const int64_t kRShape[] = {3};
#endif
constexpr int64_t kWElems = STAGE == 0 ? 3 * 5 : 5 * 4;

constexpr int64_t kW = 0;
constexpr int64_t kTied = align64(kW + kWElems * 4);
constexpr int64_t kR = align64(kTied + 12 * 4); // stage 1 only
constexpr int64_t kLoss = STAGE == 0 ? kR : align64(kR + 3 * 4);
constexpr int64_t kX = align64(kLoss + 4);
constexpr int64_t kSend = align64(kX + kWElems * 4);
constexpr int64_t kRecv = kSend + kBig * 4;
constexpr int64_t kSmallSend = kRecv + kBig * 4;
constexpr int64_t kSmallRecv = kSmallSend + kSmall * 4;
constexpr int64_t kArena = kSmallRecv + kSmall * 4;

const braid_tensor_desc kParams[] = {
#if STAGE == 0
    {"s0.w", BRAID_F32, 2, kWShape, BRAID_INIT_NORMAL, 0.5, 0, kW, kWGlobal, kWSplit, 0},
    {"tied", BRAID_F32, 2, kTiedShape, BRAID_INIT_NORMAL, 0.5, 0, kTied, nullptr, nullptr, 0},
#else
    {"s1.w", BRAID_F32, 2, kWShape, BRAID_INIT_NORMAL, 1.0, 0, kW, kWGlobal, kWSplit, 0},
    {"tied", BRAID_F32, 2, kTiedShape, BRAID_INIT_NORMAL, 2.0, 0, kTied, nullptr, nullptr, 1},
    {"s1.r", BRAID_F32, 1, kRShape, BRAID_INIT_ONES, 0.0, 0, kR, nullptr, nullptr, 0},
#endif
};

// Element i of the big message that world rank `from` sends in step `step`
// (exact in f32).
float big(int from, int64_t step, int64_t i) { return float((from * 7 + step * 3 + i) % 1000); }
float small(int from, int64_t step, int64_t i) { return float(-(from * 100 + step * 10 + i)); }

void step(braid_rt *rt, char *arena) {
  static int64_t k = 0;
  ++k;
  braid_comm *world = braid_rt_comm(rt, "world"), *pp = braid_rt_comm(rt, "pp");
  const int rank = braid_comm_rank(world);
  const int peer = 1 - braid_comm_rank(pp);
  const int peerRank = (1 - STAGE) * 2 + braid_comm_rank(braid_rt_comm(rt, "dp"));
  float *w = reinterpret_cast<float *>(arena + kW);
  float *tied = reinterpret_cast<float *>(arena + kTied);
  float *x = reinterpret_cast<float *>(arena + kX);
  float *loss = reinterpret_cast<float *>(arena + kLoss);
  long failures = 0;

  char label[32];
  snprintf(label, sizeof label, "F%lld", (long long)k);
  braid_rt_op_begin(rt, "pipeline", label);

  braid_rt_op_begin(rt, "exchange", "act");
  braid_rt_alloc(rt, kSend, kBig * 4, "send");
  braid_rt_alloc(rt, kRecv, kBig * 4, "recv");
  braid_rt_alloc(rt, kSmallSend, kSmall * 4, "small_send");
  braid_rt_alloc(rt, kSmallRecv, kSmall * 4, "small_recv");
  float *send = reinterpret_cast<float *>(arena + kSend);
  float *recv = reinterpret_cast<float *>(arena + kRecv);
  float *smallSend = reinterpret_cast<float *>(arena + kSmallSend);
  float *smallRecv = reinterpret_cast<float *>(arena + kSmallRecv);
  for (int64_t i = 0; i < kBig; ++i)
    send[i] = big(rank, k, i);
  for (int64_t i = 0; i < kSmall; ++i)
    smallSend[i] = small(rank, k, i);
  // Both stages send before they receive; the sent buffers are reused at once.
  braid_event_wait(rt, braid_send(rt, pp, send, kBig, BRAID_F32, peer));
  braid_event_wait(rt, braid_send(rt, pp, smallSend, kSmall, BRAID_F32, peer));
  memset(send, 0xff, size_t(kBig * 4));
  memset(smallSend, 0xff, size_t(kSmall * 4));
  braid_event_wait(rt, braid_recv(rt, pp, recv, kBig, BRAID_F32, peer));
  braid_event_wait(rt, braid_recv(rt, pp, smallRecv, kSmall, BRAID_F32, peer));
  for (int64_t i = 0; i < kBig; ++i)
    if (recv[i] != big(peerRank, k, i)) {
      if (++failures <= 3)
        fprintf(stderr, "rank %d: FAIL big message from rank %d, step %lld: [%lld] = %g, want %g\n",
                rank, peerRank, (long long)k, (long long)i, double(recv[i]),
                double(big(peerRank, k, i)));
    }
  for (int64_t i = 0; i < kSmall; ++i)
    if (smallRecv[i] != small(peerRank, k, i) && ++failures)
      fprintf(stderr, "rank %d: FAIL small message from rank %d, step %lld: [%lld] = %g\n", rank,
              peerRank, (long long)k, (long long)i, double(smallRecv[i]));
  braid_rt_free(rt, kSmallRecv, kSmall * 4);
  braid_rt_free(rt, kSmallSend, kSmall * 4);
  braid_rt_free(rt, kRecv, kBig * 4);
  braid_rt_free(rt, kSend, kBig * 4);
  braid_rt_op_end(rt);

  braid_rt_op_begin(rt, "update", "w");
  braid_rt_alloc(rt, kX, kWElems * 4, "x");
  for (int64_t i = 0; i < kWElems; ++i) {
#if STAGE == 0
    w[i] *= 2.0f;
    x[i] = 3.0f * w[i];
#else
    w[i] *= -0.5f;
    x[i] = w[i] + 1.0f;
#endif
  }
  for (int64_t i = 0; i < 12; ++i)
    tied[i] = STAGE == 0 ? tied[i] + 1.0f : tied[i] * -3.0f;
#if STAGE == 1
  float *r = reinterpret_cast<float *>(arena + kR);
  for (int64_t i = 0; i < 3; ++i)
    r[i] += 1.0f;
#endif
  braid_rt_op_end(rt);
  braid_rt_value_sharded(rt, "", STAGE == 0 ? "x0" : "x1", x, BRAID_F32, 2, kWShape, kWGlobal,
                         kWSplit);
  braid_rt_free(rt, kX, kWElems * 4);

  float total = float(failures);
  braid_event_wait(rt, braid_all_reduce(rt, world, &total, &total, 1, BRAID_F32, BRAID_RED_SUM));
  *loss = total + 100.0f * STAGE;
  braid_rt_op_end(rt); // pipeline
}

const braid_program kProgram = {
    STAGE == 0 ? "pipe-stage0" : "pipe-stage1",
    kArena,
    sizeof kParams / sizeof kParams[0],
    kParams,
    0,
    nullptr,
    kLoss,
    step,
    "pp=2,dp=2",
    3,
    kGroups,
    "pp",
    STAGE,
};

} // namespace

extern "C" const braid_program *braid_program_get(void) { return &kProgram; }
