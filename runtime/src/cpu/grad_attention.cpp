//===- grad_attention.cpp - CPU backward kernel: attention ----------------===//
//
// Recomputes the softmax (nothing saved by the forward). With q', k' the
// rotated q, k (RoPE, as attention.cpp), per query row (b, h, s):
//   score_t = scale q'.k'_t,  p = softmax_t (causal: t <= s),
//   dp_t = dout.v_t,  delta = sum_t p_t dp_t (= dout.out),
//   ds_t = p_t (dp_t - delta),
//   dq' = scale sum_t ds_t k'_t,  dk'_t += scale ds_t q',  dv_t += p_t dout,
// and dq, dk are dq', dk' rotated back (the inverse rotation, the transpose).
// GQA: key/value head g = h / (Hq / Hkv) collects the group's query heads.
// Query row s sits at global position qOff + s (qOff = q_offset, context
// parallelism; 0 for the whole sequence): RoPE and the causal horizon
// t <= qOff + s use it; dk, dv are the contribution of these query rows.
//
// Pass 1, per (b, h) and block of up to 64 query rows: one sweep over the
// keys (each rotated once per block) gives each row's max m, 1/l and delta
// by the online-softmax rescaling; a second sweep accumulates dq' in f32.
// Pass 2, per (b, g) and block of keys (rotated once into a local buffer):
// every query row of the group adds its ds / p terms into f32 dk', dv
// accumulators of the block, which are stored once. Pass 2 takes the row
// statistics from pass 1 when the group has <= kStatRows query rows
// (heads / kv_heads x seq); beyond that it recomputes them per key block
// (correct, slower). Scratch: 4 x kBufFloats + 3 x kStatRows floats of stack
// per thread.
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

constexpr int64_t kStatRows = 8192;

struct RowStats {
  float m, invl, delta;
};

/// Online max / sum / delta update with one more key.
inline void onlineAdd(float score, float dp, float &m, double &l, double &dl) {
  if (score > m) {
    const double corr = std::exp(double(m) - double(score)); // 0 for the first key
    l *= corr;
    dl *= corr;
    m = score;
  }
  const double p = std::exp(double(score) - double(m));
  l += p;
  dl += p * dp;
}

inline RowStats finish(float m, double l, double dl) {
  if (!(l > 0.0))
    return {0.0f, 0.0f, 0.0f}; // no keys: p = 0, every cotangent 0
  return {m, float(1.0 / l), float(dl / l)};
}

