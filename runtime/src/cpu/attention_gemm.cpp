//===- attention_gemm.cpp - attention as blocked f32 GEMMs ----------------===//
//
// The f32 path of every attention kernel (whole sequence, query chunk at an
// offset, ring / zigzag key blocks; causal or not, GQA, RoPE; bf16 and f16
// storage run it on f32 copies, staged_f32.h), where the reference kernels
// fold one key at a time into each query row (a few GFLOP/s). Work is split
// over the rank's threads by (batch, kv head): an item owns its kv head's
// dk / dv and its group's query heads' outputs, and runs in a fixed order
// whatever the thread count, with single-threaded sgemm calls (SerialBlas),
// so results do not depend on --threads.
//
// Per item, K' (K rotated by RoPE) and V of the kv head are loaded once as
// f32 [Skv, D] and [Skv, Dv]. Per query head of the group and block of up
// to kQB query rows (Q' rotated, [qb, D]):
//   forward   S = Q' K'^T (sgemm) over the keys the block can see, masked
//             (causal: k_pos <= q_pos) and scaled; per row m = max, P =
//             e^(S - m), l = sum P (double); O = P V (sgemm); out = O / l,
//             lse = m + log l.
//   backward  P as above, normalized by 1 / l (or P = e^(S - lse) from the
//             given lse); dP = dO V^T (sgemm); delta = sum_t P dP (double;
//             or the given delta); dS = P (dP - delta); dQ' = dS K',
//             dK' += dS^T Q', dV += P^T dO (sgemm, accumulated in f32 over
//             the group's heads and query blocks in order); dq, dk are
//             scale dQ', scale dK' rotated back.
// The visible keys of a block are the prefix of keys up to the last one
// with k_pos <= the block's largest q_pos (all keys without a mask); masked
// entries inside it are -inf scores. Positions are monotone in every layout
// the compiler emits (natural, chunk at an offset, a zigzag rank's rows), so
// little masked work is done; any order stays correct.
//
// Memory: scratch per thread from the arena (scratch.h), in floats,
//   forward  (Skv + kQB)(D + Dv) + kQB Skv,
//   backward 2 (Skv + kQB)(D + Dv) + 2 kQB Skv,
// plus (S + Skv) positions; e.g. 1.2 MB per thread for the backward of
// Skv = 1024, D = Dv = 64.
//
//===----------------------------------------------------------------------===//

#include "attention_gemm.h"

#include "blas.h"
#include "common.h"
#include "parallel.h"
#include "rope.h"
#include "scratch.h"
#include "softmax_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace braid::cpu {

namespace {

constexpr int64_t kQB = 64; // query rows per block

/// sum_t a[t] b[t] over [0, n) in double (8 lanes).
inline double dotDouble(const float *a, const float *b, int64_t n) {
  double lane[8] = {};
  int64_t t = 0;
  for (; t + 8 <= n; t += 8)
    for (int64_t j = 0; j < 8; ++j)
      lane[j] += double(a[t + j]) * double(b[t + j]);
  for (int64_t j = 0; t < n; ++t, ++j)
    lane[j] += double(a[t]) * double(b[t]);
  double sum = 0.0;
  for (int64_t j = 0; j < 8; ++j)
    sum += lane[j];
  return sum;
}

/// One call's shapes, positions and rotations.
struct Problem {
  const AttentionDims &d;
  const int64_t *qPos, *kPos;
  bool kSorted; // key positions non-decreasing: a row's visible keys are a prefix
  const Rope &rope;
  const AngleTable &qAngles, &kAngles;
  int64_t group;

  int64_t qRow(int64_t b, int64_t s, int64_t h) const { return (b * d.seq + s) * d.heads + h; }
  int64_t kvRow(int64_t b, int64_t t, int64_t g) const {
    return (b * d.seqKv + t) * d.kvHeads + g;
  }

  /// K' and V of kv head g of batch b as f32 [Skv, D], [Skv, Dv].
  void loadKeys(const float *k, const float *v, int64_t b, int64_t g, float *kr,
                float *vf) const {
    for (int64_t t = 0; t < d.seqKv; ++t) {
      const int64_t row = kvRow(b, t, g);
      rotate(k + row * d.headDim, kr + t * d.headDim, kAngles.cosOf(t), kAngles.sinOf(t), rope);
      std::memcpy(vf + t * d.vHeadDim, v + row * d.vHeadDim, size_t(d.vHeadDim) * sizeof(float));
    }
  }

