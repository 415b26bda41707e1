//===- grad_mamba.cpp - CPU backward kernels: conv1d, selective_scan ------===//
//
// conv1d_grad: dx[b,u,c] = sum_j w[c,j] dy[b, u+(K-1)-j, c] (f32, per channel
// block); dw[c,j] = sum_{b,t} dy[b,t,c] x[b,t-(K-1)+j,c] and db[c] = sum dy in
// double accumulators of a block of channels (kConvAcc / K channels at a
// time, so K <= kConvAcc).
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

#include "common.h"

#include <cmath>

using namespace braid::cpu;

namespace {

constexpr int64_t kConvAcc = 4096;     // double accumulators of dw (K per channel) + db
constexpr int64_t kScanFloats = 32768; // S x N states / dB / dC accumulators

template <typename T>
void conv1dGradImpl(const T *x, const T *w, const T *dy, T *dx, T *dw, T *db, int64_t B,
                    int64_t S, int64_t C, int64_t K) {
  // dx, per (b, u) row and block of channels.
  constexpr int64_t CB = 256;
  float acc[CB];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t u = 0; u < S; ++u)
      for (int64_t c0 = 0; c0 < C; c0 += CB) {
        const int64_t cb = C - c0 < CB ? C - c0 : CB;
        for (int64_t c = 0; c < cb; ++c)
          acc[c] = 0.0f;
        for (int64_t j = 0; j < K; ++j) {
          const int64_t t = u + (K - 1) - j;
          if (t >= S)
            continue;
          const T *dyr = dy + (b * S + t) * C + c0;
          const T *wc = w + c0 * K + j;
          for (int64_t c = 0; c < cb; ++c)
            acc[c] += braid::load(wc, c * K) * braid::load(dyr, c);
        }
        for (int64_t c = 0; c < cb; ++c)
          braid::store(dx + (b * S + u) * C + c0, c, acc[c]);
      }
  // dw, db: channel blocks of WB channels, K + 1 accumulators each.
  double wacc[kConvAcc];
  const int64_t WB = kConvAcc / (K + 1);
  for (int64_t c0 = 0; c0 < C; c0 += WB) {
    const int64_t cb = C - c0 < WB ? C - c0 : WB;
    double *bacc = wacc + WB * K;
    for (int64_t i = 0; i < cb * K; ++i)
      wacc[i] = 0.0;
    for (int64_t c = 0; c < cb; ++c)
      bacc[c] = 0.0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < S; ++t) {
        const T *dyr = dy + (b * S + t) * C + c0;
        for (int64_t c = 0; c < cb; ++c)
          bacc[c] += braid::load(dyr, c);
        for (int64_t j = 0; j < K; ++j) {
          const int64_t tt = t - (K - 1) + j;
          if (tt < 0)
            continue;
          const T *xr = x + (b * S + tt) * C + c0;
          for (int64_t c = 0; c < cb; ++c)
            wacc[c * K + j] += double(braid::load(dyr, c)) * double(braid::load(xr, c));
        }
      }
    for (int64_t i = 0; i < cb * K; ++i)
      braid::store(dw + c0 * K, i, float(wacc[i]));
    if (db)
      for (int64_t c = 0; c < cb; ++c)
        braid::store(db, c0 + c, float(bacc[c]));
  }
}