template <typename T>
void attentionGradImpl(const T *q, const T *k, const T *v, const T *dout, T *dq, T *dk, T *dv,
                       int64_t B, int64_t S, int64_t Skv, int64_t Hq, int64_t Hkv, int64_t D,
                       int64_t Dv, bool causal, float scale, double theta, int64_t qOff) {
  const Rope rope(theta, D);
  const int64_t group = Hq / Hkv;
  const int64_t QB = queryBlock(D, Dv);
  const int64_t KB = kBufFloats / widestHeadDim(D, Dv); // >= 8
  const bool cached = group * S <= kStatRows;

  auto qRow = [&](int64_t b, int64_t s, int64_t h) { return ((b * S + s) * Hq + h); };
  auto kvRow = [&](int64_t b, int64_t t, int64_t g) { return ((b * Skv + t) * Hkv + g); };
  // kr = key t of kv head g rotated to its position, vr = its value row (f32).
  auto loadKeyValue = [&](int64_t b, int64_t t, int64_t g, float *kr, float *vr) {
    loadRotated(k + kvRow(b, t, g) * D, kr, t, rope);
    const T *vrow = v + kvRow(b, t, g) * Dv;
    for (int64_t e = 0; e < Dv; ++e)
      vr[e] = braid::load(vrow, e);
  };

  // (batch, kv head) pairs write disjoint dq, dk, dv (a kv head collects its
  // group's query heads): split over the rank's threads.
  parallelFor(B * Hkv, [&](int64_t begin, int64_t end) {
    float bufA[kBufFloats], bufB[kBufFloats], bufC[kBufFloats], bufD[kBufFloats];
    float kr[kMaxHeadDim], vr[kMaxHeadDim], qr[kMaxHeadDim], dor[kMaxHeadDim];
    float stM[kStatRows], stL[kStatRows], stD[kStatRows];
    float mx[kMaxQB];
    double l[kMaxQB], dl[kMaxQB];
    RowStats rs[kMaxQB];
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / Hkv, g = item % Hkv;
      // ---- Pass 1: row statistics and dq.
      for (int64_t hi = 0; hi < group; ++hi) {
        const int64_t h = g * group + hi;
        for (int64_t s0 = 0; s0 < S; s0 += QB) {
          const int64_t qb = S - s0 < QB ? S - s0 : QB;
          float *qbuf = bufA, *dobuf = bufB, *dqacc = bufC;
          for (int64_t r = 0; r < qb; ++r) {
            loadRotated(q + qRow(b, s0 + r, h) * D, qbuf + r * D, qOff + s0 + r, rope);
            const T *dr = dout + qRow(b, s0 + r, h) * Dv;
            for (int64_t e = 0; e < Dv; ++e)
              dobuf[r * Dv + e] = braid::load(dr, e);
            for (int64_t i = 0; i < D; ++i)
              dqacc[r * D + i] = 0.0f;
            mx[r] = -INFINITY;
            l[r] = dl[r] = 0.0;
          }
          const int64_t tEnd = causal && qOff + s0 + qb < Skv ? qOff + s0 + qb : Skv;
          for (int64_t t = 0; t < tEnd; ++t) {
            loadKeyValue(b, t, g, kr, vr);
            for (int64_t r = 0; r < qb; ++r) {
              if (causal && t > qOff + s0 + r)
                continue;
              onlineAdd(scale * dot(qbuf + r * D, kr, D), dot(dobuf + r * Dv, vr, Dv), mx[r],
                        l[r], dl[r]);
            }
          }
          for (int64_t r = 0; r < qb; ++r)
            rs[r] = finish(mx[r], l[r], dl[r]);
          for (int64_t t = 0; t < tEnd; ++t) {
            loadKeyValue(b, t, g, kr, vr);
            for (int64_t r = 0; r < qb; ++r) {
              if (causal && t > qOff + s0 + r)
                continue;
              const float p = std::exp(scale * dot(qbuf + r * D, kr, D) - rs[r].m) * rs[r].invl;
              const float ds = p * (dot(dobuf + r * Dv, vr, Dv) - rs[r].delta);
              float *a = dqacc + r * D;
              for (int64_t i = 0; i < D; ++i)
                a[i] += ds * kr[i];
            }
          }
          for (int64_t r = 0; r < qb; ++r) {
            storeUnrotated(dqacc + r * D, dq + qRow(b, s0 + r, h) * D, scale, qOff + s0 + r,
                           rope);
            if (cached) {
              const int64_t row = hi * S + s0 + r;
              stM[row] = rs[r].m;
              stL[row] = rs[r].invl;
              stD[row] = rs[r].delta;
            }
          }
        }
      }
      // ---- Pass 2: dk, dv per block of keys.
      for (int64_t t0 = 0; t0 < Skv; t0 += KB) {
        const int64_t kb = Skv - t0 < KB ? Skv - t0 : KB;
        float *kbuf = bufA, *vbuf = bufB, *dkacc = bufC, *dvacc = bufD;
        for (int64_t j = 0; j < kb; ++j) {
          loadRotated(k + kvRow(b, t0 + j, g) * D, kbuf + j * D, t0 + j, rope);
          const T *vrow = v + kvRow(b, t0 + j, g) * Dv;
          for (int64_t e = 0; e < Dv; ++e) {
            vbuf[j * Dv + e] = braid::load(vrow, e);
            dvacc[j * Dv + e] = 0.0f;
          }
          for (int64_t i = 0; i < D; ++i)
            dkacc[j * D + i] = 0.0f;
        }
        for (int64_t hi = 0; hi < group; ++hi) {
          const int64_t h = g * group + hi;
          // Causal: rows before global position t0 see none of the block.
          for (int64_t s = causal && t0 > qOff ? t0 - qOff : 0; s < S; ++s) {
            const int64_t pos = qOff + s;
            loadRotated(q + qRow(b, s, h) * D, qr, pos, rope);
            const T *dr = dout + qRow(b, s, h) * Dv;
            for (int64_t e = 0; e < Dv; ++e)
              dor[e] = braid::load(dr, e);
            RowStats st;
            if (cached) {
              const int64_t row = hi * S + s;
              st = {stM[row], stL[row], stD[row]};
            } else { // recompute over every visible key
              float m = -INFINITY;
              double ll = 0.0, dd = 0.0;
              const int64_t tEnd = causal && pos + 1 < Skv ? pos + 1 : Skv;
              for (int64_t t = 0; t < tEnd; ++t) {
                loadKeyValue(b, t, g, kr, vr);
                onlineAdd(scale * dot(qr, kr, D), dot(dor, vr, Dv), m, ll, dd);
              }
              st = finish(m, ll, dd);
            }
            const int64_t jEnd = causal ? (pos - t0 + 1 < kb ? pos - t0 + 1 : kb) : kb;
            for (int64_t j = 0; j < jEnd; ++j) {
              const float p = std::exp(scale * dot(qr, kbuf + j * D, D) - st.m) * st.invl;
              const float ds = p * (dot(dor, vbuf + j * Dv, Dv) - st.delta);
              float *ak = dkacc + j * D, *av = dvacc + j * Dv;
              for (int64_t i = 0; i < D; ++i)
                ak[i] += ds * qr[i];
              for (int64_t e = 0; e < Dv; ++e)
                av[e] += p * dor[e];
            }
          }
        }
        for (int64_t j = 0; j < kb; ++j) {
          storeUnrotated(dkacc + j * D, dk + kvRow(b, t0 + j, g) * D, scale, t0 + j, rope);
          T *dst = dv + kvRow(b, t0 + j, g) * Dv;
          for (int64_t e = 0; e < Dv; ++e)
            braid::store(dst, e, dvacc[j * Dv + e]);
        }
      }
    }
  });
}

} // namespace