  /// Keys [0, end) hold every key that a query at position <= qMax sees.
  int64_t keyEnd(int64_t qMax) const {
    if (!d.causal)
      return d.seqKv;
    int64_t end = d.seqKv;
    while (end > 0 && kPos[end - 1] > qMax)
      --end;
    return end;
  }

  /// sc[r, t] (row stride tEnd) = q'_r . k'_t over keys [0, tEnd).
  void scores(const float *qr, const float *kr, int64_t qb, int64_t tEnd, float *sc) const {
    sgemm(false, true, qb, tEnd, d.headDim, qr, d.headDim, kr, d.headDim, 0.0f, sc, tEnd);
  }

  /// Scales the scores of query s (keys [0, tEnd)) and masks them: returns n
  /// such that keys >= n are masked (zeroed here, skipped by the caller);
  /// masked keys below n (unsorted positions only) are -inf.
  int64_t scaleRow(float *row, int64_t s, int64_t tEnd) const {
    int64_t n = tEnd;
    if (d.causal && kSorted)
      n = std::upper_bound(kPos, kPos + tEnd, qPos[s]) - kPos;
    if (d.causal && !kSorted) {
      const int64_t qp = qPos[s];
      for (int64_t t = 0; t < n; ++t)
        row[t] = kPos[t] > qp ? -INFINITY : d.scale * row[t];
    } else {
      for (int64_t t = 0; t < n; ++t)
        row[t] = d.scale * row[t];
    }
    std::fill(row + n, row + tEnd, 0.0f);
    return n;
  }
};

/// Fills qPos / kPos with qOffset + s and t where the caller gave none.
struct Positions {
  const int64_t *q, *k;
  Positions(const AttentionDims &d, const int64_t *qPos, const int64_t *kPos, int64_t qOffset,
            int64_t *buf) {
    if (!qPos) {
      for (int64_t s = 0; s < d.seq; ++s)
        buf[s] = qOffset + s;
      qPos = buf;
    }
    if (!kPos) {
      for (int64_t t = 0; t < d.seqKv; ++t)
        buf[d.seq + t] = t;
      kPos = buf + d.seq;
    }
    q = qPos;
    k = kPos;
  }
};

/// Rotates the query rows [s0, s0 + qb) of head h into qr; returns the
/// largest position among the rows with live[r] (all when live is null).
int64_t loadQueries(const Problem &p, const float *q, int64_t b, int64_t h, int64_t s0,
                    int64_t qb, float *qr, const bool *live) {
  const int64_t D = p.d.headDim;
  int64_t qMax = INT64_MIN;
  for (int64_t r = 0; r < qb; ++r) {
    const int64_t s = s0 + r;
    rotate(q + p.qRow(b, s, h) * D, qr + r * D, p.qAngles.cosOf(s), p.qAngles.sinOf(s), p.rope);
    if (!live || live[r])
      qMax = std::max(qMax, p.qPos[s]);
  }
  return qMax;
}

void forwardItem(const Problem &p, const float *q, const float *k, const float *v, int64_t b,
                 int64_t g, float *ws, float *out, float *lse) {
  const AttentionDims &d = p.d;
  const int64_t D = d.headDim, Dv = d.vHeadDim;
  float *kr = ws, *vf = kr + d.seqKv * D, *qr = vf + d.seqKv * Dv, *ob = qr + kQB * D,
        *sc = ob + kQB * Dv;
  float rowM[kQB];
  double rowL[kQB];
  p.loadKeys(k, v, b, g, kr, vf);
  for (int64_t hi = 0; hi < p.group; ++hi) {
    const int64_t h = g * p.group + hi;
    for (int64_t s0 = 0; s0 < d.seq; s0 += kQB) {
      const int64_t qb = std::min(kQB, d.seq - s0);
      const int64_t tEnd = p.keyEnd(loadQueries(p, q, b, h, s0, qb, qr, nullptr));
      if (tEnd > 0) {
        p.scores(qr, kr, qb, tEnd, sc);
        for (int64_t r = 0; r < qb; ++r) {
          float *row = sc + r * tEnd;
          softmaxRow(row, p.scaleRow(row, s0 + r, tEnd), rowM[r], rowL[r]);
        }
        sgemm(false, false, qb, Dv, tEnd, sc, tEnd, vf, Dv, 0.0f, ob, Dv); // O = P V
      }
      for (int64_t r = 0; r < qb; ++r) {
        const int64_t row = p.qRow(b, s0 + r, h);
        const bool any = tEnd > 0 && rowL[r] > 0.0;
        const float inv = any ? float(1.0 / rowL[r]) : 0.0f;
        for (int64_t e = 0; e < Dv; ++e)
          out[row * Dv + e] = any ? ob[r * Dv + e] * inv : 0.0f;
        if (lse)
          lse[row] = any ? float(double(rowM[r]) + std::log(rowL[r])) : -INFINITY;
      }
    }
  }
}

void backwardItem(const Problem &p, const float *q, const float *k, const float *v,
                  const float *dout, const float *lse, const float *delta, int64_t b, int64_t g,
                  float *ws, float *dq, float *dk, float *dv) {
  const AttentionDims &d = p.d;
  const int64_t D = d.headDim, Dv = d.vHeadDim, Skv = d.seqKv;
  const bool given = lse != nullptr; // block_grad: statistics given, accumulate
  float *kr = ws, *vf = kr + Skv * D, *dkr = vf + Skv * Dv, *dvf = dkr + Skv * D;
  float *qr = dvf + Skv * Dv, *dob = qr + kQB * D, *dqr = dob + kQB * Dv;
  float *pm = dqr + kQB * D, *ds = pm + kQB * Skv;
  bool live[kQB];
  p.loadKeys(k, v, b, g, kr, vf);
  std::fill(dkr, dkr + Skv * D, 0.0f);
  std::fill(dvf, dvf + Skv * Dv, 0.0f);
  for (int64_t hi = 0; hi < p.group; ++hi) {
    const int64_t h = g * p.group + hi;
    for (int64_t s0 = 0; s0 < d.seq; s0 += kQB) {
      const int64_t qb = std::min(kQB, d.seq - s0);
      bool anyLive = false;
      for (int64_t r = 0; r < qb; ++r) {
        const int64_t row = p.qRow(b, s0 + r, h);
        live[r] = !given || lse[row] != -INFINITY; // -inf: the row sees no key
        anyLive = anyLive || live[r];
        std::memcpy(dob + r * Dv, dout + row * Dv, size_t(Dv) * sizeof(float));
      }
      const int64_t qMax = loadQueries(p, q, b, h, s0, qb, qr, live);
      const int64_t tEnd = anyLive ? p.keyEnd(qMax) : 0;
      if (tEnd == 0) {
        if (!given) // no key for any row: dq = 0
          for (int64_t r = 0; r < qb; ++r)
            std::fill_n(dq + p.qRow(b, s0 + r, h) * D, D, 0.0f);
        continue;
      }
      p.scores(qr, kr, qb, tEnd, pm);
      sgemm(false, true, qb, tEnd, Dv, dob, Dv, vf, Dv, 0.0f, ds, tEnd); // dP = dO V^T
      for (int64_t r = 0; r < qb; ++r) {
        float *pr = pm + r * tEnd, *dr = ds + r * tEnd;
        if (!live[r]) {
          std::fill(pr, pr + tEnd, 0.0f);
          std::fill(dr, dr + tEnd, 0.0f);
          continue;
        }
        const int64_t row = p.qRow(b, s0 + r, h);
        const int64_t n = p.scaleRow(pr, s0 + r, tEnd);
        float rowDelta;
        if (given) {
          expRow(pr, n, lse[row]);
          rowDelta = delta[row];
        } else {
          float m;
          double l;
          softmaxRow(pr, n, m, l);
          const float inv = l > 0.0 ? float(1.0 / l) : 0.0f;
          for (int64_t t = 0; t < n; ++t)
            pr[t] *= inv;
          rowDelta = float(dotDouble(pr, dr, n));
        }
        for (int64_t t = 0; t < n; ++t)
          dr[t] = pr[t] * (dr[t] - rowDelta); // dS
        std::fill(dr + n, dr + tEnd, 0.0f);
      }
      sgemm(false, false, qb, D, tEnd, ds, tEnd, kr, D, 0.0f, dqr, D);    // dQ' = dS K'
      sgemm(true, false, tEnd, D, qb, ds, tEnd, qr, D, 1.0f, dkr, D);     // dK' += dS^T Q'
      sgemm(true, false, tEnd, Dv, qb, pm, tEnd, dob, Dv, 1.0f, dvf, Dv); // dV += P^T dO
      for (int64_t r = 0; r < qb; ++r) {
        const int64_t s = s0 + r;
        float *dst = dq + p.qRow(b, s, h) * D;
        if (!given)
          storeUnrotated(dqr + r * D, dst, d.scale, p.qAngles.cosOf(s), p.qAngles.sinOf(s),
                         p.rope);
        else if (live[r])
          addUnrotated(dqr + r * D, dst, d.scale, p.qAngles.cosOf(s), p.qAngles.sinOf(s),
                       p.rope);
      }
    }
  }
  for (int64_t t = 0; t < Skv; ++t) {
    const int64_t row = p.kvRow(b, t, g);
    const float *c = p.kAngles.cosOf(t), *s = p.kAngles.sinOf(t);
    if (given) {
      addUnrotated(dkr + t * D, dk + row * D, d.scale, c, s, p.rope);
      for (int64_t e = 0; e < Dv; ++e)
        dv[row * Dv + e] += dvf[t * Dv + e];
    } else {
      storeUnrotated(dkr + t * D, dk + row * D, d.scale, c, s, p.rope);
      std::memcpy(dv + row * Dv, dvf + t * Dv, size_t(Dv) * sizeof(float));
    }
  }
}

/// Runs item(problem, slot scratch, b, g) for every (batch, kv head) over the
/// rank's threads, with `slotFloats` of scratch per thread.
template <typename Item>
void runItems(const AttentionDims &d, const int64_t *qPos, const int64_t *kPos, int64_t qOffset,
              int64_t slotFloats, Item &&item) {
  const int64_t items = d.batch * d.kvHeads;
  const int64_t threads = parallelThreads(items);
  Scratch scratch((d.seq + d.seqKv) * int64_t(sizeof(int64_t)), threads,
                  slotFloats * int64_t(sizeof(float)));
  const Positions pos(d, qPos, kPos, qOffset, reinterpret_cast<int64_t *>(scratch.shared()));
  const Rope rope(d.ropeTheta, d.headDim);
  const AngleTable qAngles(rope, pos.q, d.seq), kAngles(rope, pos.k, d.seqKv);
  const bool kSorted = std::is_sorted(pos.k, pos.k + d.seqKv);
  const Problem problem{d, pos.q, pos.k, kSorted, rope, qAngles, kAngles, d.heads / d.kvHeads};
  const SerialBlas serial(threads > 1);
  parallelForSlots(items, [&](int64_t slot, int64_t begin, int64_t end) {
    float *ws = reinterpret_cast<float *>(scratch.slot(slot));
    for (int64_t i = begin; i < end; ++i)
      item(problem, ws, i / d.kvHeads, i % d.kvHeads);
  });
}

} // namespace

