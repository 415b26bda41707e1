//===- EmitDist.cpp - emission of dist ops (transfers, micro-batches) ------===//
//
// Each dist op is one runtime call. A transfer starts with the runtime's
// collective or point-to-point call, whose event goes into a variable of its
// token; dist.wait waits for the events it takes. Groups are the
// communicators of their grid axes (in grid order, as dist requires, which
// is the order of the communicator's ranks); sends and receives carry their
// tag when they have one. dist.microbatch is a copy of a contiguous block of
// rows (the batch is the outermost dimension); a collective matmul's
// dist.assemble and dist.block copy blocks at the rank's coordinate
// (braid_k_place, braid_k_slice); a bucket's dist.pack and dist.unpack
// copy its tensors' blocks in and out. Nothing here decides a
// protocol: BraidToDist has expanded every transfer, its re-layouts included.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

namespace braid::cpp {

bool isDistOp(Operation *op) {
  return isa_and_nonnull<dist::DistDialect>(op->getDialect());
}

bool isIndexOp(Operation *op) {
  return op->getNumResults() == 1 && op->getResult(0).getType().isIndex() &&
         (isa<dist::CoordinateOp>(op) ||
          isa_and_nonnull<arith::ArithDialect>(op->getDialect()));
}

FailureOr<std::string> FunctionEmitter::indexExpr(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || !isIndexOp(op))
    return emitError(value.getLoc(),
                     "an index the emitter computes comes from "
                     "dist.coordinate or arith on indices");
  auto binary = [&](StringRef symbol) -> FailureOr<std::string> {
    FailureOr<std::string> lhs = indexExpr(op->getOperand(0));
    FailureOr<std::string> rhs = indexExpr(op->getOperand(1));
    if (failed(lhs) || failed(rhs))
      return failure();
    return "(" + *lhs + " " + symbol.str() + " " + *rhs + ")";
  };
  return TypeSwitch<Operation *, FailureOr<std::string>>(op)
      .Case([&](dist::CoordinateOp c) -> FailureOr<std::string> {
        FailureOr<GridGroup> group = getGridGroup(
            op, c.getGridAttr(), c.getGridAxes(), [&] { return op->emitError(); });
        if (failed(group))
          return failure();
        return coordinate(*group);
      })
      .Case([&](arith::ConstantIndexOp c) -> FailureOr<std::string> {
        return "int64_t(" + std::to_string(c.value()) + ")";
      })
      .Case([&](arith::AddIOp) { return binary("+"); })
      .Case([&](arith::SubIOp) { return binary("-"); })
      .Case([&](arith::MulIOp) { return binary("*"); })
      .Case([&](arith::RemUIOp) { return binary("%"); })
      .Case([&](arith::DivUIOp) { return binary("/"); })
      .Default([&](Operation *) -> FailureOr<std::string> {
        return op->emitError("the emitter computes indices with addi, subi, "
                             "muli, divui and remui, not ")
               << op->getName();
      });
}

std::string FunctionEmitter::blockCopy(StringRef kernel, Value from, Value to, Value whole,
                                       int64_t axis, int64_t offset, const GridGroup &group) {
  // `whole` viewed as [outer, dim, inner], in n blocks of `local` rows along
  // `axis`; the block is (c + offset) mod n, c the rank's coordinate.
  ArrayRef<int64_t> shape = cast<RankedTensorType>(whole.getType()).getShape();
  int64_t ranks = group.size(), outer = 1, inner = 1, local = shape[axis] / ranks;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1, e = shape.size(); d < e; ++d)
    inner *= shape[d];
  auto n = [](int64_t v) { return std::to_string(v); };
  return kernel.str() + "(rt, " + dtypeName(cast<RankedTensorType>(from.getType())) + ", " +
         ptr(from) + ", " + ptr(to) + ", " + n(outer) + ", " + n(shape[axis]) + ", " +
         n(local) + ", " + n(inner) + ", ((" + coordinate(group) + " + " + n(offset) + ") % " +
         n(ranks) + ") * " + n(local) + ")";
}

