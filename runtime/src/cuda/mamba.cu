//===- mamba.cu - causal depthwise conv1d and the selective scan ----------===//
//
// The whole-sequence ops are the one-chunk case of the context-parallel
// kernels of mamba_chunk.cu (one thread per output element for conv1d; one
// thread per (b, d) channel walking the sequence with its N-element state in
// registers or local memory for the scan; f32 arithmetic).
//
//===----------------------------------------------------------------------===//

#include "braid/runtime.h"

extern "C" {

// The whole sequence is one chunk: no halo (the causal zero padding), a zero
// initial state, no final state or decay wanted (mamba_chunk.cu).

void braid_k_conv1d(braid_rt *rt, braid_dtype dt, const void *x, const void *w, const void *b,
                    void *y, int64_t batch, int64_t seq, int64_t channels, int64_t kernel) {
  braid_k_conv1d_halo(rt, dt, x, nullptr, w, b, y, batch, seq, channels, kernel);
}

void braid_k_selective_scan(braid_rt *rt, braid_dtype dt, const void *x, const void *delta,
                            const void *A, const void *Bm, const void *Cm, const void *D, void *y,
                            const braid_scan_params *p) {
  braid_k_selective_scan_chunk(rt, dt, x, delta, A, Bm, Cm, D, nullptr, y, nullptr, nullptr, p);
}

} // extern "C"
