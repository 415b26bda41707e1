// Test helpers compiled next to the CPU kernels (test/Kernels/cpu-kernels.py):
// generated-style fused kernels written against braid/codegen.h, and the
// numeric.h conversions, exported with a C ABI for ctypes.
#include "braid/runtime.h"
#include "braid/codegen.h"

// The example of the emitter contract, verbatim.
namespace { struct fused_0 { const float *in0; const braid::bf16 *in1; float *out0;
  BRAID_HD void operator()(int64_t i) const { float a = braid::load(in0, i); float b = braid::load(in1, i); braid::store(out0, i, braid::silu(a) * b); } }; }
void run(braid_rt *rt, float *x, braid::bf16 *y, float *z, int64_t n) { braid::launch_elementwise(rt, n, fused_0{x, y, z}); }

namespace {
// One pointwise function per braid_act code, written as the emitter would.
struct fused_act {
  int act;
  const float *in0;
  float *out0;
  BRAID_HD void operator()(int64_t i) const {
    float a = braid::load(in0, i);
    float r;
    switch (act) {
    case 0: r = braid::silu(a); break;
    case 1: r = braid::gelu(a); break;
    case 2: r = braid::gelu_tanh(a); break;
    case 3: r = braid::sigmoid(a); break;
    case 4: r = braid::relu(a); break;
    case 5: r = braid::exp(a); break;
    case 6: r = -a; break;
    default: r = braid::softplus(a); break;
    }
    braid::store(out0, i, r);
  }
};
} // namespace

extern "C" {

void braid_test_fused_example(float *x, braid::bf16 *y, float *z, int64_t n) {
  run(nullptr, x, y, z, n);
}

void braid_test_fused_act(int act, const float *x, float *y, int64_t n) {
  braid::launch_elementwise(nullptr, n, fused_act{act, x, y});
}

void braid_test_to_bf16(const float *x, uint16_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = braid::float_to_bf16(x[i]);
}
void braid_test_from_bf16(const uint16_t *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = braid::bf16_to_float(x[i]);
}
void braid_test_to_f16(const float *x, uint16_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = braid::float_to_f16(x[i]);
}
void braid_test_from_f16(const uint16_t *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = braid::f16_to_float(x[i]);
}

} // extern "C"
