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
// dB, dC [B,S,N] sum over channels d and dA [Di,N], dD [Di] over the batch:
// a first sweep (b outer) sums dB/dC in f32 S x N accumulators and writes
// dx, ddelta; a second sweep (d outer) replays each channel again for dA, dD
// in double. Limit: S * N <= kScanFloats (32768 floats each for the states,
// dB and dC accumulators: 384 KiB of stack).
//
//===----------------------------------------------------------------------===//

#include "mamba_halo.h"

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

/// One (b, d) channel of the chunk backward (the recurrence above). Writes
/// dx / ddelta when `writeXD` (adding with `accumulate`); adds into dBacc / dCacc [S, N], dAacc [N], *dDacc when
/// non-null; stores the final state cotangent in dh0 [N] when non-null.
template <typename T>
void chunkChannel(const T *x, const T *delta, const T *A, const T *Bm, const T *Cm,
                  const T *Dp, const T *dy, const ChunkGradIn &gi, T *dx, T *ddelta,
                  float *dBacc, float *dCacc, double *dAacc, double *dDacc, double *dh0,
                  float *hs, int64_t b, int64_t d, int64_t S, int64_t Di, int64_t N,
                  bool writeXD, bool accumulate) {
  float a[kMaxState], g[kMaxState];
  const int64_t so = (b * Di + d) * N;
  for (int64_t n = 0; n < N; ++n)
    a[n] = braid::load(A, d * N + n);
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
    float *h = hs + t * N;
    for (int64_t n = 0; n < N; ++n) {
      const float hp = t > 0 ? hs[(t - 1) * N + n] : (gi.h0 ? gi.h0[so + n] : 0.0f);
      h[n] = braid::exp(dtv * a[n]) * hp + dtx * braid::load(bt_, n);
    }
  }
  // The decay term: d/d(sum dt) and d/dA.
  double ddtDecay = 0.0;
  for (int64_t n = 0; n < N; ++n) {
    if (gi.ddecay) {
      const double gd = double(gi.ddecay[so + n]) * braid::exp(a[n] * float(sdt));
      ddtDecay += gd * a[n];
      if (dAacc)
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
    const float *h = hs + t * N;
    double ddt = ddtDecay, dxs = 0.0;
    for (int64_t n = 0; n < N; ++n) {
      const float bn = braid::load(bt_, n);
      const float dh = g[n] + braid::load(ct, n) * dyv;
      const float at = braid::exp(dtv * a[n]);
      const float hprev = t > 0 ? hs[(t - 1) * N + n] : (gi.h0 ? gi.h0[so + n] : 0.0f);
      ddt += double(dh) * (double(a[n]) * at * hprev + double(bn) * xv);
      dxs += double(dh) * bn;
      if (dCacc)
        dCacc[t * N + n] += dyv * h[n];
      if (dBacc)
        dBacc[t * N + n] += dh * dtv * xv;
      if (dAacc)
        dAacc[n] += double(dh) * dtv * at * hprev;
      g[n] = at * dh;
    }
    dD += double(dyv) * xv;
    if (writeXD) {
      put(dx, bt * Di + d, float(double(skip) * dyv + double(dtv) * dxs), accumulate);
      const double sg = gi.softplus ? double(braid::sigmoid(raw)) : 1.0;
      put(ddelta, bt * Di + d, float(ddt * sg), accumulate);
    }
  }
  if (dDacc)
    *dDacc += dD;
  if (dh0)
    for (int64_t n = 0; n < N; ++n)
      dh0[n] = g[n];
}

template <typename T>
void scanChunkGradImpl(const T *x, const T *delta, const T *A, const T *Bm, const T *Cm,
                       const T *Dp, const T *dy, const ChunkGradIn &gi, T *dx, T *ddelta,
                       T *dA, T *dBm, T *dCm, T *dD, float *dh0, int64_t B, int64_t S,
                       int64_t Di, int64_t N, bool accumulate) {
  float hs[kScanFloats], dBacc[kScanFloats], dCacc[kScanFloats];
  // Sweep 1: dx, ddelta, dB, dC.
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < S * N; ++i)
      dBacc[i] = dCacc[i] = 0.0f;
    for (int64_t d = 0; d < Di; ++d)
      chunkChannel(x, delta, A, Bm, Cm, Dp, dy, gi, dx, ddelta, dBacc, dCacc, nullptr, nullptr,
                   nullptr, hs, b, d, S, Di, N, true, accumulate);
    for (int64_t i = 0; i < S * N; ++i) {
      put(dBm + b * S * N, i, dBacc[i], accumulate);
      put(dCm + b * S * N, i, dCacc[i], accumulate);
    }
  }
  // Sweep 2: dA, dD, dh0.
  double dAacc[kMaxState], dh0c[kMaxState];
  for (int64_t d = 0; d < Di; ++d) {
    for (int64_t n = 0; n < N; ++n)
      dAacc[n] = 0.0;
    double dDacc = 0.0;
    for (int64_t b = 0; b < B; ++b) {
      chunkChannel(x, delta, A, Bm, Cm, Dp, dy, gi, dx, ddelta, nullptr, nullptr, dAacc, &dDacc,
                   dh0 ? dh0c : nullptr, hs, b, d, S, Di, N, false, accumulate);
      if (dh0)
        for (int64_t n = 0; n < N; ++n) {
          float &o = dh0[(b * Di + d) * N + n];
          o = accumulate ? o + float(dh0c[n]) : float(dh0c[n]);
        }
    }
    for (int64_t n = 0; n < N; ++n)
      put(dA + d * N, n, float(dAacc[n]), accumulate);
    put(dD, d, float(dDacc), accumulate);
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
                                       void *dD, float *dh0, int64_t batch, int64_t seq,
                                       int64_t channels, int64_t state, int32_t delta_softplus,
                                       int32_t accumulate) {
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
                                 void *dCm, void *dD, int64_t batch, int64_t seq,
                                 int64_t channels, int64_t state, int32_t delta_softplus) {
  if (state > kMaxState)
    fail("selective_scan_grad", "state size %lld exceeds the supported %lld", (long long)state,
         (long long)kMaxState);
  if (seq * state > kScanFloats)
    fail("selective_scan_grad",
         "seq x state = %lld x %lld exceeds the supported %lld recomputed states",
         (long long)seq, (long long)state, (long long)kScanFloats);
  braid_k_selective_scan_chunk_grad(rt, dt, x, delta, A, Bm, Cm, D, nullptr, dy, nullptr,
                                    nullptr, dx, ddelta, dA, dBm, dCm, dD, nullptr, batch, seq,
                                    channels, state, delta_softplus, /*accumulate=*/0);
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
