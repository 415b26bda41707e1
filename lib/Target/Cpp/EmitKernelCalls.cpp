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

/// `braid::params(T{.field = value, ...})`: the address of a params struct
/// that lives until the end of the call (braid/codegen.h). Integer fields
/// are slots, so that calls differing in sizes still roll; a real is its
/// exact literal as text, since a rolled slot (an int64_t table entry) would
/// be a narrowing conversion to double inside the braces.
FailureOr<Code> FunctionEmitter::printParams(const KernelArg &arg,
                                             Operation *op) {
  Code code = Code("braid::params(") << arg.text << "{";
  for (auto [index, named] : llvm::enumerate(*arg.fields)) {
    const auto &[name, field] = named;
    code << (index ? ", ." : ".") << name << " = ";
    if (field.kind == KernelArg::Kind::Real) {
      code << formatReal(field.realValue);
      continue;
    }
    FailureOr<Code> value = printKernelArg(field, op);
    if (failed(value))
      return failure();
    code << *value;
  }
  return code << "})";
}

FailureOr<Code> FunctionEmitter::printKernelArg(const KernelArg &arg,
                                                Operation *op) {
  Code code;
  switch (arg.kind) {
  case KernelArg::Kind::Buffer:
    code = arg.value ? ptr(arg.value) : Code("nullptr");
    break;
  case KernelArg::Kind::Symbol: {
    std::optional<int64_t> offset = program.plan.offsetOf(arg.text);
    if (!offset)
      return op->emitError("no parameter or state @") << arg.text
                                                      << " in the memory plan";
    code = Code("at(arena, ") << *offset << ")";
    break;
  }
  case KernelArg::Kind::Integer:
    return Code::integer(arg.integer);
  case KernelArg::Kind::Real:
    return Code::real(arg.realValue);
  case KernelArg::Kind::DType:
    return Code(dtypeName(arg.type));
  case KernelArg::Kind::Shape:
    return Code(array(arg.values));
  case KernelArg::Kind::Index:
    return indexExpr(arg.value);
  case KernelArg::Kind::Enum:
    return Code("static_cast<") << arg.text << ">(" << arg.integer << ")";
  case KernelArg::Kind::Struct:
    return printParams(arg, op);
  }
  if (arg.offset) {
    FailureOr<Code> at = indexExpr(arg.offset);
    if (failed(at))
      return failure();
    std::optional<int64_t> bytes = arg.offsetElementBytes;
    if (!bytes && arg.kind == KernelArg::Kind::Symbol)
      bytes = symbolElementBytes(program.symbols, arg.text);
    if (!bytes)
      return op->emitError("an advanced address without an element size");
    code = Code("advance(") << code << ", " << *at << " * " << *bytes << ")";
  }
  if (!arg.cType.empty())
    code = Code("static_cast<") << arg.cType << ">(" << code << ")";
  return code;
}

LogicalResult FunctionEmitter::emitKernelCalls(KernelCallOpInterface op) {
  SmallVector<KernelCall> calls;
  if (failed(op.getKernelCalls(calls)))
    return failure();
  SmallVector<Code> printed;
  for (const KernelCall &call : calls) {
    Code &code = printed.emplace_back(call.callee);
    code << "(rt";
    for (const KernelArg &arg : call.args) {
      FailureOr<Code> argument = printKernelArg(arg, op);
      if (failed(argument))
        return failure();
      code << ", " << *argument;
    }
    code << ")";
  }
  emitBracketed(op, printed);
  return success();
}

void FunctionEmitter::emitBracketed(Operation *op, ArrayRef<Code> calls) {
  std::string label = op->getNumResults() ? nameOf(op->getResult(0)) : "";
  addStatement(Code("braid_rt_op_begin(rt, ")
               << Code::string(op->getName().stripDialect()) << ", "
               << Code::string(label) << ")");
  if (int64_t flops = getForwardCost(op).matmulFlops)
    addStatement(Code("braid_rt_op_flops(rt, ") << flops << ")");
  for (const Code &call : calls)
    addStatement(call);
  addStatement("braid_rt_op_end(rt)");
}

} // namespace braid::cpp
