//===- ScanKernelArgs.h - selective scan kernels' params ---------*- C++ -*-===//
//
// The whole-sequence selective scan, its gradient and the sequence-chunk
// pieces of context parallelism (MambaOps.cpp, BraidSequenceChunkOps.cpp)
// pass their sizes and options as one braid_scan_params (braid/runtime.h).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_SCANKERNELARGS_H
#define BRAID_DIALECT_BRAID_IR_SCANKERNELARGS_H

#include "dialects/braid/IR/OpRules.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::braid {

/// The braid_scan_params of a scan over x [B, S, Di] with A [Di, N].
inline KernelArg scanParams(Value x, Value a, bool deltaSoftplus) {
  ArrayRef<int64_t> xs = cast<ShapedType>(x.getType()).getShape();
  return KernelArg::params(
      "braid_scan_params",
      {{"batch", xs[0]},
       {"seq", xs[1]},
       {"channels", xs[2]},
       {"state", cast<ShapedType>(a.getType()).getShape()[1]},
       {"delta_softplus", KernelArg::enumerator("int32_t", deltaSoftplus)}});
}

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_IR_SCANKERNELARGS_H
