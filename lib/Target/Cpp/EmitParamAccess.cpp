//===- EmitParamAccess.cpp - ZeRO's reads and writes of parameters --------===//
//
// get_param_range and set_param, which --convert-braid-to-dist makes for a
// ZeRO parameter range: a view or copy of a parameter's range, and a store
// into a parameter. Whether either copies is the memory plan's decision (a
// range read while nothing writes it is a view; a value the plan placed in
// the parameter is stored already), so the emitter, not the op, prints them.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/braid/IR/BraidOps.h"

namespace braid::cpp {

LogicalResult FunctionEmitter::emitParamAccess(Operation *op) {
  // The arena pointer of a parameter named by a symbol.
  auto symbol = [&](StringRef name) {
    return Code("at(arena, ") << *program.plan.offsetOf(name) << ")";
  };
  if (auto get = dyn_cast<GetParamRangeOp>(op)) {
    // Checked here also for a view, whose uses print it.
    FailureOr<Code> at = indexExpr(get.getOffset());
    if (failed(at))
      return failure();
    // A view of the parameter (the memory plan's, when nothing writes it
    // while the range is read): nothing to copy.
    if (fp.storage.lookup(get.getResult()).kind == Storage::Kind::ParamRange)
      return success();
    emitBracketed(op, Code("braid_rt_copy(rt, ")
                          << ptr(get.getResult()) << ", advance("
                          << symbol(get.getParam()) << ", " << *at << " * "
                          << getElementBytes(get.getType().getElementType())
                          << "), " << getTensorBytes(get.getType()) << ")");
    return success();
  }
  // The memory plan stores the value in the parameter when it can (an
  // all-gather then writes it in place): nothing to copy.
  auto set = cast<SetParamOp>(op);
  const Storage &value = fp.storage.find(set.getValue())->second;
  if (value.kind == Storage::Kind::Param &&
      value.offset == *program.plan.offsetOf(set.getParam()))
    return success();
  emitBracketed(op, Code("braid_rt_copy(rt, ")
                        << symbol(set.getParam()) << ", " << ptr(set.getValue())
                        << ", " << getTensorBytes(set.getValue().getType())
                        << ")");
  return success();
}

} // namespace braid::cpp
