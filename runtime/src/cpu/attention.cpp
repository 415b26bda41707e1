//===- attention.cpp - CPU kernel: attention ------------------------------===//
//
// Scaled dot-product attention with GQA, optional rotate-half RoPE and causal
// mask, in the online-softmax (flash) form: no S x Skv workspace. A block of
// up to 64 query rows of one (batch, head) is rotated once into a local buffer;
// then every key row is rotated once per block and folded into each query's
// running max m, sum l and f32 accumulator of Dv values:
//   m' = max(m, s_t), acc = acc e^(m - m') + e^(s_t - m') v_t, l likewise,
// and out = acc / l. Rotation angles p f_i are formed in double (positions
// can be large: p f_0 = p radians) and f_i = theta^(-2i/D) is computed once.
// Query row s sits at global position qOff + s (qOff = q_offset, context
// parallelism; 0 for the whole sequence): its RoPE angle and causal horizon
// (keys t <= qOff + s) use that position, keys keep positions 0..Skv-1.
//
// With BLAS (the default: BRAID_CPU_ACCUMULATE=f32) every storage type runs
// the blocked GEMM form of attention_gemm.cpp instead (bf16 / f16 on f32
// copies, staged_f32.h); what follows is the reference kernel of
// BRAID_CPU_ACCUMULATE=f64.
//
//===----------------------------------------------------------------------===//

#include "attention_gemm.h"
#include "attention_ref.h"
#include "common.h"
#include "parallel.h"
#include "rope.h"
#include "staged_f32.h"

#include <cmath>

using namespace braid::cpu;

namespace {

template <typename T>
void attentionImpl(const T *q, const T *k, const T *v, T *o, int64_t B, int64_t S, int64_t Skv,
                   int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv, bool causal, float scale,
                   double theta, int64_t qOff) {
  const Rope rope(theta, D);
  const int64_t group = Hq / Hkv;

  const int64_t QB = queryBlock(D, Dv);

  // (batch, head) pairs write disjoint outputs: split over the rank's threads.
  parallelFor(B * Hq, [&](int64_t begin, int64_t end) {
    float qbuf[kBufFloats], acc[kBufFloats];
    float kbuf[kMaxHeadDim], vbuf[kMaxHeadDim];
    float mx[kMaxQB];
    double l[kMaxQB];
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / Hq, h = item % Hq;
      const int64_t hk = h / group;
      for (int64_t s0 = 0; s0 < S; s0 += QB) {
        const int64_t qb = S - s0 < QB ? S - s0 : QB;
        for (int64_t r = 0; r < qb; ++r) {
          const int64_t s = s0 + r;
          loadRotated(q + ((b * S + s) * Hq + h) * D, qbuf + r * D, qOff + s, rope);
          mx[r] = -INFINITY;
          l[r] = 0.0;
          for (int64_t e = 0; e < Dv; ++e)
            acc[r * Dv + e] = 0.0f;
        }
        // Causal: the block's last query sees keys 0..qOff+s0+qb-1.
        const int64_t tEnd = causal && qOff + s0 + qb < Skv ? qOff + s0 + qb : Skv;
        for (int64_t t = 0; t < tEnd; ++t) {
          loadRotated(k + ((b * Skv + t) * Hkv + hk) * D, kbuf, t, rope);
          const T *vrow = v + ((b * Skv + t) * Hkv + hk) * Dv;
          for (int64_t e = 0; e < Dv; ++e)
            vbuf[e] = braid::load(vrow, e);
          for (int64_t r = 0; r < qb; ++r) {
            if (causal && t > qOff + s0 + r)
              continue;
            foldKey(scale * dot(qbuf + r * D, kbuf, D), vbuf, Dv, mx[r], l[r], acc + r * Dv);
          }
        }
        for (int64_t r = 0; r < qb; ++r) {
          T *dst = o + ((b * S + s0 + r) * Hq + h) * Dv;
          const float inv = l[r] > 0.0 ? float(1.0 / l[r]) : 0.0f; // Skv == 0: zeros
          for (int64_t e = 0; e < Dv; ++e)
            braid::store(dst, e, acc[r * Dv + e] * inv);
        }
      }
    }
  });
}

} // namespace

extern "C" void braid_k_attention(braid_rt *, braid_dtype dt, const void *q, const void *k,
                                  const void *v, void *o, const braid_attention_params *p) {
  const AttentionDims dims = AttentionDims::of(*p);
  checkAttention("attention", dims, p->q_offset);
  if (attentionByGemm(dt, dims.headDim, dims.vHeadDim)) {
    StagedF32 staged(dt, "attention", {{q, dims.qElems()}, {k, dims.kElems()}, {v, dims.vElems()}},
                     {{o, dims.outElems()}});
    attentionGemm(dims, staged.in(0), staged.in(1), staged.in(2), nullptr, nullptr, p->q_offset,
                  staged.out(0), nullptr);
    return staged.finish();
  }
  withFloatType(dt, "attention", [&](auto tag) {
    using T = decltype(tag);
    attentionImpl<T>(in<T>(q), in<T>(k), in<T>(v), out<T>(o), dims.batch, dims.seq, dims.seqKv,
                     dims.heads, dims.kvHeads, dims.headDim, dims.vHeadDim, dims.causal,
                     dims.scale, dims.ropeTheta, p->q_offset);
  });
}
