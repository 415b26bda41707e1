//===- attention_block.cpp - CPU kernels: attention by key blocks ---------===//
//
// Context parallelism (ring / zigzag): every query row and every key row
// carries its global position (q_pos [S], k_pos [Skv], int64), which is its
// RoPE angle and, with `causal`, its mask: key t is visible to query s iff
// k_pos[t] <= q_pos[s]. A rank holds its query rows and sees the keys and
// values block by block; the kernels here are the pieces of that loop:
//
//  - braid_k_sequence_positions: the positions of a range of stored rows,
//    natural order or zigzag over n ranks (2n chunks of c = S / 2n rows
//    stored as chunks 0, 2n-1, 1, 2n-2, ...: stored row j*2c + w is position
//    j*c + w for w < c, else (2n-1-j)*c + (w - c)).
//  - braid_k_attention_block: attention over one block of keys in the
//    online-softmax form of attention.cpp (no S x Skv workspace). A block of
//    up to 64 query rows of one (batch, head) is rotated once into a local
//    buffer; every key row the block can see is rotated once per block and
//    folded into each visible row's running max m, sum l (double) and f32
//    accumulator: m' = max(m, s_t), acc = acc e^(m - m') + e^(s_t - m') v_t.
//    Then out = acc / l and lse = m + log l (a row that sees no key: 0 and
//    -inf). Positions are not sorted globally (zigzag) but monotone within
//    chunks, so a key is skipped for the whole block when k_pos[t] exceeds
//    the largest query position of the block.
//  - braid_k_attention_merge: (out, lse) <- the log-sum-exp merge with a
//    block's (out, lse): lse' = log(e^lse + e^lse_b),
//    out' = e^(lse - lse') out + e^(lse_b - lse') out_b (weights in double).
//  - braid_k_attention_delta: delta = dout . out per row (double sum).
//  - braid_k_attention_block_grad: one key block's share of the backward,
//    given the final lse and delta of each query row: per (b, h) and block of
//    query rows (rotated once), each visible key (rotated once per block, its
//    cos / sin kept for the rotation back) gives per row
//      p = exp(scale q'.k'_t - lse),  ds = p (dout.v_t - delta),
//    dq'_row += ds k'_t (f32, per row of the block), and over the block's rows
//    dk'_t += ds q', dv_t += p dout (f32, local); then dk_t += scale dk'_t
//    rotated back (the transposed rotation) and dv_t += dv. At the end of the
//    block dq += scale dq' rotated back. dq, dk, dv are f32 accumulators the
//    caller zeroes: the kernel adds. Rows with lse = -inf see no key and
//    contribute nothing.
//
// RoPE is rotate-half (rope.h, shared with attention.cpp): f_i = theta^(-2i/D),
// angles p f_i in double, their cos / sin computed once per row and call,
// theta <= 0: no rotation. GQA: query head h reads kv head h / (Hq / Hkv).
//
// braid_k_attention_block and braid_k_attention_block_grad with BLAS (the
// default: BRAID_CPU_ACCUMULATE=f32) run the blocked GEMM form of
// attention_gemm.cpp instead, threaded by (batch, kv head), bf16 / f16 inputs
// on f32 copies (staged_f32.h); the loops here are the reference of
// BRAID_CPU_ACCUMULATE=f64.
//
//===----------------------------------------------------------------------===//

#include "attention_gemm.h"
#include "attention_ref.h"
#include "common.h"
#include "rope.h"
#include "staged_f32.h"

#include <cmath>

using namespace braid::cpu;

namespace {

void checkShapes(const char *kernel, const braid_attention_params &p) {
  if (p.batch < 0 || p.seq < 0 || p.seq_kv < 0 || p.head_dim < 0 || p.v_head_dim < 0)
    fail(kernel, "negative size (batch %lld, seq %lld, seq_kv %lld, head dims %lld / %lld)",
         (long long)p.batch, (long long)p.seq, (long long)p.seq_kv, (long long)p.head_dim,
         (long long)p.v_head_dim);
  checkHeads(kernel, p.heads, p.kv_heads, p.head_dim, p.v_head_dim);
  checkRope(kernel, p.rope_theta, p.head_dim);
  // The rows' positions are the arrays: an offset would be a second source.
  if (p.q_offset != 0)
    fail(kernel, "query offset %lld: the key-block kernels take positions instead",
         (long long)p.q_offset);
}

/// Calls block(b, h, hk, s0, qb) for every block of up to QB query rows
/// [s0, s0 + qb) of each (batch, query head) in order; hk is the head's kv head.
template <typename Block>
void forEachQueryBlock(int64_t B, int64_t Hq, int64_t Hkv, int64_t S, int64_t QB, Block &&block) {
  const int64_t group = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t s0 = 0; s0 < S; s0 += QB)
        block(b, h, h / group, s0, S - s0 < QB ? S - s0 : QB);
}

