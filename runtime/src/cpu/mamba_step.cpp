//===- mamba_step.cpp - CPU kernels: the Mamba state of inference ---------===//
//
// braid_k_conv_step and braid_k_scan_step (runtime_inference.h): a Mamba
// layer's convolution and selective scan over each sequence's new rows,
// continuing from the conv and SSM states its previous calls left and
// writing them back in place at the sequence's last real row. The sums are
// mamba.cpp's in the same order (conv1dHaloImpl, scanChunkImpl), so a decode
// step computes what the whole-sequence forward computes at that row.
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "parallel.h"
#include "vexp.h"

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace braid::cpu;

namespace {

/// Every sequence's last row lies in [0, seq).
void checkLastRows(const char *kernel, const int32_t *lastRows, int64_t batch, int64_t seq) {
  if (!lastRows)
    return;
  for (int64_t b = 0; b < batch; ++b)
    if (lastRows[b] < 0 || lastRows[b] >= seq)
      fail(kernel, "last row %lld of sequence %lld is outside [0, %lld)",
           (long long)lastRows[b], (long long)b, (long long)seq);
}

/// BRAID_TEST_FORGET_MAMBA_STATE names the states a test drops ("conv",
/// "ssm" or "both"): their kernels start every sequence fresh.
bool forgets(const char *which) {
  const char *hook = std::getenv("BRAID_TEST_FORGET_MAMBA_STATE");
  return hook && (!std::strcmp(hook, which) || !std::strcmp(hook, "both"));
}

template <typename T>
void convStepImpl(T *state, const T *x, const T *w, const T *bias, const int32_t *positions,
                  const int32_t *lastRows, T *y, int64_t B, int64_t S, int64_t C, int64_t K,
                  bool forget) {
  // One sequence's channels at a time: its new state is read from its old
  // state and rows, so it is copied aside first.
  std::vector<T> old(size_t((K - 1) * C));
  for (int64_t b = 0; b < B; ++b) {
    T *st = state + b * (K - 1) * C;
    const bool fresh = forget || positions[b] == 0;
    std::memcpy(old.data(), st, old.size() * sizeof(T));
    // Row u of xe = concat(old state or zeros, x[b]), as extLoad reads a halo.
    auto xe = [&](int64_t u, int64_t c) -> float {
      if (u < K - 1)
        return fresh ? 0.0f : braid::load(old.data(), u * C + c);
      return braid::load(x, (b * S + u - (K - 1)) * C + c);
    };
    for (int64_t t = 0; t < S; ++t)
      for (int64_t c = 0; c < C; ++c) {
        float acc = 0.0f;
        for (int64_t j = 0; j < K; ++j)
          acc += braid::load(w, c * K + j) * xe(t + j, c);
        braid::store(y, (b * S + t) * C + c, bias ? acc + braid::load(bias, c) : acc);
      }
    const int64_t last = lastRows ? lastRows[b] : S - 1;
    for (int64_t i = 0; i < K - 1; ++i)
      for (int64_t c = 0; c < C; ++c)
        braid::store(st, i * C + c, xe(last + 1 + i, c));
  }
}

template <typename T>
void scanStepImpl(float *state, const T *x, const T *delta, const T *A, const T *Bm,
                  const T *Cm, const T *Dp, const int32_t *positions, const int32_t *lastRows,
                  T *y, int64_t B, int64_t S, int64_t Di, int64_t N, bool softplus,
                  bool forget) {
  // Channels (b, d) are independent, as in scanChunkImpl.
  parallelFor(B * Di, [&](int64_t lo, int64_t hi) {
    float h[kMaxState], a[kMaxState];
    for (int64_t bd = lo; bd < hi; ++bd) {
      const int64_t b = bd / Di, d = bd % Di;
      float *st = state + (b * Di + d) * N;
      const bool fresh = forget || positions[b] == 0;
      const int64_t last = lastRows ? lastRows[b] : S - 1;
      for (int64_t n = 0; n < N; ++n) {
        h[n] = fresh ? 0.0f : st[n];
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
        const T *bRow = Bm + bt * N;
        const T *cRow = Cm + bt * N;
        float out = 0.0f;
        for (int64_t n = 0; n < N; ++n)
          h[n] = expLanes(dt * a[n]) * h[n] + dtx * braid::load(bRow, n);
        for (int64_t n = 0; n < N; ++n)
          out += braid::load(cRow, n) * h[n];
        braid::store(y, bt * Di + d, out + skip * xv);
        if (t == last)
          std::memcpy(st, h, size_t(N) * sizeof(float));
      }
    }
  });
}

} // namespace

extern "C" {

void braid_k_conv_step(braid_rt *, braid_dtype dt, void *conv_state, const void *x,
                       const void *w, const void *bias, const int32_t *positions,
                       const int32_t *last_rows, void *y, int64_t batch, int64_t seq,
                       int64_t channels, int64_t kernel) {
  if (kernel < 1)
    fail("conv_step", "kernel size %lld is below 1", (long long)kernel);
  if (seq <= 0)
    return;
  checkLastRows("conv_step", last_rows, batch, seq);
  const bool forget = forgets("conv");
  withFloatType(dt, "conv_step", [&](auto tag) {
    using T = decltype(tag);
    convStepImpl<T>(out<T>(conv_state), in<T>(x), in<T>(w), bias ? in<T>(bias) : nullptr,
                    positions, last_rows, out<T>(y), batch, seq, channels, kernel, forget);
  });
}

void braid_k_scan_step(braid_rt *, braid_dtype dt, float *ssm_state, const void *x,
                       const void *delta, const void *A, const void *Bm, const void *Cm,
                       const void *D, const int32_t *positions, const int32_t *last_rows,
                       void *y, const braid_scan_params *p) {
  if (p->state > kMaxState)
    fail("scan_step", "state size %lld exceeds the supported %lld", (long long)p->state,
         (long long)kMaxState);
  if (p->seq <= 0)
    return;
  checkLastRows("scan_step", last_rows, p->batch, p->seq);
  const bool forget = forgets("ssm");
  withFloatType(dt, "scan_step", [&](auto tag) {
    using T = decltype(tag);
    scanStepImpl<T>(ssm_state, in<T>(x), in<T>(delta), in<T>(A), in<T>(Bm), in<T>(Cm),
                    in<T>(D), positions, last_rows, out<T>(y), p->batch, p->seq, p->channels,
                    p->state, p->delta_softplus != 0, forget);
  });
}

} // extern "C"
