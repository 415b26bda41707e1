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
// Each family of ops has its method; emitDistOp dispatches to them.
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

/// The group a dist op runs over or takes a coordinate in: its `grid` and
/// `grid_axes`.
static FailureOr<GridGroup> groupOf(Operation *op) {
  return getGridGroup(
      op, op->getAttrOfType<FlatSymbolRefAttr>("grid"),
      op->getAttrOfType<DenseI16ArrayAttr>("grid_axes").asArrayRef(),
      [&] { return op->emitError(); });
}

FailureOr<Code> FunctionEmitter::indexExpr(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || !isIndexOp(op))
    return emitError(value.getLoc(),
                     "an index the emitter computes comes from "
                     "dist.coordinate or arith on indices");
  auto binary = [&](StringRef symbol) -> FailureOr<Code> {
    FailureOr<Code> lhs = indexExpr(op->getOperand(0));
    FailureOr<Code> rhs = indexExpr(op->getOperand(1));
    if (failed(lhs) || failed(rhs))
      return failure();
    return Code("(") << *lhs << " " << symbol << " " << *rhs << ")";
  };
  return TypeSwitch<Operation *, FailureOr<Code>>(op)
      .Case([&](dist::CoordinateOp c) -> FailureOr<Code> {
        FailureOr<GridGroup> group = groupOf(c);
        if (failed(group))
          return failure();
        return coordinate(*group);
      })
      .Case([&](arith::ConstantIndexOp c) {
        return Code("int64_t(") << c.value() << ")";
      })
      .Case([&](arith::AddIOp) { return binary("+"); })
      .Case([&](arith::SubIOp) { return binary("-"); })
      .Case([&](arith::MulIOp) { return binary("*"); })
      .Case([&](arith::RemUIOp) { return binary("%"); })
      .Case([&](arith::DivUIOp) { return binary("/"); })
      .Default([&](Operation *) -> FailureOr<Code> {
        return op->emitError("the emitter computes indices with addi, subi, "
                             "muli, divui and remui, not ")
               << op->getName();
      });
}

Code FunctionEmitter::event(Value token) {
  auto [it, inserted] = events.try_emplace(token, events.size());
  return Code("ev[") << it->second << "]";
}