template <typename T>
void attentionBlockImpl(const T *q, const T *k, const T *v, const int64_t *qPos,
                        const int64_t *kPos, float *o, float *lse, int64_t B, int64_t S,
                        int64_t Skv, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv, bool causal,
                        float scale, double theta) {
  const Rope rope(theta, D);
  const int64_t QB = queryBlock(D, Dv);
  float qbuf[kBufFloats], acc[kBufFloats];
  float kbuf[kMaxHeadDim], vbuf[kMaxHeadDim];
  const AngleTable qAngles(rope, qPos, S), kAngles(rope, kPos, Skv);
  float mx[kMaxQB];
  double l[kMaxQB];

  forEachQueryBlock(B, Hq, Hkv, S, QB, [&](auto b, auto h, auto hk, auto s0, auto qb) {
    int64_t qMax = INT64_MIN;
    for (int64_t r = 0; r < qb; ++r) {
      const int64_t s = s0 + r;
      rotate(q + ((b * S + s) * Hq + h) * D, qbuf + r * D, qAngles.cosOf(s),
             qAngles.sinOf(s), rope);
      qMax = qPos[s] > qMax ? qPos[s] : qMax;
      mx[r] = -INFINITY;
      l[r] = 0.0;
      for (int64_t e = 0; e < Dv; ++e)
        acc[r * Dv + e] = 0.0f;
    }
    for (int64_t t = 0; t < Skv; ++t) {
      const int64_t kp = kPos[t];
      if (causal && kp > qMax) // no row of the block sees key t
        continue;
      rotate(k + ((b * Skv + t) * Hkv + hk) * D, kbuf, kAngles.cosOf(t), kAngles.sinOf(t),
             rope);
      const T *vrow = v + ((b * Skv + t) * Hkv + hk) * Dv;
      for (int64_t e = 0; e < Dv; ++e)
        vbuf[e] = braid::load(vrow, e);
      for (int64_t r = 0; r < qb; ++r) {
        if (causal && kp > qPos[s0 + r])
          continue;
        foldKey(scale * dot(qbuf + r * D, kbuf, D), vbuf, Dv, mx[r], l[r], acc + r * Dv);
      }
    }
    for (int64_t r = 0; r < qb; ++r) {
      const int64_t row = (b * S + s0 + r) * Hq + h;
      float *dst = o + row * Dv;
      const bool any = l[r] > 0.0;
      const float inv = any ? float(1.0 / l[r]) : 0.0f;
      for (int64_t e = 0; e < Dv; ++e)
        dst[e] = acc[r * Dv + e] * inv;
      lse[row] = any ? float(double(mx[r]) + std::log(l[r])) : -INFINITY;
    }
  });
}

