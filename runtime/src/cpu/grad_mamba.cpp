//===- grad_mamba.cpp - CPU backward kernels: conv1d, selective_scan ------===//
//
// The whole-sequence gradients are the one-chunk case of the chunk
// gradients (mamba.cpp): conv1d_halo_grad also gives the halo's cotangent
// (conv1d_halo_accumulate adds the next chunk's into the last K-1 rows of
// dx); selective_scan_chunk_grad starts the reverse recurrence from
// g = dh_end, takes h0 as the state before step 0, returns dh0 = the final g,
// adds the decay term
//   ddt_t += sum_n ddecay[n] decay[n] A[n],  dA[n] += ddecay[n] decay[n] sum_t dt_t,
// and with `accumulate` adds to its outputs. The formulas:
//
// conv1d_grad: dx[b,u,c] = sum_j w[c,j] dy[b, u+(K-1)-j, c] (f32);
// dw[c,j] = sum_{b,t} dy[b,t,c] x[b,t-(K-1)+j,c] and db[c] = sum dy in K + 1
// double accumulators per channel (K < kConvAcc).
//
// selective_scan_grad, per (b, d) channel: the forward recurrence is replayed
// with the forward's f32 formulas, storing the states h_t[n] (S x N floats),
// then time runs backwards with g = the cotangent reaching h_t from later
// steps:
//   dh_t = g + C_t dy_t;   dC_t += dy_t h_t;   a_t = exp(dt_t A)
//   ddt += sum_n dh_t (A a_t h_{t-1} + B_t x_t)
//   dA  += dh_t dt_t a_t h_{t-1};   dB_t += dh_t dt_t x_t
//   dx_t = D dy_t + dt_t sum_n dh_t B_t;   g = a_t dh_t
//   dD  += dy_t x_t;   ddelta = ddt (times sigmoid(delta) with softplus).
// dB, dC [B,S,N] sum over channels d (in f32, channel order) and dA [Di,N],
// dD [Di] over the batch (in double, batch order); each channel is replayed
// once (scanChunkGradImpl: channels in blocks over the rank's threads, sums
// in one order at any thread count). Limit: S * N <= kScanFloats (the
// states, decays and dB / dC terms of a channel are S x N floats each).
//
//===----------------------------------------------------------------------===//

#include "mamba_halo.h"
#include "parallel.h"
#include "scratch.h"
#include "vexp.h"

#include <algorithm>
#include <cmath>

using namespace braid::cpu;

namespace {

constexpr int64_t kConvAcc = 4096;     // double accumulators of dw (K per channel) + db
constexpr int64_t kScanFloats = 32768; // S x N states / dB / dC accumulators

template <typename T>
void conv1dHaloGradImpl(const T *x, const T *halo, const T *w, const T *dy, T *dx, T *dw,
                        T *db, T *dhalo, int64_t B, int64_t S, int64_t C, int64_t K) {
  // dxe[u] = sum_j w[j] dy[u - j] over 0 <= u - j < S; u < K-1 -> dhalo.
  const int64_t E = S + K - 1;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t u = 0; u < E; ++u)
      for (int64_t c = 0; c < C; ++c) {
        float acc = 0.0f;
        for (int64_t j = 0; j < K; ++j) {
          const int64_t t = u - j;
          if (t < 0 || t >= S)
            continue;
          acc += braid::load(w, c * K + j) * braid::load(dy, (b * S + t) * C + c);
        }
        if (u < K - 1) {
          if (dhalo)
            braid::store(dhalo, (b * (K - 1) + u) * C + c, acc);
        } else if (dx) {
          braid::store(dx, (b * S + u - (K - 1)) * C + c, acc);
        }
      }
  if (!dw && !db)
    return;
  double acc[kConvAcc];
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t j = 0; j <= K; ++j)
      acc[j] = 0.0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < S; ++t) {
        const double g = braid::load(dy, (b * S + t) * C + c);
        acc[K] += g;
        for (int64_t j = 0; j < K; ++j)
          acc[j] += g * double(extLoad(x, halo, b, t + j, c, S, C, K));
      }
    if (dw)
      for (int64_t j = 0; j < K; ++j)
        braid::store(dw, c * K + j, float(acc[j]));
    if (db)
      braid::store(db, c, float(acc[K]));
  }
}

template <typename T>
void conv1dHaloAccumulateImpl(T *dx, const T *dnext, int64_t B, int64_t S, int64_t C,
                              int64_t K) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < K - 1; ++i)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t o = (b * S + S - (K - 1) + i) * C + c;
        braid::store(dx, o, braid::load(dx, o) + braid::load(dnext, (b * (K - 1) + i) * C + c));
      }
}

