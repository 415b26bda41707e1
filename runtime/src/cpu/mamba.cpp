//===- mamba.cpp - CPU kernels: conv1d, selective_scan --------------------===//
//
// The whole-sequence ops are the one-chunk case of the chunk kernels of
// context parallelism (the sequence split into chunks, one per rank):
//
// conv1d_halo: the K-1 inputs preceding the chunk (halo [B, K-1, C]; absent
// or zeros for the first chunk, the causal padding) precede x:
//   y[b,t,c] = sum_{j<K} w[c,j] xe[b, t+j, c] (+ bias[c]),  xe = concat(halo, x).
//
// selective_scan_chunk: h_t = exp(dt_t A) h_{t-1} + dt_t B_t x_t,
// y_t = C_t h_t + D x_t from the state h0 (f32 [B, Di, N]; absent: zero);
// also writes the final state h_end and the decay exp(A[d,n] sum_t dt_t)
// (the sum of dt in double), so that the state entering chunk c is H_{c-1}
// with H_j = decay_j H_{j-1} + h_end_j computed from zero-start chunks
// (scan_carry, double accumulation).
//
//===----------------------------------------------------------------------===//

#include "clones.h"
#include "mamba_halo.h"
#include "mamba_scan.h"
#include "parallel.h"
#include "vexp.h"

#include <cmath>

using namespace braid::cpu;

namespace {

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
void scanChunkImpl(const T *x, const T *delta, const T *A, const T *Bm, const T *Cm,
                   const T *Dp, const float *h0, T *y, float *hEnd, float *decay, int64_t B,
                   int64_t S, int64_t Di, int64_t N, bool softplus) {
  // Channels (b, d) are independent: ranges of them run on the rank's
  // threads, each channel on one thread in one order.
  parallelFor(B * Di, [&](int64_t lo, int64_t hi) {
    float h[kMaxState], a[kMaxState];
    for (int64_t bd = lo; bd < hi; ++bd) {
      const int64_t b = bd / Di, d = bd % Di;
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
        const float out = scanStep(h, a, Bm + bt * N, Cm + bt * N, dt, xv, N);
        if (y)
          braid::store(y, bt * Di + d, out + skip * xv);
      }
      for (int64_t n = 0; n < N; ++n) {
        if (hEnd)
          hEnd[so + n] = h[n];
        if (decay)
          decay[so + n] = expLanes(a[n] * float(sdt));
      }
    }
  });
}

} // namespace

// The state update vectorizes (one AVX-512 register at N = 16); the output's
// sum stays in n order (scanStep).
BRAID_CPU_CLONES
void braid::cpu::updateScanState(float *h, const float *a, const float *b, float dt, float dtx,
                                 int64_t N) {
#ifdef __clang__
#pragma clang fp contract(off) // the baseline's values in every clone
#endif
  for (int64_t n = 0; n < N; ++n)
    h[n] = expLanes(dt * a[n]) * h[n] + dtx * b[n];
}

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

void braid_k_conv1d(braid_rt *rt, braid_dtype dt, const void *x, const void *w, const void *b,
                    void *y, int64_t batch, int64_t seq, int64_t channels, int64_t kernel) {
  braid_k_conv1d_halo(rt, dt, x, nullptr, w, b, y, batch, seq, channels, kernel);
}

void braid_k_selective_scan_chunk(braid_rt *, braid_dtype dt, const void *x, const void *delta,
                                  const void *A, const void *Bm, const void *Cm, const void *D,
                                  const float *h0, void *y, float *h_end, float *decay,
                                  const braid_scan_params *p) {
  const int64_t batch = p->batch, seq = p->seq, channels = p->channels, state = p->state;
  const int32_t delta_softplus = p->delta_softplus;
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

void braid_k_selective_scan(braid_rt *rt, braid_dtype dt, const void *x, const void *delta,
                            const void *A, const void *Bm, const void *Cm, const void *D, void *y,
                            const braid_scan_params *p) {
  if (p->state > kMaxState)
    fail("selective_scan", "state size %lld exceeds the supported %lld", (long long)p->state,
         (long long)kMaxState);
  braid_k_selective_scan_chunk(rt, dt, x, delta, A, Bm, Cm, D, nullptr, y, nullptr, nullptr, p);
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

} // extern "C"