template <typename T>
void attentionBlockGradImpl(const T *q, const T *k, const T *v, const T *dout,
                            const int64_t *qPos, const int64_t *kPos, const float *lse,
                            const float *delta, float *dq, float *dk, float *dv, int64_t B,
                            int64_t S, int64_t Skv, int64_t Hq, int64_t Hkv, int64_t D,
                            int64_t Dv, bool causal, float scale, double theta) {
  const Rope rope(theta, D);
  const int64_t QB = queryBlock(D, Dv);
  float qbuf[kBufFloats], dobuf[kBufFloats], dqacc[kBufFloats];
  float kr[kMaxHeadDim], vr[kMaxHeadDim], dkacc[kMaxHeadDim], dvacc[kMaxHeadDim];
  const AngleTable qAngles(rope, qPos, S), kAngles(rope, kPos, Skv);
  float rowLse[kMaxQB], rowDelta[kMaxQB];
  bool live[kMaxQB];

  forEachQueryBlock(B, Hq, Hkv, S, QB, [&](auto b, auto h, auto hk, auto s0, auto qb) {
    int64_t qMax = INT64_MIN;
    bool anyLive = false;
    for (int64_t r = 0; r < qb; ++r) {
      const int64_t s = s0 + r, row = (b * S + s) * Hq + h;
      rowLse[r] = lse[row];
      rowDelta[r] = delta[row];
      live[r] = rowLse[r] != -INFINITY; // -inf: the row sees no key at all
      if (!live[r])
        continue;
      anyLive = true;
      qMax = qPos[s] > qMax ? qPos[s] : qMax;
      rotate(q + row * D, qbuf + r * D, qAngles.cosOf(s), qAngles.sinOf(s), rope);
      const T *dr = dout + row * Dv;
      for (int64_t e = 0; e < Dv; ++e)
        dobuf[r * Dv + e] = braid::load(dr, e);
      for (int64_t i = 0; i < D; ++i)
        dqacc[r * D + i] = 0.0f;
    }
    if (!anyLive)
      return;
    for (int64_t t = 0; t < Skv; ++t) {
      const int64_t kp = kPos[t];
      if (causal && kp > qMax)
        continue;
      const int64_t kvRow = (b * Skv + t) * Hkv + hk;
      const float *kc = kAngles.cosOf(t), *ks = kAngles.sinOf(t);
      rotate(k + kvRow * D, kr, kc, ks, rope);
      const T *vrow = v + kvRow * Dv;
      for (int64_t e = 0; e < Dv; ++e) {
        vr[e] = braid::load(vrow, e);
        dvacc[e] = 0.0f;
      }
      for (int64_t i = 0; i < D; ++i)
        dkacc[i] = 0.0f;
      bool touched = false;
      for (int64_t r = 0; r < qb; ++r) {
        if (!live[r] || (causal && kp > qPos[s0 + r]))
          continue;
        touched = true;
        const float *qr = qbuf + r * D, *dor = dobuf + r * Dv;
        const float p = std::exp(scale * dot(qr, kr, D) - rowLse[r]);
        const float ds = p * (dot(dor, vr, Dv) - rowDelta[r]);
        float *a = dqacc + r * D;
        for (int64_t i = 0; i < D; ++i) {
          a[i] += ds * kr[i];
          dkacc[i] += ds * qr[i];
        }
        for (int64_t e = 0; e < Dv; ++e)
          dvacc[e] += p * dor[e];
      }
      if (!touched)
        continue;
      addUnrotated(dkacc, dk + kvRow * D, scale, kc, ks, rope);
      float *dvrow = dv + kvRow * Dv;
      for (int64_t e = 0; e < Dv; ++e)
        dvrow[e] += dvacc[e];
    }
    for (int64_t r = 0; r < qb; ++r) {
      if (!live[r])
        continue;
      const int64_t s = s0 + r;
      addUnrotated(dqacc + r * D, dq + ((b * S + s) * Hq + h) * D, scale, qAngles.cosOf(s),
                   qAngles.sinOf(s), rope);
    }
  });
}

} // namespace

extern "C" void braid_k_sequence_positions(braid_rt *, int64_t *pos, int64_t count,
                                           int64_t start, int64_t seq, int64_t zigzag_ranks) {
  if (zigzag_ranks < 0)
    fail("sequence_positions", "negative zigzag rank count %lld", (long long)zigzag_ranks);
  if (count < 0 || start < 0 || start > seq - count)
    fail("sequence_positions", "rows %lld + %lld outside the sequence of %lld rows",
         (long long)start, (long long)count, (long long)seq);
  if (zigzag_ranks == 0) {
    for (int64_t i = 0; i < count; ++i)
      pos[i] = start + i;
    return;
  }
  const int64_t n = zigzag_ranks;
  if (seq % (2 * n) != 0)
    fail("sequence_positions", "zigzag over %lld ranks needs seq a multiple of %lld, got %lld",
         (long long)n, (long long)(2 * n), (long long)seq);
  const int64_t c = seq / (2 * n);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t row = start + i, j = row / (2 * c), w = row % (2 * c);
    pos[i] = w < c ? j * c + w : (2 * n - 1 - j) * c + (w - c);
  }
}

