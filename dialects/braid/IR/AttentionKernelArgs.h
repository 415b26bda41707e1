//===- AttentionKernelArgs.h - attention kernels' arguments -*- C++ -*-===//
//
// Whole-sequence attention, its gradient and the key-block pieces of context
// parallelism call kernels of one core (runtime/src/cuda/attention_core.cuh)
// and end their calls alike: with a braid_attention_params (braid/runtime.h).
// Attention over a KV cache, whole or one rank's chunk of it, takes a
// braid_cache_attention_shape (braid/runtime_inference.h).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_ATTENTIONKERNELARGS_H
#define BRAID_DIALECT_BRAID_IR_ATTENTIONKERNELARGS_H

#include "dialects/braid/IR/OpRules.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::braid {

/// The braid_attention_params of an op with query, key and value: the shape
/// (B, S, Skv, Hq, Hkv, D, Dv), the mask, `scale` and RoPE's theta (0 without
/// RoPE). The query offset stays 0: a chunk of the queries runs as key
/// blocks with explicit positions (BraidBlockAttentionOps.cpp).
template <typename Op> KernelArg attentionParams(Op op, double scale) {
  ArrayRef<int64_t> q = op.getQuery().getType().getShape();
  ArrayRef<int64_t> k = op.getKey().getType().getShape();
  ArrayRef<int64_t> v = op.getValue().getType().getShape();
  double theta = 0.0;
  if (FloatAttr attr = op.getRopeThetaAttr())
    theta = attr.getValueAsDouble();
  return KernelArg::params(
      "braid_attention_params",
      {{"batch", q[0]},
       {"seq", q[1]},
       {"seq_kv", k[1]},
       {"heads", q[2]},
       {"kv_heads", k[2]},
       {"head_dim", q[3]},
       {"v_head_dim", v[3]},
       {"causal", KernelArg::enumerator("int32_t", op.getCausal())},
       {"scale", KernelArg::real(scale)},
       {"rope_theta", KernelArg::real(theta)}});
}

/// The braid_cache_attention_shape of an op attending from a query to a KV
/// cache (braid.cache_attention, braid.cache_attention_chunk): the query's
/// (B, S, Hq, D), the cache's rows and kv heads, the values' Dv, `scale` and
/// RoPE's theta (0 without RoPE).
template <typename Op> KernelArg cacheAttentionShape(Op op) {
  ArrayRef<int64_t> q = op.getQuery().getType().getShape();
  ArrayRef<int64_t> k = op.getKeyCache().getType().getShape();
  ArrayRef<int64_t> v = op.getValueCache().getType().getShape();
  double theta = 0.0;
  if (FloatAttr attr = op.getRopeThetaAttr())
    theta = attr.getValueAsDouble();
  return KernelArg::params(
      "braid_cache_attention_shape",
      {{"batch", q[0]},
       {"seq", q[1]},
       {"cache_len", k[1]},
       {"heads", q[2]},
       {"kv_heads", k[2]},
       {"head_dim", q[3]},
       {"v_head_dim", v[3]},
       {"scale", KernelArg::real(op.getScaleOrDefault())},
       {"rope_theta", KernelArg::real(theta)}});
}

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_IR_ATTENTIONKERNELARGS_H