template <typename T> inline void put(T *p, int64_t i, float v, bool accumulate) {
  braid::store(p, i, accumulate ? braid::load(p, i) + v : v);
}

struct ChunkGradIn {
  const float *h0, *dhEnd, *ddecay;
  bool softplus;
};

/// A channel's scratch, S x N floats each: the replayed states h_t and
/// decays exp(dt_t A), and the channel's terms of dB and dC.
struct ChannelScratch {
  float *hs, *at, *dB, *dC;
};

/// One (b, d) channel of the chunk backward (the recurrence above): writes
/// dx / ddelta (adding with `accumulate`) and the channel's dB / dC terms
/// into its scratch, adds into dAacc [N] and *dDacc, and stores the final
/// state cotangent in dh0 [N] when non-null (adding with `accumulate`). The
/// forward is replayed once and its decays are kept, so the backward
/// computes no exp of its own.
template <typename T>
void chunkChannel(const T *x, const T *delta, const T *A, const T *Bm, const T *Cm,
                  const T *Dp, const T *dy, const ChunkGradIn &gi, T *dx, T *ddelta,
                  double *dAacc, double *dDacc, float *dh0, const ChannelScratch &sc, int64_t b,
                  int64_t d, int64_t S, int64_t Di, int64_t N, bool accumulate) {
  float a[kMaxState], g[kMaxState], zeros[kMaxState];
  const int64_t so = (b * Di + d) * N;
  for (int64_t n = 0; n < N; ++n) {
    a[n] = braid::load(A, d * N + n);
    zeros[n] = 0.0f;
  }
  // The state before step t (h0 or zeros before step 0).
  const float *initial = gi.h0 ? gi.h0 + so : zeros;
  const auto before = [&](int64_t t) { return t > 0 ? sc.hs + (t - 1) * N : initial; };
  // Forward replay from h0; the sum of dt for the decay.
  double sdt = 0.0;
  for (int64_t t = 0; t < S; ++t) {
    const int64_t bt = b * S + t;
    const float xv = braid::load(x, bt * Di + d);
    float dtv = braid::load(delta, bt * Di + d);
    if (gi.softplus)
      dtv = braid::softplus(dtv);
    sdt += dtv;
    const float dtx = dtv * xv;
    const T *bt_ = Bm + bt * N;
    float *h = sc.hs + t * N, *at = sc.at + t * N;
    const float *hp = before(t);
    for (int64_t n = 0; n < N; ++n) {
      at[n] = expLanes(dtv * a[n]);
      h[n] = at[n] * hp[n] + dtx * braid::load(bt_, n);
    }
  }
  // The decay term: d/d(sum dt) and d/dA.
  double ddtDecay = 0.0;
  for (int64_t n = 0; n < N; ++n) {
    if (gi.ddecay) {
      const double gd = double(gi.ddecay[so + n]) * expLanes(a[n] * float(sdt));
      ddtDecay += gd * a[n];
      dAacc[n] += gd * sdt;
    }
    g[n] = gi.dhEnd ? gi.dhEnd[so + n] : 0.0f;
  }
  const float skip = braid::load(Dp, d);
  double dD = 0.0;
  for (int64_t t = S - 1; t >= 0; --t) {
    const int64_t bt = b * S + t;
    const float xv = braid::load(x, bt * Di + d);
    const float raw = braid::load(delta, bt * Di + d);
    const float dtv = gi.softplus ? braid::softplus(raw) : raw;
    const float dyv = dy ? braid::load(dy, bt * Di + d) : 0.0f;
    const T *bt_ = Bm + bt * N;
    const T *ct = Cm + bt * N;
    const float *h = sc.hs + t * N, *at = sc.at + t * N, *hp = before(t);
    float *dBt = sc.dB + t * N, *dCt = sc.dC + t * N;
    double ddt = ddtDecay, dxs = 0.0;
    for (int64_t n = 0; n < N; ++n) {
      const float bn = braid::load(bt_, n);
      const float dh = g[n] + braid::load(ct, n) * dyv;
      const float hprev = hp[n];
      ddt += double(dh) * (double(a[n]) * at[n] * hprev + double(bn) * xv);
      dxs += double(dh) * bn;
      dCt[n] = dyv * h[n];
      dBt[n] = dh * dtv * xv;
      dAacc[n] += double(dh) * dtv * at[n] * hprev;
      g[n] = at[n] * dh;
    }
    dD += double(dyv) * xv;
    put(dx, bt * Di + d, float(double(skip) * dyv + double(dtv) * dxs), accumulate);
    const double sg = gi.softplus ? double(braid::sigmoid(raw)) : 1.0;
    put(ddelta, bt * Di + d, float(ddt * sg), accumulate);
  }
  *dDacc += dD;
  if (dh0)
    for (int64_t n = 0; n < N; ++n) {
      float &o = dh0[so + n];
      o = accumulate ? o + g[n] : g[n];
    }
}

