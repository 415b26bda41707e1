//===- EmitDist.cpp - emission of dist ops (pipeline transfers) ------------===//
//
// dist.send and dist.recv become the runtime's point-to-point calls on the
// communicator of their grid axes, tagged so that transfers match whatever
// order two ranks' schedules issue them in; dist.microbatch is a copy of a
// contiguous block of rows (the batch is the outermost dimension).
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/dist/IR/DistDialect.h"

#include "llvm/ADT/TypeSwitch.h"

namespace braid::cpp {

bool isDistOp(Operation *op) {
  return isa<dist::SendOp, dist::RecvOp, dist::MicrobatchOp>(op);
}

LogicalResult FunctionEmitter::emitDistOp(Operation *op, raw_ostream &os) {
  auto n = [](int64_t v) { return std::to_string(v); };
  auto error = [&] { return op->emitError(); };
  auto tagOf = [&]() -> FailureOr<int64_t> {
    auto tag = op->getAttrOfType<IntegerAttr>("tag");
    if (!tag)
      return op->emitError("a transfer needs its tag (set by "
                           "--braid-pipeline)");
    return tag.getInt();
  };
  auto transfer = [&](StringRef kind, Value value, FlatSymbolRefAttr grid,
                      ArrayRef<int16_t> axes,
                      int64_t peer) -> FailureOr<std::string> {
    FailureOr<GridGroup> group = getGridGroup(op, grid, axes, error);
    FailureOr<int64_t> tag = tagOf();
    if (failed(group) || failed(tag))
      return failure();
    return "braid_event_wait(rt, braid_" + kind.str() + "_tagged(rt, braid_rt_comm(rt, " +
           quoted(group->spec()) + "), " + ptr(value) + ", " +
           n(numElements(value)) + ", " + dtypeName(value.getType()) + ", " +
           n(peer) + ", " + n(*tag) + "))";
  };
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](dist::SendOp s) {
        FailureOr<std::string> call =
            transfer("send", s.getValue(), s.getGridAttr(), s.getGridAxes(),
                     s.getPeer());
        if (failed(call))
          return failure();
        emitBracketed(op, *call, os);
        return success();
      })
      .Case([&](dist::RecvOp r) {
        FailureOr<std::string> call =
            transfer("recv", r.getResult(), r.getGridAttr(), r.getGridAxes(),
                     r.getPeer());
        if (failed(call))
          return failure();
        emitBracketed(op, *call, os);
        return success();
      })
      .Case([&](dist::MicrobatchOp m) {
        int64_t bytes = getTensorBytes(m.getResult().getType());
        std::string call = "braid_rt_copy(rt, " + ptr(m.getResult()) +
                           ", static_cast<const char *>(" + ptr(m.getInput()) +
                           ") + " + n(m.getIndex() * bytes) + ", " + n(bytes) +
                           ")";
        emitBracketed(op, call, os);
        return success();
      })
      .Default([&](Operation *) {
        return op->emitError("not a dist op the emitter knows");
      });
}

} // namespace braid::cpp