std::string FunctionEmitter::event(Value token) {
  auto [it, inserted] = events.try_emplace(token, "");
  if (inserted)
    it->second = "ev[" + std::to_string(events.size() - 1) + "]";
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
  // `bytes` bytes from `from` + `fromAt` to `to` + `toAt`.
  auto copy = [&](const std::string &to, int64_t toAt, const std::string &from,
                  int64_t fromAt, int64_t bytes) {
    return "braid_rt_copy(rt, static_cast<char *>(" + to + ") + " + n(toAt) +
           ", static_cast<const char *>(" + from + ") + " + n(fromAt) + ", " + n(bytes) + ")";
  };
  // `ev[k] = braid_<fn>(rt, <the transfer's communicator>, <args>)`,
  // bracketed for the trace, after `prelude` statements (the slot is the
  // function's: its wait, later in the block, sees it).
  auto issue = [&](auto t, StringRef fn, const std::string &args,
                   const std::string &prelude = "") -> LogicalResult {
    FailureOr<GridGroup> group =
        getGridGroup(op, t.getGridAttr(), t.getGridAxes(), error);
    if (failed(group))
      return failure();
    emitBracketed(op,
                  prelude + event(t.getToken()) + " = braid_" +
                      fn.str() + "(rt, braid_rt_comm(rt, " +
                      quoted(group->spec()) + "), " + args + ")",
                  os);
    return success();
  };
  auto peer = [&](auto t, StringRef kind, Value buffer) {
    return issue(t, t.getTag() ? (kind + "_tagged").str() : kind.str(),
                 p(buffer) + ", " + n(numElements(buffer)) + ", " + dt(buffer) +
                     ", " + n(t.getPeer()) +
                     (t.getTag() ? ", " + n(*t.getTag()) : ""));
  };
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](dist::AllReduceOp r) {
        return issue(r, "all_reduce",
                     p(r.getInput()) + ", " + p(r.getResult()) + ", " +
                         n(numElements(r.getInput())) + ", " +
                         dt(r.getInput()) + ", " + redop(r.getReduction()));
      })
      .Case([&](dist::AllGatherOp g) {
        return issue(g, "all_gather",
                     p(g.getInput()) + ", " + p(g.getResult()) + ", " +
                         n(numElements(g.getInput())) + ", " + dt(g.getInput()));
      })
      .Case([&](dist::ReduceScatterOp r) {
        return issue(r, "reduce_scatter",
                     p(r.getInput()) + ", " + p(r.getResult()) + ", " +
                         n(numElements(r.getResult())) + ", " +
                         dt(r.getInput()) + ", " + redop(r.getReduction()));
      })
      .Case([&](dist::AllToAllOp a) {
        return issue(a, "all_to_all",
                     p(a.getInput()) + ", " + p(a.getResult()) + ", " +
                         n(numElements(a.getInput()) / a.getGroupSize()) + ", " +
                         dt(a.getInput()));
      })
      .Case([&](dist::BroadcastOp b) {
        // The runtime broadcasts in place: the input is copied to the result
        // first (distinct buffers: the input stays live until the wait).
        return issue(b, "broadcast",
                     p(b.getResult()) + ", " + n(numElements(b.getInput())) +
                         ", " + dt(b.getInput()) + ", " + n(b.getRoot()),
                     "braid_rt_copy(rt, " + p(b.getResult()) + ", " +
                         p(b.getInput()) + ", " +
                         n(getTensorBytes(b.getInput().getType())) + ");\n  ");
      })
      .Case([&](dist::ShiftOp s) -> LogicalResult {
        // One send-receive pair: to c + offset, from c - offset (modulo the
        // group with `cyclic`, else -1, no peer, past the ends, where the
        // result is zeros).
        FailureOr<GridGroup> group = getGridGroup(
            op, s.getGridAttr(), s.getGridAxes(), error);
        if (failed(group))
          return failure();
        int64_t ranks = group->size(), offset = s.getOffset();
        std::string c = coordinate(*group);
        std::string to, from, prelude;
        if (s.getCyclic()) {
          auto mod = [&](int64_t by) {
            return "(" + c + " + " + n(((by % ranks) + ranks) % ranks) + ") % " +
                   n(ranks);
          };
          to = mod(offset);
          from = mod(-offset);
        } else {
          // The peer `by` ranks on, if the group has it.
          auto peerAt = [&](int64_t by) {
            std::string at = "(" + c + (by > 0 ? " + " : " - ") +
                             n(by > 0 ? by : -by) + ")";
            std::string inside = by > 0 ? at + " < " + n(ranks) : at + " >= 0";
            return "(" + inside + " ? " + at + " : -1)";
          };
          to = peerAt(offset);
          from = peerAt(-offset);
          prelude = "if (" + from + " < 0) braid_k_zero(rt, " +
                    dt(s.getResult()) + ", " + p(s.getResult()) + ", " +
                    n(numElements(s.getResult())) + ");\n  ";
        }
        std::string count = n(numElements(s.getInput()));
        return issue(s, "sendrecv",
                     p(s.getInput()) + ", " + count + ", " + to + ", " +
                         p(s.getResult()) + ", " + count + ", " + from + ", " +
                         dt(s.getInput()),
                     prelude);
      })
      .Case([&](dist::SendOp s) { return peer(s, "send", s.getValue()); })
      .Case([&](dist::RecvOp r) { return peer(r, "recv", r.getResult()); })
      .Case([&](dist::WaitOp w) {
        for (Value token : w.getTokens())
          os << "  braid_event_wait(rt, " << event(token) << ");\n";
        return success();
      })
      .Case([&](dist::AssembleOp a) -> LogicalResult {
        // Piece k into block (c + k) mod n of the result.
        FailureOr<GridGroup> group =
            getGridGroup(op, a.getGridAttr(), a.getGridAxes(), error);
        if (failed(group))
          return failure();
        std::string call;
        for (auto [k, piece] : llvm::enumerate(a.getPieces()))
          call += (k ? ";\n  " : "") +
                  blockCopy("braid_k_place", piece, a.getResult(), a.getResult(), a.getAxis(),
                            int64_t(k), *group);
        emitBracketed(op, call, os);
        return success();
      })
      .Case([&](dist::BlockOp k) -> LogicalResult {
        // Block (c + offset) mod n of the input.
        FailureOr<GridGroup> group =
            getGridGroup(op, k.getGridAttr(), k.getGridAxes(), error);
        if (failed(group))
          return failure();
        emitBracketed(op,
                      blockCopy("braid_k_slice", k.getInput(), k.getResult(), k.getInput(),
                                k.getAxis(), k.getOffset(), *group),
                      os);
        return success();
      })
      .Case([&](dist::PackOp k) {
        // Block r of each input after block r of the ones before it: one
        // copy per block (a bucket has a few dozen tensors).
        int64_t parts = static_cast<int64_t>(k.getParts()), at = 0;
        std::string call;
        for (int64_t r = 0; r < parts; ++r)
          for (Value input : k.getInputs()) {
            int64_t bytes = getTensorBytes(input.getType()) / parts;
            call += (call.empty() ? "" : ";\n  ") + copy(p(k.getResult()), at,
                                                       p(input), r * bytes, bytes);
            at += bytes;
          }
        emitBracketed(op, call, os);
        return success();
      })
      .Case([&](dist::UnpackOp u) {
        // Block r of the result from part r, `offset` elements in.
        int64_t parts = static_cast<int64_t>(u.getParts());
        int64_t bytes = getTensorBytes(u.getResult().getType()) / parts;
        int64_t part = getTensorBytes(u.getInput().getType()) / parts;
        int64_t offset = static_cast<int64_t>(u.getOffset()) *
                         (getTensorBytes(u.getInput().getType()) / numElements(u.getInput()));
        std::string call;
        for (int64_t r = 0; r < parts; ++r)
          call += (r ? ";\n  " : "") +
                  copy(p(u.getResult()), r * bytes, p(u.getInput()), r * part + offset, bytes);
        emitBracketed(op, call, os);
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