/// Channels whose backward runs at once (over the rank's threads) before
/// their dB / dC terms are summed.
constexpr int64_t kScanBlock = 32;

/// The backward over channel blocks: the channels of a block run on the
/// rank's threads, each into its own scratch; then dB and dC [S, N] of each
/// batch row add the block's terms in channel order, and dA / dD accumulate
/// per channel over the batch in batch order, so every sum is taken in one
/// order whatever the thread count. Scratch: (Di N + Di) doubles and
/// (2 + 4 min(Di, kScanBlock)) S N floats.
template <typename T>
void scanChunkGradImpl(const T *x, const T *delta, const T *A, const T *Bm, const T *Cm,
                       const T *Dp, const T *dy, const ChunkGradIn &gi, T *dx, T *ddelta,
                       T *dA, T *dBm, T *dCm, T *dD, float *dh0, int64_t B, int64_t S,
                       int64_t Di, int64_t N, bool accumulate) {
  const int64_t SN = S * N, block = std::min(Di, kScanBlock);
  const int64_t doubles = Di * N + Di, floats = (2 + 4 * block) * SN;
  Scratch scratch(doubles * int64_t(sizeof(double)) + floats * int64_t(sizeof(float)), 0, 0);
  double *dAacc = reinterpret_cast<double *>(scratch.shared()), *dDacc = dAacc + Di * N;
  float *dBsum = reinterpret_cast<float *>(dDacc + Di), *dCsum = dBsum + SN;
  float *channels = dCsum + SN;
  std::fill(dAacc, dAacc + doubles, 0.0);
  const auto scratchOf = [&](int64_t j) {
    float *base = channels + j * 4 * SN;
    return ChannelScratch{base, base + SN, base + 2 * SN, base + 3 * SN};
  };
  for (int64_t b = 0; b < B; ++b) {
    std::fill(dBsum, dBsum + 2 * SN, 0.0f);
    for (int64_t d0 = 0; d0 < Di; d0 += block) {
      const int64_t count = std::min(block, Di - d0);
      parallelFor(count, [&](int64_t lo, int64_t hi) {
        for (int64_t j = lo; j < hi; ++j) {
          const int64_t d = d0 + j;
          chunkChannel(x, delta, A, Bm, Cm, Dp, dy, gi, dx, ddelta, dAacc + d * N, dDacc + d,
                       dh0, scratchOf(j), b, d, S, Di, N, accumulate);
        }
      });
      parallelForAbove(SN, count * SN, kMinThreadedElems, [&](int64_t lo, int64_t hi) {
        for (int64_t j = 0; j < count; ++j) {
          const ChannelScratch sc = scratchOf(j);
          for (int64_t i = lo; i < hi; ++i) {
            dBsum[i] += sc.dB[i];
            dCsum[i] += sc.dC[i];
          }
        }
      });
    }
    for (int64_t i = 0; i < SN; ++i) {
      put(dBm + b * SN, i, dBsum[i], accumulate);
      put(dCm + b * SN, i, dCsum[i], accumulate);
    }
  }
  for (int64_t d = 0; d < Di; ++d) {
    for (int64_t n = 0; n < N; ++n)
      put(dA + d * N, n, float(dAacc[d * N + n]), accumulate);
    put(dD, d, float(dDacc[d]), accumulate);
  }
}

} // namespace

extern "C" {

void braid_k_conv1d_halo_grad(braid_rt *, braid_dtype dt, const void *x, const void *halo,
                              const void *w, const void *dy, void *dx, void *dw, void *db,
                              void *dhalo, int64_t batch, int64_t seq, int64_t channels,
                              int64_t kernel) {
  if (kernel < 1 || kernel + 1 > kConvAcc)
    fail("conv1d_halo_grad", "kernel size %lld is outside [1, %lld]", (long long)kernel,
         (long long)(kConvAcc - 1));
  withFloatType(dt, "conv1d_halo_grad", [&](auto tag) {
    using T = decltype(tag);
    conv1dHaloGradImpl<T>(in<T>(x), halo ? in<T>(halo) : nullptr, in<T>(w), in<T>(dy),
                          dx ? out<T>(dx) : nullptr, dw ? out<T>(dw) : nullptr,
                          db ? out<T>(db) : nullptr, dhalo ? out<T>(dhalo) : nullptr, batch,
                          seq, channels, kernel);
  });
}

void braid_k_conv1d_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *w,
                         const void *dy, void *dx, void *dw, void *db, int64_t batch,
                         int64_t seq, int64_t channels, int64_t kernel) {
  if (kernel < 1 || kernel + 1 > kConvAcc)
    fail("conv1d_grad", "kernel size %lld is outside [1, %lld]", (long long)kernel,
         (long long)(kConvAcc - 1));
  braid_k_conv1d_halo_grad(rt, dt, x, nullptr, w, dy, dx, dw, db, nullptr, batch, seq,
                           channels, kernel);
}