bool attentionByGemm(braid_dtype dt, int64_t headDim, int64_t vHeadDim) {
  return (dt == BRAID_F32 || dt == BRAID_BF16 || dt == BRAID_F16) && headDim > 0 &&
         vHeadDim > 0 && useBlas();
}

void attentionGemm(const AttentionDims &d, const float *q, const float *k, const float *v,
                   const int64_t *qPos, const int64_t *kPos, int64_t qOffset, float *out,
                   float *lse) {
  const int64_t slot = (d.seqKv + kQB) * (d.headDim + d.vHeadDim) + kQB * d.seqKv;
  runItems(d, qPos, kPos, qOffset, slot,
           [&](const Problem &p, float *ws, int64_t b, int64_t g) {
             forwardItem(p, q, k, v, b, g, ws, out, lse);
           });
}

void attentionGradGemm(const AttentionDims &d, const float *q, const float *k,
                       const float *v, const float *dout, const int64_t *qPos,
                       const int64_t *kPos, int64_t qOffset, const float *lse,
                       const float *delta, float *dq, float *dk, float *dv) {
  const int64_t slot = 2 * (d.seqKv + kQB) * (d.headDim + d.vHeadDim) + 2 * kQB * d.seqKv;
  runItems(d, qPos, kPos, qOffset, slot,
           [&](const Problem &p, float *ws, int64_t b, int64_t g) {
             backwardItem(p, q, k, v, dout, lse, delta, b, g, ws, dq, dk, dv);
           });
}

} // namespace braid::cpu