extern "C" void braid_k_attention_grad(braid_rt *, braid_dtype dt, const void *q,
                                       const void *k, const void *v, const void *dout, void *dq,
                                       void *dk, void *dv, const braid_attention_params *p) {
  const AttentionDims dims = AttentionDims::of(*p);
  checkAttention("attention_grad", dims, p->q_offset);
  if (attentionByGemm(dt, dims.headDim, dims.vHeadDim)) {
    StagedF32 staged(
        dt, "attention_grad",
        {{q, dims.qElems()}, {k, dims.kElems()}, {v, dims.vElems()}, {dout, dims.outElems()}},
        {{dq, dims.qElems()}, {dk, dims.kElems()}, {dv, dims.vElems()}});
    attentionGradGemm(dims, staged.in(0), staged.in(1), staged.in(2), staged.in(3), nullptr,
                      nullptr, p->q_offset, nullptr, nullptr, staged.out(0), staged.out(1),
                      staged.out(2));
    return staged.finish();
  }
  withFloatType(dt, "attention_grad", [&](auto tag) {
    using T = decltype(tag);
    attentionGradImpl<T>(in<T>(q), in<T>(k), in<T>(v), in<T>(dout), out<T>(dq), out<T>(dk),
                         out<T>(dv), dims.batch, dims.seq, dims.seqKv, dims.heads, dims.kvHeads,
                         dims.headDim, dims.vHeadDim, dims.causal, dims.scale, dims.ropeTheta,
                         p->q_offset);
  });
}
