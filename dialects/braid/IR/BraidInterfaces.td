//===- BraidInterfaces.td - what each op says about itself --*- tablegen -*-===//
//
// Every per-op concern of the compiler is an interface the op implements
// next to its family (ElementwiseOps.cpp, AttentionOps.cpp, ...): how its
// dimensions may be split, its vector-Jacobian product, its cost, the runtime
// calls that execute it, and (fusible elementwise ops) its value per element.
// The passes and the emitter ask the interface; none lists ops. A new op is
// its ODS definition, one .cpp with these rules, and its kernels.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDINTERFACES_TD
#define BRAID_DIALECT_BRAID_IR_BRAIDINTERFACES_TD

include "mlir/IR/OpBase.td"

def Braid_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::braid";
  let description = [{
    The op's factor rule (ShardingRule.h), as Shardy's
    ShardingRuleOpInterface gives one: its loops and the tensor dimensions
    each one indexes. Braid's propagation and partitioner read it, and the
    upstream `shard::ShardingInterface` of every op implementing it is
    derived from it (ShardingInterfaceImpl.cpp).
  }];
  let methods = [
    InterfaceMethod<"The factors of this op on its static shapes.",
      "::mlir::braid::ShardingRule", "getShardingRule">,
  ];
}

def Braid_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::braid";
  let description = [{
    The op's vector-Jacobian product, which --braid-autodiff emits for each
    op of the forward pass in reverse. Rules use forward ops where that is
    exact (the backward of a matrix product is two matrix products) and the
    dedicated `*_grad` ops otherwise.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits, at the builder's insertion point and with location `loc`, the
        cotangents of the operands given those of the results (null where a
        result has none): one per operand, null for operands that are not
        differentiable or receive nothing. A located error on failure.
      }],
      "::mlir::FailureOr<::llvm::SmallVector<::mlir::Value>>", "emitVJP",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::llvm::ArrayRef<::mlir::Value>":$resultCotangents)>,
  ];
}

def Braid_OpCostInterface : OpInterface<"OpCostInterface"> {
  let cppNamespace = "::mlir::braid";
  let description = [{
    The FLOPs of one execution of the op and the bytes it keeps for its
    backward pass (OpRules.h): the single source of the model statistics,
    the planner's calibration, the overlap scheduler's durations and the
    trace's MFU. Ops that do no arithmetic do not implement it (cost zero).
  }];
  let methods = [
    InterfaceMethod<"The cost of one execution on the static shapes.",
      "::mlir::braid::OpCost", "getCost">,
  ];
}

def Braid_KernelCallOpInterface : OpInterface<"KernelCallOpInterface"> {
  let cppNamespace = "::mlir::braid";
  let description = [{
    The runtime calls (runtime/include/braid/runtime.h) that execute the op,
    as data (OpRules.h): the emitter prints them with the memory plan's
    addresses and brackets them for the trace.
  }];
  let methods = [
    InterfaceMethod<[{
        Appends the calls that execute this op, in order; a located error
        for an op that must be rewritten first.
      }],
      "::mlir::LogicalResult", "getKernelCalls",
      (ins "::llvm::SmallVectorImpl<::mlir::braid::KernelCall> &":$calls)>,
  ];
}

def Braid_ScalarExpressionOpInterface
    : OpInterface<"ScalarExpressionOpInterface"> {
  let cppNamespace = "::mlir::braid";
  let description = [{
    A fusible elementwise op: its result element as a C++ expression in f32
    of its operands' elements. Chains of such ops run as one generated kernel
    (ElementwiseFusion.h, EmitFusion.cpp).
  }];
  let methods = [
    InterfaceMethod<[{
        The expression of one element, given the expressions of the
        operands' elements (the helpers of runtime/include/braid/numeric.h
        are in scope as `braid::`).
      }],
      "std::string", "getScalarExpression",
      (ins "::llvm::ArrayRef<std::string>":$operands)>,
  ];
}

// Each op lists the rules it implements among its traits.
defvar Braid_ShardingRule = DeclareOpInterfaceMethods<Braid_ShardingRuleOpInterface>;
defvar Braid_VJP = DeclareOpInterfaceMethods<Braid_DifferentiableOpInterface>;
defvar Braid_Cost = DeclareOpInterfaceMethods<Braid_OpCostInterface>;
defvar Braid_KernelCall = DeclareOpInterfaceMethods<Braid_KernelCallOpInterface>;
defvar Braid_ScalarExpression =
    DeclareOpInterfaceMethods<Braid_ScalarExpressionOpInterface>;
/// A fusible elementwise op of the forward pass.
defvar Braid_ElementwiseRules =
    [Braid_ShardingRule, Braid_VJP, Braid_Cost, Braid_ScalarExpression];

#endif // BRAID_DIALECT_BRAID_IR_BRAIDINTERFACES_TD
