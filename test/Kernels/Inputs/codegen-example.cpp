// The example of generated code from the emitter contract (braid/codegen.h):
// must compile unchanged with the host compiler and with nvcc.
#include "braid/runtime.h"
#include "braid/codegen.h"
namespace { struct fused_0 { const float *in0; const braid::bf16 *in1; float *out0;
  BRAID_HD void operator()(int64_t i) const { float a = braid::load(in0, i); float b = braid::load(in1, i); braid::store(out0, i, braid::silu(a) * b); } }; }
void run(braid_rt *rt, float *x, braid::bf16 *y, float *z, int64_t n) { braid::launch_elementwise(rt, n, fused_0{x, y, z}); }

// Every other name of the contract, in one fused kernel.
namespace { struct fused_1 { const braid::f16 *in0; const float *in1; braid::bf16 *out0; braid::f16 *out1;
  BRAID_HD void operator()(int64_t i) const {
    float a = braid::load(in0, i), b = braid::load(in1, i);
    float r = braid::gelu(a) + braid::gelu_tanh(b) + braid::sigmoid(a) * braid::relu(b)
            + braid::exp(a) - braid::softplus(b) + braid::neg(a);
    braid::store(out0, i, r); braid::store(out1, i, r); } }; }
void run1(braid_rt *rt, const braid::f16 *x, const float *y, braid::bf16 *z, braid::f16 *w,
          int64_t n) { braid::launch_elementwise(rt, n, fused_1{x, y, z, w}); }
