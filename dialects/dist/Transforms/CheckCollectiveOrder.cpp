//===- CheckCollectiveOrder.cpp - one order of a group's collectives ------===//
//
// --dist-check-collective-order (Passes.td): the stages of a pipelined
// module must issue the collectives of every group they share in the same
// order, or the ranks of that group deadlock; and each stage must receive a
// neighbour's transfers in the order the neighbour sends them, which is how
// NCCL matches them.
//
//===----------------------------------------------------------------------===//

#include "dialects/dist/Transforms/Passes.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/Grid.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTCHECKCOLLECTIVEORDERPASS
#include "dialects/dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// One collective as its group's ranks must agree on it: kind and elements.
struct Collective {
  Operation *op;
  std::string what; ///< "all_reduce of 64 elements"
};

/// One point-to-point transfer along pp as its two ranks must agree on it.
struct Transfer {
  Operation *op;
  std::optional<int64_t> tag;
  Type type;
  std::string describe() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << (isa<dist::SendOp>(op) ? "send" : "receive");
    if (tag)
      os << " of tag " << *tag;
    os << " (" << type << ")";
    return text;
  }
};

/// The sends (true) and receives (false) along pp alone, by peer.
using Transfers = std::map<std::pair<bool, int64_t>, SmallVector<Transfer>>;

/// The collectives of `func`, its callees' inlined at their calls, in
/// program order, by group (the grid axes in grid order); and its sends and
/// receives along `pp` alone, by peer. Callees are found in `symbols`, the
/// module's table: a lookup per call would scan the module.
void flatten(const SymbolTable &symbols, func::FuncOp func,
             std::map<SmallVector<int16_t>, SmallVector<Collective>> &out,
             Transfers &transfers, int16_t pp, unsigned depth = 0) {
  if (depth > 64)
    return; // call chains are acyclic (the memory plan checks it)
  for (Operation &op : func.getBody().getOps()) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        flatten(symbols, callee, out, transfers, pp, depth + 1);
      continue;
    }
    if (auto send = dyn_cast<dist::SendOp>(op)) {
      if (send.getGridAxes() == ArrayRef<int16_t>{pp})
        transfers[{true, static_cast<int64_t>(send.getPeer())}].push_back(
            {&op, send.getTag(), send.getValue().getType()});
      continue;
    }
    if (auto recv = dyn_cast<dist::RecvOp>(op)) {
      if (recv.getGridAxes() == ArrayRef<int16_t>{pp})
        transfers[{false, static_cast<int64_t>(recv.getPeer())}].push_back(
            {&op, recv.getTag(), recv.getResult().getType()});
      continue;
    }
    std::optional<std::pair<ArrayRef<int16_t>, StringRef>> group =
        TypeSwitch<Operation *,
                   std::optional<std::pair<ArrayRef<int16_t>, StringRef>>>(&op)
            .Case<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
                  dist::AllToAllOp, dist::BroadcastOp>([](auto c) {
              return std::make_pair(c.getGridAxes(),
                                    c->getName().stripDialect());
            })
            .Default([](Operation *) { return std::nullopt; });
    if (!group)
      continue;
    int64_t elements =
        cast<RankedTensorType>(op.getOperand(0).getType()).getNumElements();
    out[SmallVector<int16_t>(group->first)].push_back(
        {&op, (group->second + " of " + Twine(elements) + " elements").str()});
  }
}

/// NCCL has no tags: the transfers from one rank to another match in the
/// order they were issued (runtime/src/cuda/comm_nccl.h). So stage a's sends
/// to stage b, in program order, must be b's receives from a, in program
/// order, tag and type alike; the MPI provider would match them by tag
/// whatever the order, NCCL would deliver one transfer's data to another
/// (or hang on a size that differs).
LogicalResult checkTransfers(ArrayRef<func::FuncOp> stages, ArrayRef<Transfers> transfers) {
  auto of = [&](size_t stage, bool send, size_t peer) -> ArrayRef<Transfer> {
    auto found = transfers[stage].find({send, static_cast<int64_t>(peer)});
    return found == transfers[stage].end() ? ArrayRef<Transfer>() : ArrayRef(found->second);
  };
  for (size_t a = 0; a < stages.size(); ++a) {
    for (size_t b = 0; b < stages.size(); ++b) {
      ArrayRef<Transfer> sends = of(a, true, b), recvs = of(b, false, a);
      func::FuncOp fromFunc = stages[a], toFunc = stages[b];
      StringRef from = fromFunc.getSymName(), to = toFunc.getSymName();
      if (sends.empty() && !recvs.empty()) {
        recvs.front().op->emitError("pipeline stage @")
            << to << " receives " << recvs.size() << " tensors from @" << from
            << ", which sends it none";
        return failure();
      }
      for (size_t i = 0, e = std::max(sends.size(), recvs.size()); i < e; ++i) {
        if (i < sends.size() && i < recvs.size() && sends[i].tag == recvs[i].tag &&
            sends[i].type == recvs[i].type)
          continue;
        if (i >= recvs.size()) {
          sends[i].op->emitError("pipeline stage @")
              << from << " sends " << sends.size() << " tensors to @" << to << ", which receives "
              << recvs.size() << " from it: its " << sends[i].describe() << " is never received";
          return failure();
        }
        InFlightDiagnostic diag =
            recvs[i].op->emitError("transfer #")
            << i << " that pipeline stage @" << to << " receives from @" << from << " is a "
            << recvs[i].describe() << ", where @" << from << "'s transfer #" << i << " to it is "
            << (i < sends.size() ? "a " + sends[i].describe() : std::string("none"))
            << ": NCCL matches a pair's transfers in issue order";
        if (i < sends.size())
          diag.attachNote(sends[i].op->getLoc()) << "@" << from << "'s transfer #" << i;
        return failure();
      }
    }
  }
  return success();
}