static StringRef redop(dist::ReductionKind kind) {
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

LogicalResult FunctionEmitter::emitDistOp(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
            dist::AllToAllOp, dist::BroadcastOp>(
          [&](auto) { return emitCollective(op); })
      .Case([&](dist::ShiftOp shift) { return emitShift(shift); })
      .Case<dist::SendOp, dist::RecvOp>(
          [&](auto) { return emitPeerTransfer(op); })
      .Case([&](dist::WaitOp wait) { return emitWait(wait); })
      .Case<dist::AssembleOp, dist::BlockOp>(
          [&](auto) { return emitBlockCopy(op); })
      .Case<dist::PackOp, dist::UnpackOp>(
          [&](auto) { return emitBucketCopy(op); })
      .Case([&](dist::MicrobatchOp m) { return emitMicrobatch(m); })
      .Default([&](Operation *) {
        return op->emitError("not a dist op the emitter knows");
      });
}

void FunctionEmitter::emitTransferStart(Operation *op, const GridGroup &group,
                                        StringRef fn, const Code &args,
                                        ArrayRef<Code> prelude) {
  // The event's slot is the function's: its wait, later in the block, sees
  // it.
  SmallVector<Code> calls(prelude);
  calls.push_back(event(dist::getToken(op))
                  << " = braid_" << fn << "(rt, braid_rt_comm(rt, "
                  << Code::string(group.spec()) << "), " << args << ")");
  emitBracketed(op, calls);
}

/// A buffer's elements and type: `<count>, <dtype>` of a collective's
/// arguments.
static Code countAndType(int64_t count, Value buffer) {
  return Code::integer(count) << ", " << dtypeName(buffer.getType());
}

LogicalResult FunctionEmitter::emitCollective(Operation *op) {
  FailureOr<GridGroup> group = groupOf(op);
  if (failed(group))
    return failure();
  Value input = op->getOperand(0), result = op->getResult(0);
  // Most take the input, the result, a count and type, and a reduction.
  Code args = ptr(input) << ", " << ptr(result) << ", ";
  SmallVector<Code, 1> prelude;
  StringRef fn =
      TypeSwitch<Operation *, StringRef>(op)
          .Case([&](dist::AllReduceOp r) {
            args << countAndType(numElements(input), input) << ", "
                 << redop(r.getReduction());
            return "all_reduce";
          })
          .Case([&](dist::AllGatherOp) {
            args << countAndType(numElements(input), input);
            return "all_gather";
          })
          .Case([&](dist::ReduceScatterOp r) {
            args << countAndType(numElements(result), input) << ", "
                 << redop(r.getReduction());
            return "reduce_scatter";
          })
          .Case([&](dist::AllToAllOp a) {
            args << countAndType(numElements(input) / a.getGroupSize(), input);
            return "all_to_all";
          })
          .Case([&](dist::BroadcastOp b) {
            // The runtime broadcasts in place: the input is copied to the
            // result first (distinct buffers: the input stays live until the
            // wait).
            prelude.push_back(Code("braid_rt_copy(rt, ")
                              << ptr(result) << ", " << ptr(input) << ", "
                              << getTensorBytes(input.getType()) << ")");
            args = ptr(result) << ", "
                               << countAndType(numElements(input), input)
                               << ", " << b.getRoot();
            return "broadcast";
          });
  emitTransferStart(op, *group, fn, args, prelude);
  return success();
}

LogicalResult FunctionEmitter::emitShift(dist::ShiftOp shift) {
  // One send-receive pair: to c + offset, from c - offset (modulo the group
  // with `cyclic`, else -1, no peer, past the ends, where the result is
  // zeros).
  FailureOr<GridGroup> group = groupOf(shift);
  if (failed(group))
    return failure();
  int64_t ranks = group->size(), offset = shift.getOffset();
  Code c = coordinate(*group);
  // The peer `by` ranks on, as a coordinate of the group.
  auto peerAt = [&](int64_t by) {
    if (shift.getCyclic())
      return Code("(") << c << " + " << ((by % ranks) + ranks) % ranks
                       << ") % " << ranks;
    // -1 where the group has none.
    Code at = Code("(") << c << (by > 0 ? " + " : " - ") << std::abs(by)
                        << ")";
    Code inside = by > 0 ? Code(at) << " < " << ranks
                         : Code(at) << " >= " << 0;
    return Code("(") << inside << " ? " << at << " : -" << 1 << ")";
  };
  Code to = peerAt(offset), from = peerAt(-offset);
  SmallVector<Code> prelude;
  if (!shift.getCyclic())
    prelude.push_back(Code("if (")
                      << from << " < " << 0 << ") braid_k_zero(rt, "
                      << dtypeName(shift.getResult().getType()) << ", "
                      << ptr(shift.getResult()) << ", "
                      << numElements(shift.getResult()) << ")");
  int64_t count = numElements(shift.getInput());
  emitTransferStart(shift, *group, "sendrecv",
                    ptr(shift.getInput())
                        << ", " << count << ", " << to << ", "
                        << ptr(shift.getResult()) << ", " << count << ", "
                        << from << ", " << dtypeName(shift.getInput().getType()),
                    prelude);
  return success();
}

LogicalResult FunctionEmitter::emitPeerTransfer(Operation *op) {
  FailureOr<GridGroup> group = groupOf(op);
  if (failed(group))
    return failure();
  auto send = dyn_cast<dist::SendOp>(op);
  auto recv = dyn_cast<dist::RecvOp>(op);
  Value buffer = send ? send.getValue() : recv.getResult();
  int64_t peer = send ? send.getPeer() : recv.getPeer();
  std::optional<uint64_t> tag = send ? send.getTag() : recv.getTag();
  Code args = ptr(buffer) << ", " << countAndType(numElements(buffer), buffer)
                          << ", " << peer;
  if (tag)
    args << ", " << *tag;
  std::string fn = send ? "send" : "recv";
  emitTransferStart(op, *group, tag ? fn + "_tagged" : fn, args);
  return success();
}

LogicalResult FunctionEmitter::emitWait(dist::WaitOp wait) {
  for (Value token : wait.getTokens())
    statements.push_back(Code("  braid_event_wait(rt, ")
                         << event(token) << ");\n");
  return success();
}

LogicalResult FunctionEmitter::emitBlockCopy(Operation *op) {
  FailureOr<GridGroup> group = groupOf(op);
  if (failed(group))
    return failure();
  // Block (c + offset) mod n of `whole` along `axis`, c the rank's
  // coordinate in the group of n ranks.
  auto copy = [&](StringRef kernel, Value from, Value to, Value whole,
                  int64_t axis, int64_t offset) {
    ArrayRef<int64_t> shape = shapeOf(whole);
    int64_t ranks = group->size();
    return blockCall(kernel, from, to, shape, axis, shape[axis] / ranks,
                     Code("((") << coordinate(*group) << " + " << offset
                                << ") % " << ranks << ")");
  };
  SmallVector<Code> calls;
  if (auto assemble = dyn_cast<dist::AssembleOp>(op)) {
    // Piece k into block (c + k) mod n of the result.
    for (auto [k, piece] : llvm::enumerate(assemble.getPieces()))
      calls.push_back(copy("braid_k_place", piece, assemble.getResult(),
                           assemble.getResult(), assemble.getAxis(), k));
  } else {
    auto block = cast<dist::BlockOp>(op);
    calls.push_back(copy("braid_k_slice", block.getInput(), block.getResult(),
                         block.getInput(), block.getAxis(), block.getOffset()));
  }
  emitBracketed(op, calls);
  return success();
}

LogicalResult FunctionEmitter::emitBucketCopy(Operation *op) {
  // `bytes` bytes from `from` + `fromAt` to `to` + `toAt`.
  auto copy = [&](Value to, int64_t toAt, Value from, int64_t fromAt,
                  int64_t bytes) {
    return Code("braid_rt_copy(rt, static_cast<char *>(")
           << ptr(to) << ") + " << toAt << ", static_cast<const char *>("
           << ptr(from) << ") + " << fromAt << ", " << bytes << ")";
  };
  SmallVector<Code> calls;
  if (auto pack = dyn_cast<dist::PackOp>(op)) {
    // Block r of each input after block r of the ones before it: one copy
    // per block (a bucket has a few dozen tensors).
    int64_t parts = static_cast<int64_t>(pack.getParts()), at = 0;
    for (int64_t r = 0; r < parts; ++r)
      for (Value input : pack.getInputs()) {
        int64_t bytes = getTensorBytes(input.getType()) / parts;
        calls.push_back(copy(pack.getResult(), at, input, r * bytes, bytes));
        at += bytes;
      }
  } else {
    // Block r of the result from part r, `offset` elements in.
    auto unpack = cast<dist::UnpackOp>(op);
    Value input = unpack.getInput(), result = unpack.getResult();
    int64_t parts = static_cast<int64_t>(unpack.getParts());
    int64_t bytes = getTensorBytes(result.getType()) / parts;
    int64_t part = getTensorBytes(input.getType()) / parts;
    int64_t offset = static_cast<int64_t>(unpack.getOffset()) *
                     (getTensorBytes(input.getType()) / numElements(input));
    for (int64_t r = 0; r < parts; ++r)
      calls.push_back(copy(result, r * bytes, input, r * part + offset, bytes));
  }
  emitBracketed(op, calls);
  return success();
}

LogicalResult FunctionEmitter::emitMicrobatch(dist::MicrobatchOp microbatch) {
  int64_t bytes = getTensorBytes(microbatch.getResult().getType());
  emitBracketed(microbatch,
                Code("braid_rt_copy(rt, ")
                    << ptr(microbatch.getResult())
                    << ", static_cast<const char *>("
                    << ptr(microbatch.getInput()) << ") + "
                    << microbatch.getIndex() * bytes << ", " << bytes << ")");
  return success();
}

} // namespace braid::cpp
