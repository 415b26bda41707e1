//===- UserOps.td - a user's own op for Braid --------------*- tablegen -*-===//
//
// An op Braid does not have: Gemma 2's soft-capping of logits,
// cap * tanh(x / cap). Its sharding comes from upstream MLIR's
// ShardingInterface (attached in UserPlugin.cpp), which Braid's partitioner
// reads for ops it has no rule of its own for.
//
//===----------------------------------------------------------------------===//

#ifndef USER_OPS_TD
#define USER_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def User_Dialect : Dialect {
  let name = "user";
  let summary = "a user's own ops, loaded into braid-opt from a plugin";
  let cppNamespace = "::user";
}

def User_SoftcapOp : Op<User_Dialect, "softcap",
    [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "soft-capping, cap * tanh(x / cap) (Gemma 2's logits)";
  let arguments = (ins AnyRankedTensor:$input, F64Attr:$cap);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `cap` $cap attr-dict `:` type($result)";
}

#endif // USER_OPS_TD
