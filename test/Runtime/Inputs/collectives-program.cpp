// A hand-written "generated program" that exercises every collective of
// runtime.h on the communicators world, dp, tp of the grid dp=2,tp=2 (4 ranks,
// test/Runtime/mpi-collectives.py) with f32, bf16 and i32 data derived from the
// global rank, and checks the results on every rank against values computed
// here. Mismatches go to stderr ("rank R: FAIL ..."); the loss is the number of
// failures summed over all ranks; rank 0 prints once
//   collectives: grid dp=2,tp=2, 4 ranks, C checks per rank, F failures
// It also announces a rank-dependent value ("rank_value" = [world rank]) for
// the dump tests and brackets one collective for the trace.
// Variant -DVARIANT_TRUNCATE: tp rank 0 sends 8 elements, tp rank 1 receives 4
// (an MPI error at the wait of rank 1's braid_recv, which aborts the job while
// tp rank 0 waits for a message that never comes).
// Arena: [0, 4) loss f32.
#include "braid/numeric.h"
#include "braid/runtime.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

namespace {

int gRank = 0;
long gChecks = 0, gFailures = 0;

// Element i of a tensor of `dt`, stored from / read as a float.
void put(braid_dtype dt, void *p, int64_t i, float v) {
  switch (dt) {
  case BRAID_F32: static_cast<float *>(p)[i] = v; break;
  case BRAID_BF16: static_cast<uint16_t *>(p)[i] = braid::float_to_bf16(v); break;
  case BRAID_F16: static_cast<uint16_t *>(p)[i] = braid::float_to_f16(v); break;
  case BRAID_I32: static_cast<int32_t *>(p)[i] = int32_t(v); break;
  case BRAID_I64: static_cast<int64_t *>(p)[i] = int64_t(v); break;
  }
}

double get(braid_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case BRAID_F32: return static_cast<const float *>(p)[i];
  case BRAID_BF16: return braid::bf16_to_float(static_cast<const uint16_t *>(p)[i]);
  case BRAID_F16: return braid::f16_to_float(static_cast<const uint16_t *>(p)[i]);
  case BRAID_I32: return static_cast<const int32_t *>(p)[i];
  case BRAID_I64: return double(static_cast<const int64_t *>(p)[i]);
  }
  return 0;
}

const char *dtName(braid_dtype dt) {
  switch (dt) {
  case BRAID_F32: return "f32";
  case BRAID_BF16: return "bf16";
  case BRAID_F16: return "f16";
  case BRAID_I32: return "i32";
  case BRAID_I64: return "i64";
  }
  return "?";
}

struct Buf {
  braid_dtype dt;
  std::vector<char> bytes;
  Buf(braid_dtype d, int64_t n) : dt(d), bytes(size_t(n * braid_dtype_size(d)), 0) {}
  void *data() { return bytes.data(); }
  char *at(int64_t i) { return bytes.data() + i * braid_dtype_size(dt); }
};

