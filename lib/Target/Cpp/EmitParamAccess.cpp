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

LogicalResult FunctionEmitter::emitParamAccess(Operation *op,
                                               raw_ostream &os) {
  auto n = [](int64_t v) { return std::to_string(v); };
  // The arena pointer of a parameter named by a symbol.
  auto symbol = [&](StringRef name) {
    return "at(arena, " + std::to_string(*program.plan.offsetOf(name)) + ")";
  };
  std::string call;
  if (auto get = dyn_cast<GetParamRangeOp>(op)) {
    FailureOr<std::string> at = indexExpr(get.getOffset());
    if (failed(at))
      return failure();
    // A view of the parameter (the memory plan's, when nothing writes it
    // while the range is read): nothing to copy.
    std::string range =
        "advance(" + symbol(get.getParam()) + ", " + *at + " * " +
        n(getElementBytes(get.getType().getElementType())) + ")";
    if (fp.storage.lookup(get.getResult()).kind != Storage::Kind::ParamRange)
      call = "braid_rt_copy(rt, " + ptr(get.getResult()) + ", " + range +
             ", " + n(getTensorBytes(get.getType())) + ")";
  } else {
    // The memory plan stores the value in the parameter when it can (an
    // all-gather then writes it in place): nothing to copy.
    auto set = cast<SetParamOp>(op);
    std::string param = symbol(set.getParam());
    if (ptr(set.getValue()) != param)
      call = "braid_rt_copy(rt, " + param + ", " + ptr(set.getValue()) +
             ", " + n(getTensorBytes(set.getValue().getType())) + ")";
  }
  if (!call.empty()) // a value in place already: no call
    emitBracketed(op, call, os);
  return success();
}

} // namespace braid::cpp
