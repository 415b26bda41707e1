//===- Retype.h - result types inferred again after a retype ----*- C++ -*-===//
//
// Private to dialects/braid/Transforms. --braid-microbatch and
// --braid-derive-inference give a program's inputs new shapes (a
// micro-batch, an inference batch) and walk its ops in order, asking each
// for its result types again.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_RETYPE_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_RETYPE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace mlir::braid {

/// Sets `op`'s result types to those it infers from its operands. Fails with
/// "<cannot> '<op name>': it does not infer its result types" where it
/// infers none, and with `rejected` where its inference rejects the new
/// operand types.
inline LogicalResult reinferResultTypes(Operation &op, StringRef cannot,
                                        StringRef rejected) {
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  if (!infer)
    return op.emitError(cannot)
           << " '" << op.getName() << "': it does not infer its result types";
  SmallVector<Type> types;
  if (failed(infer.inferReturnTypes(
          op.getContext(), op.getLoc(), op.getOperands(),
          op.getAttrDictionary(), op.getPropertiesStorage(), op.getRegions(),
          types)))
    return op.emitError(rejected);
  for (auto [result, type] : llvm::zip(op.getResults(), types))
    result.setType(type);
  return success();
}

/// Gives the one-block function `f` the argument types `inputs`, retypes
/// its ops in order with `retypeOp`, and sets its type to `inputs` and what
/// it now returns. Fails with `severalBlocks` on a function of several
/// blocks, or where `retypeOp` fails.
inline LogicalResult
retypeFunction(func::FuncOp f, TypeRange inputs, StringRef severalBlocks,
               function_ref<LogicalResult(Operation &)> retypeOp) {
  if (!f.getBody().hasOneBlock())
    return f.emitError(severalBlocks);
  Block &body = f.getBody().front();
  for (auto [arg, type] : llvm::zip(body.getArguments(), inputs))
    arg.setType(type);
  for (Operation &op : body.without_terminator())
    if (failed(retypeOp(op)))
      return failure();
  f.setType(FunctionType::get(f.getContext(), inputs,
                              body.getTerminator()->getOperandTypes()));
  return success();
}

} // namespace mlir::braid

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_RETYPE_H