extern "C" void braid_k_attention_block(braid_rt *, braid_dtype dt, const void *q, const void *k,
                                        const void *v, const int64_t *q_pos,
                                        const int64_t *k_pos, float *out, float *lse,
                                        const braid_attention_params *p) {
  checkShapes("attention_block", *p);
  const AttentionDims dims = AttentionDims::of(*p);
  if (attentionByGemm(dt, dims.headDim, dims.vHeadDim)) {
    // out and lse are f32 in every storage type: only the inputs are staged.
    StagedF32 staged(dt, "attention_block",
                     {{q, dims.qElems()}, {k, dims.kElems()}, {v, dims.vElems()}}, {});
    return attentionGemm(dims, staged.in(0), staged.in(1), staged.in(2), q_pos, k_pos, 0, out,
                         lse);
  }
  withFloatType(dt, "attention_block", [&](auto tag) {
    using T = decltype(tag);
    attentionBlockImpl<T>(in<T>(q), in<T>(k), in<T>(v), q_pos, k_pos, out, lse, dims.batch,
                          dims.seq, dims.seqKv, dims.heads, dims.kvHeads, dims.headDim,
                          dims.vHeadDim, dims.causal, dims.scale, dims.ropeTheta);
  });
}

extern "C" void braid_k_attention_merge(braid_rt *, float *out, float *lse,
                                        const float *block_out, const float *block_lse,
                                        int64_t rows, int64_t v_head_dim) {
  if (rows < 0 || v_head_dim < 0)
    fail("attention_merge", "negative size (rows %lld, v_head_dim %lld)", (long long)rows,
         (long long)v_head_dim);
  for (int64_t r = 0; r < rows; ++r) {
    const float a = lse[r], bl = block_lse[r];
    float *o = out + r * v_head_dim;
    const float *ob = block_out + r * v_head_dim;
    if (bl == -INFINITY) { // the block adds nothing; two -inf: (0, -inf)
      if (a == -INFINITY)
        for (int64_t e = 0; e < v_head_dim; ++e)
          o[e] = 0.0f;
      continue;
    }
    if (a == -INFINITY) { // nothing so far: take the block's
      for (int64_t e = 0; e < v_head_dim; ++e)
        o[e] = ob[e];
      lse[r] = bl;
      continue;
    }
    const double m = a > bl ? a : bl;
    const double merged = m + std::log(std::exp(double(a) - m) + std::exp(double(bl) - m));
    const float wa = float(std::exp(double(a) - merged));
    const float wb = float(std::exp(double(bl) - merged));
    for (int64_t e = 0; e < v_head_dim; ++e)
      o[e] = wa * o[e] + wb * ob[e];
    lse[r] = float(merged);
  }
}

extern "C" void braid_k_attention_delta(braid_rt *, braid_dtype dt, const void *dout,
                                        const float *out, float *delta, int64_t rows,
                                        int64_t v_head_dim) {
  if (rows < 0 || v_head_dim < 0)
    fail("attention_delta", "negative size (rows %lld, v_head_dim %lld)", (long long)rows,
         (long long)v_head_dim);
  withFloatType(dt, "attention_delta", [&](auto tag) {
    using T = decltype(tag);
    const T *g = in<T>(dout);
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0.0;
      for (int64_t e = 0; e < v_head_dim; ++e)
        sum += double(braid::load(g, r * v_head_dim + e)) * double(out[r * v_head_dim + e]);
      delta[r] = float(sum);
    }
  });
}

extern "C" void braid_k_attention_block_grad(braid_rt *, braid_dtype dt, const void *q,
                                             const void *k, const void *v, const void *dout,
                                             const int64_t *q_pos, const int64_t *k_pos,
                                             const float *lse, const float *delta, float *dq,
                                             float *dk, float *dv,
                                             const braid_attention_params *p) {
  checkShapes("attention_block_grad", *p);
  const AttentionDims dims = AttentionDims::of(*p);
  if (attentionByGemm(dt, dims.headDim, dims.vHeadDim)) {
    // dq, dk, dv are f32 accumulators in every storage type.
    StagedF32 staged(
        dt, "attention_block_grad",
        {{q, dims.qElems()}, {k, dims.kElems()}, {v, dims.vElems()}, {dout, dims.outElems()}}, {});
    return attentionGradGemm(dims, staged.in(0), staged.in(1), staged.in(2), staged.in(3),
                             q_pos, k_pos, 0, lse, delta, dq, dk, dv);
  }
  withFloatType(dt, "attention_block_grad", [&](auto tag) {
    using T = decltype(tag);
    attentionBlockGradImpl<T>(in<T>(q), in<T>(k), in<T>(v), in<T>(dout), q_pos, k_pos, lse,
                              delta, dq, dk, dv, dims.batch, dims.seq, dims.seqKv, dims.heads,
                              dims.kvHeads, dims.headDim, dims.vHeadDim, dims.causal, dims.scale,
                              dims.ropeTheta);
  });
}
