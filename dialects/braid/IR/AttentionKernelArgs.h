//===- AttentionKernelArgs.h - attention kernels' arguments -*- C++ -*-===//
//
// Whole-sequence attention, its gradient and the key-block pieces of context
// parallelism call kernels of one core (runtime/src/cuda/attention_core.cuh)
// and end their calls alike.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_ATTENTIONKERNELARGS_H
#define BRAID_DIALECT_BRAID_IR_ATTENTIONKERNELARGS_H

#include "dialects/braid/IR/OpRules.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::braid {

/// Appends the shape (B, S, Skv, Hq, Hkv, D, Dv), the mask, `scale` and
/// RoPE's theta (0 without RoPE) of an op with query, key and value.
template <typename Op>
void appendAttentionDims(Op op, double scale,
                         SmallVectorImpl<KernelArg> &args) {
  ArrayRef<int64_t> q = op.getQuery().getType().getShape();
  ArrayRef<int64_t> k = op.getKey().getType().getShape();
  ArrayRef<int64_t> v = op.getValue().getType().getShape();
  double theta = 0.0;
  if (FloatAttr attr = op.getRopeThetaAttr())
    theta = attr.getValueAsDouble();
  args.append({q[0], q[1], k[1], q[2], k[2], q[3], v[3], op.getCausal(),
               KernelArg::real(scale), KernelArg::real(theta)});
}

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_IR_ATTENTIONKERNELARGS_H
