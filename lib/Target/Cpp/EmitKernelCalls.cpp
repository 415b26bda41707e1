//===- EmitKernelCalls.cpp - the runtime calls ops describe ---------------===//
//
// An op that runs as runtime calls describes them (KernelCallOpInterface,
// next to its family); this prints each argument with the memory plan's
// addresses and the exact literals, and brackets the calls for the trace.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/braid/IR/BraidOps.h"

#include "dialects/braid/Analysis/OpCost.h"

namespace braid::cpp {

/// Bytes of one element of the parameter or state `name`.
static std::optional<int64_t> symbolElementBytes(SymbolTable &symbols,
                                                 StringRef name) {
  Operation *symbol = symbols.lookup(name);
  if (auto param = dyn_cast_or_null<ParamOp>(symbol))
    return getElementBytes(param.getTensorType());
  if (auto state = dyn_cast_or_null<StateOp>(symbol))
    return getElementBytes(state.getTensorType());
  return std::nullopt;
}

FailureOr<std::string> FunctionEmitter::printKernelArg(const KernelArg &arg,
                                                       Operation *op) {
  std::string text;
  switch (arg.kind) {
  case KernelArg::Kind::Buffer:
    text = arg.value ? ptr(arg.value) : std::string("nullptr");
    break;
  case KernelArg::Kind::Symbol: {
    std::optional<int64_t> offset = program.plan.offsetOf(arg.text);
    if (!offset)
      return op->emitError("no parameter or state @") << arg.text
                                                      << " in the memory plan";
    text = "at(arena, " + std::to_string(*offset) + ")";
    break;
  }
  case KernelArg::Kind::Integer:
    return std::to_string(arg.integer);
  case KernelArg::Kind::Real:
    return literal(arg.realValue);
  case KernelArg::Kind::DType:
    return dtypeName(arg.type);
  case KernelArg::Kind::Shape:
    return array(arg.values);
  case KernelArg::Kind::Index:
    return indexExpr(arg.value);
  case KernelArg::Kind::Enum:
    return "static_cast<" + arg.text + ">(" + std::to_string(arg.integer) + ")";
  }
  if (arg.offset) {
    FailureOr<std::string> at = indexExpr(arg.offset);
    if (failed(at))
      return failure();
    std::optional<int64_t> bytes = arg.offsetElementBytes;
    if (!bytes && arg.kind == KernelArg::Kind::Symbol)
      bytes = symbolElementBytes(program.symbols, arg.text);
    if (!bytes)
      return op->emitError("an advanced address without an element size");
    text = "advance(" + text + ", " + *at + " * " + std::to_string(*bytes) + ")";
  }
  if (!arg.cType.empty())
    text = "static_cast<" + arg.cType + ">(" + text + ")";
  return text;
}

LogicalResult FunctionEmitter::emitKernelCalls(KernelCallOpInterface op,
                                               raw_ostream &os) {
  SmallVector<KernelCall> calls;
  if (failed(op.getKernelCalls(calls)))
    return failure();
  std::string text;
  for (const KernelCall &call : calls) {
    if (!text.empty())
      text += ";\n  ";
    text += call.callee + "(rt";
    for (const KernelArg &arg : call.args) {
      FailureOr<std::string> printed = printKernelArg(arg, op);
      if (failed(printed))
        return failure();
      text += ", " + *printed;
    }
    text += ")";
  }
  emitBracketed(op, text, os);
  return success();
}

void FunctionEmitter::emitBracketed(Operation *op, StringRef call,
                                    raw_ostream &os) {
  std::string label = op->getNumResults() ? nameOf(op->getResult(0)) : "";
  os << "  braid_rt_op_begin(rt, "
     << quoted(op->getName().stripDialect()) << ", " << quoted(label)
     << ");\n";
  if (int64_t flops = getForwardCost(op).matmulFlops)
    os << "  braid_rt_op_flops(rt, " << flops << ");\n";
  os << "  " << call << ";\n  braid_rt_op_end(rt);\n";
}

} // namespace braid::cpp