// Compares n elements of `got` with `want` (floats, stored in dt first so the
// comparison is of the stored bits).
void expectEq(const char *what, const char *comm, braid_dtype dt, const void *got,
              const std::vector<float> &want) {
  ++gChecks;
  Buf w(dt, int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    put(dt, w.data(), int64_t(i), want[i]);
  int64_t size = braid_dtype_size(dt);
  for (size_t i = 0; i < want.size(); ++i)
    if (memcmp(static_cast<const char *>(got) + i * size, w.at(int64_t(i)), size_t(size))) {
      ++gFailures;
      fprintf(stderr, "rank %d: FAIL %s on %s (%s): element %zu is %g, expected %g\n", gRank,
              what, comm, dtName(dt), i, get(dt, got, int64_t(i)), get(dt, w.data(), int64_t(i)));
      return;
    }
}

void expectInt(const char *what, long got, long want) {
  ++gChecks;
  if (got != want) {
    ++gFailures;
    fprintf(stderr, "rank %d: FAIL %s: %ld, expected %ld\n", gRank, what, got, want);
  }
}

// The value of element i on global rank g; small integers (some negative) so
// that sums are exact in every dtype and in any order.
float v(int g, int64_t i) { return float((g + 1) * 3 + i - 4); }
// Element i of block j sent by global rank g in all_to_all.
float w(int g, int j, int64_t i) { return float(g * 16 + j * 4 + i); }

struct Group {
  const char *name;
  braid_comm *comm;
  std::vector<int> members; // global ranks, in group-rank order
  int rank, size;
};

void wait(braid_rt *rt, braid_event *e) { braid_event_wait(rt, e); }

void exercise(braid_rt *rt, const Group &G, braid_dtype dt) {
  const int64_t n = 5;
  const int S = G.size, r = G.rank;
  const char *c = G.name;
  std::vector<float> want;

  // all_reduce sum, out of place.
  Buf send(dt, n), recv(dt, n);
  for (int64_t i = 0; i < n; ++i)
    put(dt, send.data(), i, v(gRank, i));
  wait(rt, braid_all_reduce(rt, G.comm, send.data(), recv.data(), n, dt, BRAID_RED_SUM));
  want.assign(n, 0);
  for (int m : G.members)
    for (int64_t i = 0; i < n; ++i)
      want[i] += v(m, i);
  expectEq("all_reduce sum", c, dt, recv.data(), want);
  // max / min, in place.
  for (braid_redop op : {BRAID_RED_MAX, BRAID_RED_MIN}) {
    Buf buf(dt, n);
    for (int64_t i = 0; i < n; ++i)
      put(dt, buf.data(), i, (gRank % 2 ? -1.0f : 1.0f) * v(gRank, i));
    wait(rt, braid_all_reduce(rt, G.comm, buf.data(), buf.data(), n, dt, op));
    for (int64_t i = 0; i < n; ++i) {
      float acc = 0;
      for (size_t k = 0; k < G.members.size(); ++k) {
        int m = G.members[k];
        float x = (m % 2 ? -1.0f : 1.0f) * v(m, i);
        acc = k == 0 ? x : op == BRAID_RED_MAX ? fmaxf(acc, x) : fminf(acc, x);
      }
      want[i] = acc;
    }
    expectEq(op == BRAID_RED_MAX ? "all_reduce max (in place)" : "all_reduce min (in place)", c,
             dt, buf.data(), want);
  }

  // all_gather: rank-major concatenation; then in place (own block at r * n).
  Buf gathered(dt, n * S);
  wait(rt, braid_all_gather(rt, G.comm, send.data(), gathered.data(), n, dt));
  want.assign(size_t(n * S), 0);
  for (int j = 0; j < S; ++j)
    for (int64_t i = 0; i < n; ++i)
      want[j * n + i] = v(G.members[j], i);
  expectEq("all_gather", c, dt, gathered.data(), want);
  Buf inplace(dt, n * S);
  for (int64_t i = 0; i < n * S; ++i)
    put(dt, inplace.data(), i, -99);
  for (int64_t i = 0; i < n; ++i)
    put(dt, inplace.at(r * n), i, v(gRank, i));
  wait(rt, braid_all_gather(rt, G.comm, inplace.at(r * n), inplace.data(), n, dt));
  expectEq("all_gather (in place)", c, dt, inplace.data(), want);

  // reduce_scatter: rank r gets block r of the reduction; sum out of place,
  // max in place.
  Buf full(dt, n * S), block(dt, n);
  for (int64_t i = 0; i < n * S; ++i)
    put(dt, full.data(), i, v(gRank, i));
  wait(rt, braid_reduce_scatter(rt, G.comm, full.data(), block.data(), n, dt, BRAID_RED_SUM));
  want.assign(n, 0);
  for (int m : G.members)
    for (int64_t i = 0; i < n; ++i)
      want[i] += v(m, r * n + i);
  expectEq("reduce_scatter sum", c, dt, block.data(), want);
  wait(rt, braid_reduce_scatter(rt, G.comm, full.data(), full.data(), n, dt, BRAID_RED_MAX));
  for (int64_t i = 0; i < n; ++i) {
    float acc = v(G.members[0], r * n + i);
    for (int m : G.members)
      acc = fmaxf(acc, v(m, r * n + i));
    want[i] = acc;
  }
  expectEq("reduce_scatter max (in place)", c, dt, full.data(), want);

  // all_to_all: block j of the send buffer goes to rank j.
  Buf a2aSend(dt, n * S), a2aRecv(dt, n * S);
  for (int j = 0; j < S; ++j)
    for (int64_t i = 0; i < n; ++i)
      put(dt, a2aSend.data(), j * n + i, w(gRank, j, i));
  wait(rt, braid_all_to_all(rt, G.comm, a2aSend.data(), a2aRecv.data(), n, dt));
  want.assign(size_t(n * S), 0);
  for (int j = 0; j < S; ++j)
    for (int64_t i = 0; i < n; ++i)
      want[j * n + i] = w(G.members[j], r, i);
  expectEq("all_to_all", c, dt, a2aRecv.data(), want);

  // broadcast from the last rank, and from rank 0.
  for (int root : {S - 1, 0}) {
    Buf buf(dt, n);
    for (int64_t i = 0; i < n; ++i)
      put(dt, buf.data(), i, v(gRank, i));
    wait(rt, braid_broadcast(rt, G.comm, buf.data(), n, dt, root));
    want.assign(n, 0);
    for (int64_t i = 0; i < n; ++i)
      want[i] = v(G.members[root], i);
    expectEq(root ? "broadcast (root last)" : "broadcast (root 0)", c, dt, buf.data(), want);
  }

  // send / recv around the ring: to r + 1, from r - 1.
  Buf got(dt, n);
  braid_event *rx = braid_recv(rt, G.comm, got.data(), n, dt, (r + S - 1) % S);
  braid_event *tx = braid_send(rt, G.comm, send.data(), n, dt, (r + 1) % S);
  wait(rt, tx);
  wait(rt, rx);
  for (int64_t i = 0; i < n; ++i)
    want[i] = v(G.members[(r + S - 1) % S], i);
  want.resize(n);
  expectEq("send/recv ring", c, dt, got.data(), want);

  // The same step as one send-receive pair (one NCCL group), and a halo:
  // each rank but the last sends to the next, each but the first receives
  // (-1: no peer), so the first rank's buffer keeps its fill.
  Buf pair(dt, n);
  wait(rt, braid_sendrecv(rt, G.comm, send.data(), n, (r + 1) % S, pair.data(), n,
                          (r + S - 1) % S, dt));
  expectEq("sendrecv ring", c, dt, pair.data(), want);
  Buf halo(dt, n);
  for (int64_t i = 0; i < n; ++i)
    put(dt, halo.data(), i, -1.0);
  wait(rt, braid_sendrecv(rt, G.comm, send.data(), n, r + 1 < S ? r + 1 : -1, halo.data(), n,
                          r > 0 ? r - 1 : -1, dt));
  if (r == 0)
    want.assign(n, -1.0f);
  expectEq("sendrecv halo", c, dt, halo.data(), want);
}

void step(braid_rt *rt, char *arena) {
  float *loss = reinterpret_cast<float *>(arena);
  braid_rt_alloc(rt, 0, 0, "nothing");
  braid_comm *world = braid_rt_comm(rt, "world");
  gRank = braid_comm_rank(world);
  const int dp = gRank / 2, tp = gRank % 2;

#ifdef VARIANT_TRUNCATE
  {
    braid_comm *tpc = braid_rt_comm(rt, "tp");
    int32_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8}, ready = 0;
    if (braid_comm_rank(tpc) == 0) {
      // Send once the receive is posted (Open MPI 4.1 can miss the truncation
      // of a message that arrived first), then stay in MPI until the job aborts.
      braid_event_wait(rt, braid_recv(rt, tpc, &ready, 1, BRAID_I32, 1));
      braid_event_wait(rt, braid_send(rt, tpc, data, 8, BRAID_I32, 1));
      braid_event_wait(rt, braid_recv(rt, tpc, &ready, 1, BRAID_I32, 1));
    } else {
      braid_event *rx = braid_recv(rt, tpc, data, 4, BRAID_I32, 0);
      braid_event_wait(rt, braid_send(rt, tpc, &ready, 1, BRAID_I32, 0));
      braid_event_wait(rt, rx);
    }
    *loss = 0;
    return;
  }
#endif

  Group groups[] = {
      {"world", world, {0, 1, 2, 3}, 0, 0},
      {"dp", braid_rt_comm(rt, "dp"), {tp, 2 + tp}, 0, 0},
      {"tp", braid_rt_comm(rt, "tp"), {2 * dp, 2 * dp + 1}, 0, 0},
  };
  expectInt("world size", braid_comm_size(world), 4);
  for (Group &G : groups) {
    G.rank = braid_comm_rank(G.comm);
    G.size = braid_comm_size(G.comm);
    expectInt((std::string(G.name) + " size").c_str(), G.size, long(G.members.size()));
    expectInt((std::string(G.name) + " rank").c_str(), G.rank,
              G.name[0] == 'w' ? gRank : G.name[0] == 'd' ? dp : tp);
  }
  // Cached per axes string; "tp,dp" is every rank in row-major order.
  expectInt("braid_rt_comm caches", braid_rt_comm(rt, "tp") == groups[2].comm, 1);
  braid_comm *both = braid_rt_comm(rt, "tp,dp");
  expectInt("tp,dp size", braid_comm_size(both), 4);
  expectInt("tp,dp rank", braid_comm_rank(both), gRank);

  for (const Group &G : groups)
    for (braid_dtype dt : {BRAID_F32, BRAID_BF16, BRAID_I32})
      exercise(rt, G, dt);

  // bf16 sums are reduced in f32 and rounded once: 256 + 0.75 + 0.75 + 0 =
  // 257.5 -> 258 (a bf16 running sum would give 256).
  {
    const float mine[] = {256.0f, 0.75f, 0.75f, 0.0f};
    uint16_t x = braid::float_to_bf16(mine[gRank]);
    braid_event_wait(rt, braid_all_reduce(rt, world, &x, &x, 1, BRAID_BF16, BRAID_RED_SUM));
    expectInt("bf16 sum rounded once (bits)", x, braid::float_to_bf16(258.0f));
    uint16_t h = braid::float_to_f16(0.5f * float(gRank + 1)), hs = 0;
    braid_event_wait(rt, braid_all_reduce(rt, world, &h, &hs, 1, BRAID_F16, BRAID_RED_SUM));
    expectInt("f16 sum (bits)", hs, braid::float_to_f16(5.0f));
    int64_t big = (int64_t(1) << 40) + gRank, bigSum = 0;
    braid_event_wait(rt, braid_all_reduce(rt, world, &big, &bigSum, 1, BRAID_I64, BRAID_RED_SUM));
    expectInt("i64 sum", long(bigSum), long((int64_t(1) << 42) + 6));
  }

  // Several collectives in flight at once on different communicators, waited
  // for in reverse order of issue.
  {
    float a = float(gRank), b[2] = {0, 0}, d = float(gRank + 1), m = float(gRank + 1);
    braid_rt_op_begin(rt, "all_reduce", "overlap");
    braid_event *e1 = braid_all_reduce(rt, groups[2].comm, &a, &a, 1, BRAID_F32, BRAID_RED_SUM);
    braid_event *e2 = braid_all_gather(rt, groups[1].comm, &d, b, 1, BRAID_F32);
    braid_event *e3 = braid_all_reduce(rt, world, &m, &m, 1, BRAID_F32, BRAID_RED_MAX);
    braid_event_wait(rt, e3);
    braid_event_wait(rt, e2);
    braid_event_wait(rt, e1);
    braid_rt_op_end(rt);
    expectInt("overlap tp sum", long(a), long(4 * dp + 1));
    expectInt("overlap dp gather", long(b[0] * 10 + b[1]), long((tp + 1) * 10 + (tp + 3)));
    expectInt("overlap world max", long(m), 4);
  }

  float rankValue = float(gRank);
  const int64_t one[] = {1};
  braid_rt_value(rt, "", "rank_value", &rankValue, BRAID_F32, 1, one);

  // The loss: failures summed over all ranks.
  int32_t counts[2] = {int32_t(gChecks), int32_t(gFailures)};
  braid_event_wait(rt, braid_all_reduce(rt, world, counts, counts, 2, BRAID_I32, BRAID_RED_SUM));
  *loss = float(counts[1]);
  static bool printed = false;
  if (gRank == 0 && !printed) {
    printf("collectives: grid dp=2,tp=2, %d ranks, %ld checks per rank, %d failures\n",
           braid_comm_size(world), gChecks, counts[1]);
    fflush(stdout);
    printed = true;
  }
  gChecks = gFailures = 0;
}

const braid_program kProgram = {"collectives", 4, 0, nullptr, 0, nullptr, 0, step};

} // namespace

extern "C" const braid_program *braid_program_get(void) { return &kProgram; }