void braid_k_conv1d_halo_accumulate(braid_rt *, braid_dtype dt, void *dx, const void *dnext,
                                    int64_t batch, int64_t seq, int64_t channels,
                                    int64_t kernel) {
  if (kernel < 1 || seq < kernel - 1)
    fail("conv1d_halo_accumulate", "seq %lld is shorter than the halo (kernel %lld - 1)",
         (long long)seq, (long long)kernel);
  withFloatType(dt, "conv1d_halo_accumulate", [&](auto tag) {
    using T = decltype(tag);
    conv1dHaloAccumulateImpl<T>(out<T>(dx), in<T>(dnext), batch, seq, channels, kernel);
  });
}

void braid_k_selective_scan_chunk_grad(braid_rt *, braid_dtype dt, const void *x,
                                       const void *delta, const void *A, const void *Bm,
                                       const void *Cm, const void *D, const float *h0,
                                       const void *dy, const float *dh_end, const float *ddecay,
                                       void *dx, void *ddelta, void *dA, void *dBm, void *dCm,
                                       void *dD, float *dh0, const braid_scan_params *p,
                                       int32_t accumulate) {
  const int64_t batch = p->batch, seq = p->seq, channels = p->channels, state = p->state;
  const int32_t delta_softplus = p->delta_softplus;
  if (state > kMaxState)
    fail("selective_scan_chunk_grad", "state size %lld exceeds the supported %lld",
         (long long)state, (long long)kMaxState);
  if (seq * state > kScanFloats)
    fail("selective_scan_chunk_grad",
         "seq x state = %lld x %lld exceeds the supported %lld recomputed states",
         (long long)seq, (long long)state, (long long)kScanFloats);
  const ChunkGradIn gi{h0, dh_end, ddecay, delta_softplus != 0};
  withFloatType(dt, "selective_scan_chunk_grad", [&](auto tag) {
    using T = decltype(tag);
    scanChunkGradImpl<T>(in<T>(x), in<T>(delta), in<T>(A), in<T>(Bm), in<T>(Cm), in<T>(D),
                         dy ? in<T>(dy) : nullptr, gi, out<T>(dx), out<T>(ddelta), out<T>(dA),
                         out<T>(dBm), out<T>(dCm), out<T>(dD), dh0, batch, seq, channels, state,
                         accumulate != 0);
  });
}

void braid_k_selective_scan_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *delta,
                                 const void *A, const void *Bm, const void *Cm, const void *D,
                                 const void *dy, void *dx, void *ddelta, void *dA, void *dBm,
                                 void *dCm, void *dD, const braid_scan_params *p) {
  const int64_t seq = p->seq, state = p->state;
  if (state > kMaxState)
    fail("selective_scan_grad", "state size %lld exceeds the supported %lld", (long long)state,
         (long long)kMaxState);
  if (seq * state > kScanFloats)
    fail("selective_scan_grad",
         "seq x state = %lld x %lld exceeds the supported %lld recomputed states",
         (long long)seq, (long long)state, (long long)kScanFloats);
  braid_k_selective_scan_chunk_grad(rt, dt, x, delta, A, Bm, Cm, D, nullptr, dy, nullptr,
                                    nullptr, dx, ddelta, dA, dBm, dCm, dD, nullptr, p,
                                    /*accumulate=*/0);
}

void braid_k_scan_carry_grad(braid_rt *, const float *decay_all, const float *hend_all,
                             const float *dh0_all, float *ddecay, float *dhend, int64_t chunks,
                             int64_t chunk, int64_t count) {
  if (chunk < 0 || chunk >= chunks)
    fail("scan_carry_grad", "chunk %lld is outside [0, %lld)", (long long)chunk,
         (long long)chunks);
  for (int64_t i = 0; i < count; ++i) {
    double H = 0.0; // H_{chunk-1}
    for (int64_t j = 0; j < chunk; ++j)
      H = double(decay_all[j * count + i]) * H + double(hend_all[j * count + i]);
    double dH = 0.0; // dH_{chunks-1} = 0, then down to dH_chunk
    for (int64_t j = chunks - 2; j >= chunk; --j)
      dH = double(dh0_all[(j + 1) * count + i]) + double(decay_all[(j + 1) * count + i]) * dH;
    if (dhend)
      dhend[i] = float(dH);
    if (ddecay)
      ddecay[i] = float(H * dH);
  }
}

} // extern "C"
