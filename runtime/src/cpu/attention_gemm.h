//===- attention_gemm.h - attention as blocked f32 GEMMs --------*- C++ -*-===//
//
// Internal to runtime/src/cpu: the f32 path of the attention kernels
// (attention.cpp, grad_attention.cpp, attention_block.cpp), see
// attention_gemm.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_ATTENTION_GEMM_H
#define BRAID_RUNTIME_CPU_ATTENTION_GEMM_H

#include "braid/runtime.h"

#include <cstdint>

namespace braid::cpu {

/// Whether attention of storage type `dt` runs as blocked GEMMs: with
/// useBlas() (BRAID_CPU_ACCUMULATE=f64 keeps the reference kernels, bit for
/// bit) and non-empty head dims; bf16 and f16 on f32 copies (staged_f32.h).
bool attentionByGemm(braid_dtype dt, int64_t headDim, int64_t vHeadDim);

/// Shapes and options of one attention call (braid_attention_params less the
/// query offset, which the kernels take with the row positions).
struct AttentionDims {
  int64_t batch, seq, seqKv, heads, kvHeads, headDim, vHeadDim;
  bool causal;
  float scale;
  double ropeTheta;

  static AttentionDims of(const braid_attention_params &p) {
    return {p.batch,    p.seq,        p.seq_kv,      p.heads,          p.kv_heads,
            p.head_dim, p.v_head_dim, p.causal != 0, float(p.scale), p.rope_theta};
  }

  /// Elements of q [B,S,Hq,D], k [B,Skv,Hkv,D], v [B,Skv,Hkv,Dv] and of the
  /// output (and dout) [B,S,Hq,Dv].
  int64_t qElems() const { return batch * seq * heads * headDim; }
  int64_t kElems() const { return batch * seqKv * kvHeads * headDim; }
  int64_t vElems() const { return batch * seqKv * kvHeads * vHeadDim; }
  int64_t outElems() const { return batch * seq * heads * vHeadDim; }
};

/// Forward. Query row s is at position qPos[s] and key t at kPos[t]; null
/// arrays mean qOffset + s and t. out [B,S,Hq,Dv] is the normalized output,
/// lse [B,S,Hq] (null: not written) the log-sum-exp of the row's scores;
/// a row that sees no key gets zeros and -inf.
void attentionGemm(const AttentionDims &dims, const float *q, const float *k, const float *v,
                   const int64_t *qPos, const int64_t *kPos, int64_t qOffset, float *out,
                   float *lse);

/// Backward. Without lse / delta (null) the softmax statistics are computed
/// here and dq, dk, dv are written (braid_k_attention_grad); with
/// them (braid_k_attention_block_grad) rows with lse = -inf are skipped and
/// dq, dk, dv are f32 accumulators added to.
void attentionGradGemm(const AttentionDims &dims, const float *q, const float *k,
                       const float *v, const float *dout, const int64_t *qPos,
                       const int64_t *kPos, int64_t qOffset, const float *lse,
                       const float *delta, float *dq, float *dk, float *dv);

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_ATTENTION_GEMM_H
