//===- grad_elementwise.cpp - CPU backward kernels: sum_rows, activations -===//
//
// sum_rows: column sums in double over blocks of kColBlock columns (one pass
// over the rows per block), stored once. activation_grad: dx = dy * act'(x)
// with the derivative formulas below, in f32 like the forward functions of
// braid/numeric.h.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <cmath>

using namespace braid::cpu;

namespace {

constexpr int64_t kColBlock = 1024; // double accumulators of sum_rows (8 KiB)

template <typename T> void sumRowsImpl(const T *x, T *y, int64_t rows, int64_t n) {
  double acc[kColBlock];
  for (int64_t c0 = 0; c0 < n; c0 += kColBlock) {
    const int64_t cb = n - c0 < kColBlock ? n - c0 : kColBlock;
    for (int64_t c = 0; c < cb; ++c)
      acc[c] = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const T *xr = x + r * n + c0;
      for (int64_t c = 0; c < cb; ++c)
        acc[c] += braid::load(xr, c);
    }
    for (int64_t c = 0; c < cb; ++c)
      braid::store(y, c0 + c, float(acc[c]));
  }
}

// Derivatives (f32).
//   silu:      s (1 + x (1 - s)),  s = sigmoid(x)
//   gelu:      Phi(x) + x phi(x)   (erf form)
//   gelu_tanh: 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2),
//              t = tanh(c (x + a x^3)), c = sqrt(2/pi), a = 0.044715
//   sigmoid:   s (1 - s)
//   relu:      1 for x > 0, 0 for x <= 0 (NaN stays NaN)
//   exp:       exp(x);  neg: -1 (not emitted by the compiler, supported anyway)
inline float dsilu(float x) {
  const float s = braid::sigmoid(x);
  return s * (1.0f + x * (1.0f - s));
}
inline float dgelu(float x) {
  const float cdf = 0.5f * (1.0f + ::erff(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * ::expf(-0.5f * x * x);
  return cdf + x * pdf;
}
inline float dgeluTanh(float x) {
  const float c = 0.79788456080286536f, a = 0.044715f;
  const float t = ::tanhf(c * (x + a * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * a * x * x);
}
inline float dsigmoid(float x) {
  const float s = braid::sigmoid(x);
  return s * (1.0f - s);
}
inline float drelu(float x) { return x > 0.0f ? 1.0f : (x <= 0.0f ? 0.0f : x); }

template <typename T, typename F> void gradLoop(F f, const T *x, const T *dy, T *dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    braid::store(dx, i, braid::load(dy, i) * f(braid::load(x, i)));
}

template <typename T> void activationGradImpl(int act, const T *x, const T *dy, T *dx, int64_t n) {
  switch (act) { // one loop per function so that each inlines
  case BRAID_ACT_SILU: gradLoop(dsilu, x, dy, dx, n); break;
  case BRAID_ACT_GELU: gradLoop(dgelu, x, dy, dx, n); break;
  case BRAID_ACT_GELU_TANH: gradLoop(dgeluTanh, x, dy, dx, n); break;
  case BRAID_ACT_SIGMOID: gradLoop(dsigmoid, x, dy, dx, n); break;
  case BRAID_ACT_RELU: gradLoop(drelu, x, dy, dx, n); break;
  case BRAID_ACT_EXP: gradLoop([](float v) { return braid::exp(v); }, x, dy, dx, n); break;
  case BRAID_ACT_NEG: gradLoop([](float) { return -1.0f; }, x, dy, dx, n); break;
  }
}

} // namespace

extern "C" {

void braid_k_sum_rows(braid_rt *, braid_dtype dt, const void *x, void *y, int64_t rows,
                      int64_t n) {
  withFloatType(dt, "sum_rows", [&](auto tag) {
    using T = decltype(tag);
    sumRowsImpl<T>(in<T>(x), out<T>(y), rows, n);
  });
}

void braid_k_activation_grad(braid_rt *, braid_dtype dt, braid_act act, const void *x,
                             const void *dy, void *dx, int64_t n) {
  checkAct(act, "activation_grad");
  withFloatType(dt, "activation_grad", [&](auto tag) {
    using T = decltype(tag);
    activationGradImpl<T>(act, in<T>(x), in<T>(dy), out<T>(dx), n);
  });
}

} // extern "C"
