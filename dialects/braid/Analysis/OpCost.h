//===- OpCost.h - forward FLOPs and bytes of one braid op -------*- C++ -*-===//
//
// The cost figures every later component shares (model statistics, the
// planner, the overlap scheduler): FLOPs of one execution of an op on its
// static shapes, split into matmul-class FLOPs (what MFU is measured in) and
// the rest.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_OPCOST_H
#define BRAID_DIALECT_BRAID_ANALYSIS_OPCOST_H

#include "mlir/IR/Operation.h"

#include <cstdint>

namespace mlir::braid {

struct OpCost {
  /// 2 x multiply-accumulates of matrix products (linear, batch_matmul, the
  /// two products inside attention, expert FFNs over their whole buffers).
  /// Attention is counted over the full S x S score matrix, causal or not,
  /// the convention of Megatron-LM and PaLM's MFU.
  int64_t matmulFlops = 0;
  /// Everything else: norms, activations, softmax, RoPE, conv1d, the
  /// selective scan, the loss. Per-element counts are documented in OpCost.cpp.
  int64_t otherFlops = 0;
  /// Bytes of activations the op keeps for its backward pass beyond its
  /// results (e.g. attention's per-row log-sum-exp, flash-attention style).
  int64_t savedBytes = 0;
};

/// The forward cost of `op`; zero for ops that move no data through
/// arithmetic (reshape, get_param, func ops, ...).
OpCost getForwardCost(Operation *op);

/// Bytes of one element of `type` (f32: 4, bf16: 2, i32: 4, ...).
int64_t getElementBytes(Type type);

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_OPCOST_H
