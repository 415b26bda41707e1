//===- mamba_chunk.cpp - CPU kernels: conv1d / selective_scan over chunks -===//
//
// Context parallelism of the Mamba ops: the sequence is split into chunks
// (one per rank) and each kernel sees one chunk.
//
// conv1d_halo: the K-1 inputs preceding the chunk (halo [B, K-1, C], zeros for
// the first chunk) replace the causal zero padding:
//   y[b,t,c] = sum_{j<K} w[c,j] xe[b, t+j, c] (+ bias[c]),  xe = concat(halo, x).
// conv1d_halo_grad: dxe[b, t+j, c] += w[c,j] dy[b,t,c] split into dhalo (rows
// < K-1) and dx; dw[c,j] = sum_{b,t} dy[b,t,c] xe[b,t+j,c], db = sum dy
// (double accumulators per channel). conv1d_halo_accumulate adds the next
// chunk's dhalo into the last K-1 rows of dx.
//
// selective_scan_chunk: the recurrence of braid_k_selective_scan from the
// state h0 (f32 [B, Di, N]); also writes the final state h_end and the decay
// exp(A[d,n] sum_t dt_t) (the sum of dt in double), so that the state
// entering chunk c is H_{c-1} with H_j = decay_j H_{j-1} + h_end_j computed
// from zero-start chunks (scan_carry, double accumulation).
//
// selective_scan_chunk_grad: the backward of grad_mamba.cpp with the
// reverse recurrence started from g = dh_end, the previous state of step 0
// equal to h0, dh0 = the final g, and the decay term
//   ddt_t += sum_n ddecay[n] decay[n] A[n],  dA[n] += ddecay[n] decay[n] sum_t dt_t.
// A sweep per b (dx, ddelta, dB, dC; f32 S x N accumulators) and a sweep per
// d (dA, dD, dh0 in double), as braid_k_selective_scan_grad; with
// `accumulate` the results are added to the outputs. Limit: S * N <=
// kScanFloats (the recomputed states).
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <cmath>

using namespace braid::cpu;

namespace {

constexpr int64_t kConvAcc = 4096;     // double accumulators of dw (K per channel) + db
constexpr int64_t kScanFloats = 32768; // S x N states / dB / dC accumulators

/// Element u of the extended input concat(halo, x) along the sequence.
template <typename T>
inline float extLoad(const T *x, const T *halo, int64_t b, int64_t u, int64_t c, int64_t S,
                     int64_t C, int64_t K) {
  if (u < K - 1)
    return halo ? braid::load(halo, (b * (K - 1) + u) * C + c) : 0.0f;
  return braid::load(x, (b * S + u - (K - 1)) * C + c);
}

template <typename T>
void conv1dHaloImpl(const T *x, const T *halo, const T *w, const T *bias, T *y, int64_t B,
                    int64_t S, int64_t C, int64_t K) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < S; ++t)
      for (int64_t c = 0; c < C; ++c) {
        float acc = 0.0f;
        for (int64_t j = 0; j < K; ++j)
          acc += braid::load(w, c * K + j) * extLoad(x, halo, b, t + j, c, S, C, K);
        braid::store(y, (b * S + t) * C + c, bias ? acc + braid::load(bias, c) : acc);
      }
}

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

template <typename T>
void scanChunkImpl(const T *x, const T *delta, const T *A, const T *Bm, const T *Cm,
                   const T *Dp, const float *h0, T *y, float *hEnd, float *decay, int64_t B,
                   int64_t S, int64_t Di, int64_t N, bool softplus) {
  float h[kMaxState], a[kMaxState];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < Di; ++d) {
      const int64_t so = (b * Di + d) * N; // offset of the (b, d) state
      for (int64_t n = 0; n < N; ++n) {
        h[n] = h0 ? h0[so + n] : 0.0f;
        a[n] = braid::load(A, d * N + n);
      }
      const float skip = braid::load(Dp, d);
      double sdt = 0.0;
      for (int64_t t = 0; t < S; ++t) {
        const int64_t bt = b * S + t;
        const float xv = braid::load(x, bt * Di + d);
        float dt = braid::load(delta, bt * Di + d);
        if (softplus)
          dt = braid::softplus(dt);
        sdt += dt;
        const float dtx = dt * xv;
        const T *bt_ = Bm + bt * N;
        const T *ct = Cm + bt * N;
        float out = 0.0f;
        for (int64_t n = 0; n < N; ++n) {
          h[n] = braid::exp(dt * a[n]) * h[n] + dtx * braid::load(bt_, n);
          out += braid::load(ct, n) * h[n];
        }
        if (y)
          braid::store(y, bt * Di + d, out + skip * xv);
      }
      for (int64_t n = 0; n < N; ++n) {
        if (hEnd)
          hEnd[so + n] = h[n];
        if (decay)
          decay[so + n] = braid::exp(a[n] * float(sdt));
      }
    }
}

template <typename T> inline void put(T *p, int64_t i, float v, bool accumulate) {
  braid::store(p, i, accumulate ? braid::load(p, i) + v : v);
}

struct ChunkGradIn {
  const float *h0, *dhEnd, *ddecay;
  bool softplus;
};

/// One (b, d) channel of the chunk backward (see scanChannel in
/// grad_mamba.cpp). Writes dx / ddelta when `writeXD` (adding with
/// `accumulate`); adds into dBacc / dCacc [S, N], dAacc [N], *dDacc when
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

void braid_k_conv1d_halo(braid_rt *, braid_dtype dt, const void *x, const void *halo,
                         const void *w, const void *b, void *y, int64_t batch, int64_t seq,
                         int64_t channels, int64_t kernel) {
  if (kernel < 1)
    fail("conv1d_halo", "kernel size %lld is below 1", (long long)kernel);
  withFloatType(dt, "conv1d_halo", [&](auto tag) {
    using T = decltype(tag);
    conv1dHaloImpl<T>(in<T>(x), halo ? in<T>(halo) : nullptr, in<T>(w), b ? in<T>(b) : nullptr,
                      out<T>(y), batch, seq, channels, kernel);
  });
}

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

void braid_k_selective_scan_chunk(braid_rt *, braid_dtype dt, const void *x, const void *delta,
                                  const void *A, const void *Bm, const void *Cm, const void *D,
                                  const float *h0, void *y, float *h_end, float *decay,
                                  int64_t batch, int64_t seq, int64_t channels, int64_t state,
                                  int32_t delta_softplus) {
  if (state > kMaxState)
    fail("selective_scan_chunk", "state size %lld exceeds the supported %lld",
         (long long)state, (long long)kMaxState);
  withFloatType(dt, "selective_scan_chunk", [&](auto tag) {
    using T = decltype(tag);
    scanChunkImpl<T>(in<T>(x), in<T>(delta), in<T>(A), in<T>(Bm), in<T>(Cm), in<T>(D), h0,
                     y ? out<T>(y) : nullptr, h_end, decay, batch, seq, channels, state,
                     delta_softplus != 0);
  });
}

void braid_k_scan_carry(braid_rt *, const float *decay_all, const float *hend_all, float *h0,
                        int64_t chunks, int64_t chunk, int64_t count) {
  if (chunk < 0 || chunk >= chunks)
    fail("scan_carry", "chunk %lld is outside [0, %lld)", (long long)chunk, (long long)chunks);
  for (int64_t i = 0; i < count; ++i) {
    double H = 0.0;
    for (int64_t j = 0; j < chunk; ++j)
      H = double(decay_all[j * count + i]) * H + double(hend_all[j * count + i]);
    h0[i] = float(H);
  }
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
