//===- mamba.cpp - CPU kernels: conv1d, selective_scan --------------------===//

#include "common.h"

using namespace braid::cpu;

namespace {

constexpr int64_t CB = 256; // channels per block of the conv1d accumulator

// y[b, t, c] = sum_{j<K} w[c, j] x[b, t-(K-1)+j, c] (+ bias[c], added last).
template <typename T>
void conv1dImpl(const T *x, const T *w, const T *bias, T *y, int64_t B, int64_t S, int64_t C,
                int64_t K) {
  float acc[CB];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < S; ++t)
      for (int64_t c0 = 0; c0 < C; c0 += CB) {
        const int64_t cb = C - c0 < CB ? C - c0 : CB;
        for (int64_t c = 0; c < cb; ++c)
          acc[c] = 0.0f;
        for (int64_t j = 0; j < K; ++j) {
          const int64_t tt = t - (K - 1) + j;
          if (tt < 0)
            continue;
          const T *xr = x + (b * S + tt) * C + c0;
          const T *wc = w + c0 * K + j;
          for (int64_t c = 0; c < cb; ++c)
            acc[c] += braid::load(wc, c * K) * braid::load(xr, c);
        }
        T *yr = y + (b * S + t) * C + c0;
        for (int64_t c = 0; c < cb; ++c)
          braid::store(yr, c, bias ? acc[c] + braid::load(bias, c0 + c) : acc[c]);
      }
}

// h = exp(dt A) h + dt B x; y = C . h + D x, per (b, d) with h[N] local.
template <typename T>
void scanImpl(const T *x, const T *delta, const T *A, const T *Bm, const T *Cm, const T *Dp, T *y,
              int64_t B, int64_t S, int64_t Di, int64_t N, bool softplus) {
  float h[kMaxState], a[kMaxState];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < Di; ++d) {
      for (int64_t n = 0; n < N; ++n) {
        h[n] = 0.0f;
        a[n] = braid::load(A, d * N + n);
      }
      const float skip = braid::load(Dp, d);
      for (int64_t t = 0; t < S; ++t) {
        const int64_t bt = b * S + t;
        const float xv = braid::load(x, bt * Di + d);
        float dt = braid::load(delta, bt * Di + d);
        if (softplus)
          dt = braid::softplus(dt);
        const float dtx = dt * xv;
        const T *bt_ = Bm + bt * N;
        const T *ct = Cm + bt * N;
        float out = 0.0f;
        for (int64_t n = 0; n < N; ++n) {
          h[n] = braid::exp(dt * a[n]) * h[n] + dtx * braid::load(bt_, n);
          out += braid::load(ct, n) * h[n];
        }
        braid::store(y, bt * Di + d, out + skip * xv);
      }
    }
}

} // namespace

extern "C" {

void braid_k_conv1d(braid_rt *, braid_dtype dt, const void *x, const void *w, const void *b,
                    void *y, int64_t batch, int64_t seq, int64_t channels, int64_t kernel) {
  withFloatType(dt, "conv1d", [&](auto tag) {
    using T = decltype(tag);
    conv1dImpl<T>(in<T>(x), in<T>(w), b ? in<T>(b) : nullptr, out<T>(y), batch, seq, channels,
                  kernel);
  });
}

void braid_k_selective_scan(braid_rt *, braid_dtype dt, const void *x, const void *delta,
                            const void *A, const void *Bm, const void *Cm, const void *D, void *y,
                            int64_t batch, int64_t seq, int64_t channels, int64_t state,
                            int32_t delta_softplus) {
  if (state > kMaxState)
    fail("selective_scan", "state size %lld exceeds the supported %lld", (long long)state,
         (long long)kMaxState);
  withFloatType(dt, "selective_scan", [&](auto tag) {
    using T = decltype(tag);
    scanImpl<T>(in<T>(x), in<T>(delta), in<T>(A), in<T>(Bm), in<T>(Cm), in<T>(D), out<T>(y),
                batch, seq, channels, state, delta_softplus != 0);
  });
}

} // extern "C"