struct DistCheckCollectiveOrderPass
    : mlir::dist::impl::DistCheckCollectiveOrderPassBase<
          DistCheckCollectiveOrderPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto entries = module->getAttrOfType<ArrayAttr>(
        mlir::braid::kPipelineEntriesAttrName);
    FailureOr<std::optional<mlir::braid::Grid>> gridOf =
        mlir::braid::Grid::of(module);
    if (failed(gridOf))
      return signalPassFailure();
    std::optional<mlir::braid::Grid> grid = *gridOf;
    if (!entries || !grid)
      return; // one program for every rank: one order
    std::optional<int16_t> pp = grid->find("pp");
    if (!pp)
      return;
    SmallVector<std::pair<func::FuncOp, std::map<SmallVector<int16_t>, SmallVector<Collective>>>>
        stages;
    SmallVector<Transfers> transfers;
    SymbolTable symbols(module);
    for (Attribute entry : entries) {
      auto func = symbols.lookup<func::FuncOp>(
          cast<FlatSymbolRefAttr>(entry).getValue());
      if (!func) {
        module.emitError("braid.pipeline_entries names no function: ") << entry;
        return signalPassFailure();
      }
      stages.push_back({func, {}});
      transfers.emplace_back();
      flatten(symbols, func, stages.back().second, transfers.back(), *pp);
    }
    SmallVector<func::FuncOp> funcs;
    for (auto &stage : stages)
      funcs.push_back(stage.first);
    if (failed(checkTransfers(funcs, transfers)))
      return signalPassFailure();
    // Every group over pp spans the stages; compare each stage's sequence
    // with the first stage's.
    auto &[first, reference] = stages.front();
    for (auto &[func, groups] : llvm::drop_begin(stages)) {
      SmallVector<SmallVector<int16_t>> keys;
      for (auto &entry : reference)
        keys.push_back(entry.first);
      for (auto &entry : groups)
        if (!reference.count(entry.first))
          keys.push_back(entry.first);
      for (const SmallVector<int16_t> &axes : keys) {
        if (!llvm::is_contained(axes, *pp))
          continue;
        ArrayRef<Collective> want = reference[axes], got = groups[axes];
        for (size_t i = 0, e = std::max(want.size(), got.size()); i < e; ++i) {
          if (i < want.size() && i < got.size() && want[i].what == got[i].what)
            continue;
          std::string group = grid->describe(axes);
          if (i >= got.size()) {
            InFlightDiagnostic diag = module.emitError("pipeline stage @")
                                      << func.getSymName() << " issues "
                                      << got.size() << " collectives over "
                                      << group << ", @" << first.getSymName()
                                      << " " << want.size()
                                      << ": the ranks of the group would wait "
                                         "forever";
            diag.attachNote(want[i].op->getLoc())
                << "@" << first.getSymName() << " issues its " << want[i].what
                << " here";
            return signalPassFailure();
          }
          InFlightDiagnostic diag =
              got[i].op->emitError("collective #")
              << i << " over " << group << " of pipeline stage @"
              << func.getSymName() << " is an " << got[i].what << ", where @"
              << first.getSymName() << " issues "
              << (i < want.size() ? "an " + want[i].what : std::string("none"))
              << ": the ranks of the group would wait forever";
          if (i < want.size())
            diag.attachNote(want[i].op->getLoc())
                << "@" << first.getSymName() << "'s collective #" << i;
          return signalPassFailure();
        }
      }
    }
  }
};

} // namespace
