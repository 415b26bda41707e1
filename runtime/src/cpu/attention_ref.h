//===- attention_ref.h - what the reference CPU attention loops share -*- C++ -*-===//
//
// The loops of attention.cpp, attention_block.cpp and grad_attention.cpp (the
// BRAID_CPU_ACCUMULATE=f64 reference kernels): their argument checks, the
// size of a block of query rows, and the online-softmax fold of one key into
// a row's running max, sum and accumulator.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_ATTENTION_REF_H
#define BRAID_RUNTIME_CPU_ATTENTION_REF_H

#include "attention_gemm.h"
#include "common.h"

#include <cmath>

namespace braid::cpu {

constexpr int64_t kMaxQB = 64;       // query rows per block at most
constexpr int64_t kBufFloats = 8192; // floats of a block buffer

/// The widest head dim, at least 1: a block of rows of it fills a buffer.
inline int64_t widestHeadDim(int64_t D, int64_t Dv) {
  return D > Dv ? (D > 0 ? D : 1) : (Dv > 0 ? Dv : 1);
}

/// Query rows per block: as many as fit (up to kMaxQB) in the fixed buffers,
/// so that each key row is rotated once per block; >= 8 since D, Dv <=
/// kMaxHeadDim.
inline int64_t queryBlock(int64_t D, int64_t Dv) {
  const int64_t m = widestHeadDim(D, Dv);
  return kBufFloats / m < kMaxQB ? kBufFloats / m : kMaxQB;
}

/// GQA (query heads a multiple of the kv heads) and the head dims the fixed
/// buffers hold.
inline void checkHeads(const char *kernel, int64_t heads, int64_t kvHeads, int64_t headDim,
                       int64_t vHeadDim) {
  if (kvHeads <= 0 || heads % kvHeads != 0)
    fail(kernel, "%lld query heads are not a multiple of %lld kv heads", (long long)heads,
         (long long)kvHeads);
  if (headDim > kMaxHeadDim || vHeadDim > kMaxHeadDim)
    fail(kernel, "head dims %lld / %lld exceed the supported %lld", (long long)headDim,
         (long long)vHeadDim, (long long)kMaxHeadDim);
}

/// Rotate-half RoPE pairs the dims: an even head dim.
inline void checkRope(const char *kernel, double theta, int64_t headDim) {
  if (theta > 0.0 && headDim % 2 != 0)
    fail(kernel, "rotary embedding needs an even head dim, got %lld", (long long)headDim);
}

/// The checks of attention and attention_grad, whose query rows sit at
/// global positions qOffset + s (a causal row must see its own key).
inline void checkAttention(const char *kernel, const AttentionDims &d, int64_t qOffset) {
  checkHeads(kernel, d.heads, d.kvHeads, d.headDim, d.vHeadDim);
  if (qOffset < 0)
    fail(kernel, "negative query offset %lld", (long long)qOffset);
  if (d.causal && qOffset + d.seq > d.seqKv)
    fail(kernel, "causal attention needs q_offset + seq <= seq_kv, got %lld + %lld and %lld",
         (long long)qOffset, (long long)d.seq, (long long)d.seqKv);
  checkRope(kernel, d.ropeTheta, d.headDim);
}

/// Folds key t (its score and value row v) into a query row's running max m,
/// sum l and accumulator acc [Dv]: m' = max(m, score), acc = acc e^(m - m') +
/// e^(score - m') v, l likewise.
inline void foldKey(float score, const float *v, int64_t Dv, float &m, double &l, float *acc) {
  if (score > m) {
    const float corr = std::exp(m - score); // 0 for the first key
    l *= corr;
    for (int64_t e = 0; e < Dv; ++e)
      acc[e] *= corr;
    m = score;
  }
  const float p = std::exp(score - m);
  l += p;
  for (int64_t e = 0; e < Dv; ++e)
    acc[e] += p * v[e];
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_ATTENTION_REF_H