/// The cotangents of one (b, d) channel. Writes dx / ddelta when `writeXD`;
/// adds into dBacc / dCacc [S, N] when non-null and into dAacc [N] / *dDacc
/// when non-null. `hs` is S x N scratch.
template <typename T>
void scanChannel(const T *x, const T *delta, const T *A, const T *Bm, const T *Cm, const T *Dp,
                 const T *dy, T *dx, T *ddelta, float *dBacc, float *dCacc, double *dAacc,
                 double *dDacc, float *hs, int64_t b, int64_t d, int64_t S, int64_t Di,
                 int64_t N, bool softplus, bool writeXD) {
  float a[kMaxState], g[kMaxState];
  for (int64_t n = 0; n < N; ++n)
    a[n] = braid::load(A, d * N + n);
  // Forward replay (the formulas of braid_k_selective_scan).
  for (int64_t t = 0; t < S; ++t) {
    const int64_t bt = b * S + t;
    const float xv = braid::load(x, bt * Di + d);
    float dtv = braid::load(delta, bt * Di + d);
    if (softplus)
      dtv = braid::softplus(dtv);
    const float dtx = dtv * xv;
    const T *bt_ = Bm + bt * N;
    float *h = hs + t * N;
    const float *hp = t > 0 ? hs + (t - 1) * N : nullptr;
    for (int64_t n = 0; n < N; ++n)
      h[n] = braid::exp(dtv * a[n]) * (hp ? hp[n] : 0.0f) + dtx * braid::load(bt_, n);
  }
  // Reverse.
  for (int64_t n = 0; n < N; ++n)
    g[n] = 0.0f;
  const float skip = braid::load(Dp, d);
  double dD = 0.0;
  for (int64_t t = S - 1; t >= 0; --t) {
    const int64_t bt = b * S + t;
    const float xv = braid::load(x, bt * Di + d);
    const float raw = braid::load(delta, bt * Di + d);
    const float dtv = softplus ? braid::softplus(raw) : raw;
    const float dyv = braid::load(dy, bt * Di + d);
    const T *bt_ = Bm + bt * N;
    const T *ct = Cm + bt * N;
    const float *h = hs + t * N;
    const float *hp = t > 0 ? hs + (t - 1) * N : nullptr;
    double ddt = 0.0, dxs = 0.0;
    for (int64_t n = 0; n < N; ++n) {
      const float bn = braid::load(bt_, n);
      const float dh = g[n] + braid::load(ct, n) * dyv;
      const float at = braid::exp(dtv * a[n]);
      const float hprev = hp ? hp[n] : 0.0f;
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
      braid::store(dx, bt * Di + d, float(double(skip) * dyv + double(dtv) * dxs));
      const double sg = softplus ? double(braid::sigmoid(raw)) : 1.0;
      braid::store(ddelta, bt * Di + d, float(ddt * sg));
    }
  }
  if (dDacc)
    *dDacc += dD;
}

template <typename T>
void scanGradImpl(const T *x, const T *delta, const T *A, const T *Bm, const T *Cm, const T *Dp,
                  const T *dy, T *dx, T *ddelta, T *dA, T *dBm, T *dCm, T *dD, int64_t B,
                  int64_t S, int64_t Di, int64_t N, bool softplus) {
  float hs[kScanFloats], dBacc[kScanFloats], dCacc[kScanFloats];
  // Sweep 1: dx, ddelta, dB, dC.
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < S * N; ++i)
      dBacc[i] = dCacc[i] = 0.0f;
    for (int64_t d = 0; d < Di; ++d)
      scanChannel(x, delta, A, Bm, Cm, Dp, dy, dx, ddelta, dBacc, dCacc, nullptr, nullptr, hs,
                  b, d, S, Di, N, softplus, true);
    for (int64_t i = 0; i < S * N; ++i) {
      braid::store(dBm + b * S * N, i, dBacc[i]);
      braid::store(dCm + b * S * N, i, dCacc[i]);
    }
  }
  // Sweep 2: dA, dD.
  double dAacc[kMaxState];
  for (int64_t d = 0; d < Di; ++d) {
    for (int64_t n = 0; n < N; ++n)
      dAacc[n] = 0.0;
    double dDacc = 0.0;
    for (int64_t b = 0; b < B; ++b)
      scanChannel(x, delta, A, Bm, Cm, Dp, dy, dx, ddelta, nullptr, nullptr, dAacc, &dDacc, hs,
                  b, d, S, Di, N, softplus, false);
    for (int64_t n = 0; n < N; ++n)
      braid::store(dA + d * N, n, float(dAacc[n]));
    braid::store(dD, d, float(dDacc));
  }
}

} // namespace

extern "C" {

void braid_k_conv1d_grad(braid_rt *, braid_dtype dt, const void *x, const void *w,
                         const void *dy, void *dx, void *dw, void *db, int64_t batch,
                         int64_t seq, int64_t channels, int64_t kernel) {
  if (kernel < 1 || kernel + 1 > kConvAcc)
    fail("conv1d_grad", "kernel size %lld is outside [1, %lld]", (long long)kernel,
         (long long)(kConvAcc - 1));
  withFloatType(dt, "conv1d_grad", [&](auto tag) {
    using T = decltype(tag);
    conv1dGradImpl<T>(in<T>(x), in<T>(w), in<T>(dy), out<T>(dx), out<T>(dw),
                      db ? out<T>(db) : nullptr, batch, seq, channels, kernel);
  });
}

void braid_k_selective_scan_grad(braid_rt *, braid_dtype dt, const void *x, const void *delta,
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
  withFloatType(dt, "selective_scan_grad", [&](auto tag) {
    using T = decltype(tag);
    scanGradImpl<T>(in<T>(x), in<T>(delta), in<T>(A), in<T>(Bm), in<T>(Cm), in<T>(D), in<T>(dy),
                    out<T>(dx), out<T>(ddelta), out<T>(dA), out<T>(dBm), out<T>(dCm), out<T>(dD),
                    batch, seq, channels, state, delta_softplus != 0);
  });
}

} // extern "C"
