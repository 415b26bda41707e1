//===- EmitDist.cpp - emission of dist ops (transfers, micro-batches) ------===//
//
// Each dist op is one runtime call. A transfer starts with the runtime's
// collective or point-to-point call, whose event goes into a variable of its
// token; dist.wait waits for the events it takes. Groups are the
// communicators of their grid axes (in grid order, as dist requires, which
// is the order of the communicator's ranks); sends and receives carry their
// tag when they have one. dist.microbatch is a copy of a contiguous block of
// rows (the batch is the outermost dimension). Nothing here decides a
// protocol: BraidToDist has expanded every transfer, its re-layouts included.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/dist/IR/DistDialect.h"

#include "llvm/ADT/TypeSwitch.h"

namespace braid::cpp {

bool isDistOp(Operation *op) {
  return isa_and_nonnull<dist::DistDialect>(op->getDialect());
}

bool isDistTransfer(Operation *op) {
  return llvm::any_of(op->getResultTypes(), llvm::IsaPred<dist::TokenType>);
}

std::string FunctionEmitter::event(Value token) {
  auto [it, inserted] = events.try_emplace(token, "");
  if (inserted)
    it->second = "ev" + std::to_string(events.size() - 1);
  return it->second;
}

static std::string redop(dist::ReductionKind kind) {
  switch (kind) {
  case dist::ReductionKind::Sum:
    return "BRAID_RED_SUM";
  case dist::ReductionKind::Max:
    return "BRAID_RED_MAX";
  case dist::ReductionKind::Min:
    return "BRAID_RED_MIN";
  }
  llvm_unreachable("a dist reduction kind");
}

LogicalResult FunctionEmitter::emitDistOp(Operation *op, raw_ostream &os) {
  auto n = [](int64_t v) { return std::to_string(v); };
  auto p = [&](Value v) { return ptr(v); };
  auto dt = [](Value v) { return dtypeName(v.getType()); };
  auto error = [&] { return op->emitError(); };
  auto comm = [&](FlatSymbolRefAttr grid,
                  ArrayRef<int16_t> axes) -> FailureOr<std::string> {
    FailureOr<GridGroup> group = getGridGroup(op, grid, axes, error);
    if (failed(group))
      return failure();
    return "braid_rt_comm(rt, " + quoted(group->spec()) + ")";
  };
  // `braid_event *ev = call` for a transfer, bracketed for the trace (the
  // function's body is one scope: its wait, later in the block, sees it).
  auto start = [&](Value token, FailureOr<std::string> group,
                   const std::string &call) -> LogicalResult {
    if (failed(group))
      return failure();
    emitBracketed(op, "braid_event *" + event(token) + " = " + call, os);
    return success();
  };
  auto peer = [&](auto t, StringRef kind, Value buffer) {
    FailureOr<std::string> group = comm(t.getGridAttr(), t.getGridAxes());
    std::string call = "braid_" + kind.str() +
                       (t.getTag() ? "_tagged" : "") + "(rt, " +
                       (succeeded(group) ? *group : "") + ", " + p(buffer) +
                       ", " + n(numElements(buffer)) + ", " + dt(buffer) +
                       ", " + n(t.getPeer()) +
                       (t.getTag() ? ", " + n(*t.getTag()) : "") + ")";
    return start(t.getToken(), group, call);
  };
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](dist::AllReduceOp r) {
        FailureOr<std::string> group = comm(r.getGridAttr(), r.getGridAxes());
        return start(r.getToken(), group,
                     "braid_all_reduce(rt, " + (succeeded(group) ? *group : "") +
                         ", " + p(r.getInput()) + ", " + p(r.getResult()) +
                         ", " + n(numElements(r.getInput())) + ", " +
                         dt(r.getInput()) + ", " + redop(r.getReduction()) + ")");
      })
      .Case([&](dist::AllGatherOp g) {
        FailureOr<std::string> group = comm(g.getGridAttr(), g.getGridAxes());
        return start(g.getToken(), group,
                     "braid_all_gather(rt, " + (succeeded(group) ? *group : "") +
                         ", " + p(g.getInput()) + ", " + p(g.getResult()) +
                         ", " + n(numElements(g.getInput())) + ", " +
                         dt(g.getInput()) + ")");
      })
      .Case([&](dist::ReduceScatterOp r) {
        FailureOr<std::string> group = comm(r.getGridAttr(), r.getGridAxes());
        return start(r.getToken(), group,
                     "braid_reduce_scatter(rt, " +
                         (succeeded(group) ? *group : "") + ", " +
                         p(r.getInput()) + ", " + p(r.getResult()) + ", " +
                         n(numElements(r.getResult())) + ", " +
                         dt(r.getInput()) + ", " + redop(r.getReduction()) + ")");
      })
      .Case([&](dist::AllToAllOp a) {
        FailureOr<std::string> group = comm(a.getGridAttr(), a.getGridAxes());
        return start(a.getToken(), group,
                     "braid_all_to_all(rt, " + (succeeded(group) ? *group : "") +
                         ", " + p(a.getInput()) + ", " + p(a.getResult()) +
                         ", " + n(numElements(a.getInput()) / a.getGroupSize()) +
                         ", " + dt(a.getInput()) + ")");
      })
      .Case([&](dist::BroadcastOp b) {
        // The runtime broadcasts in place: the input is copied to the result
        // first (distinct buffers: the input stays live until the wait).
        FailureOr<std::string> group = comm(b.getGridAttr(), b.getGridAxes());
        int64_t bytes = getTensorBytes(b.getInput().getType());
        if (failed(group))
          return failure();
        emitBracketed(op,
                      "braid_rt_copy(rt, " + p(b.getResult()) + ", " +
                          p(b.getInput()) + ", " + n(bytes) + ");\n  " +
                          "braid_event *" + event(b.getToken()) +
                          " = braid_broadcast(rt, " +
                          *group + ", " + p(b.getResult()) + ", " +
                          n(numElements(b.getInput())) + ", " +
                          dt(b.getInput()) + ", " + n(b.getRoot()) + ")",
                      os);
        return success();
      })
      .Case([&](dist::SendOp s) { return peer(s, "send", s.getValue()); })
      .Case([&](dist::RecvOp r) { return peer(r, "recv", r.getResult()); })
      .Case([&](dist::WaitOp w) {
        for (Value token : w.getTokens())
          os << "  braid_event_wait(rt, " << event(token) << ");\n";
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
