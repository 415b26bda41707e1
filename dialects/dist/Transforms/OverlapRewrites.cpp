//===- OverlapRewrites.cpp - what the overlap scheduler rewrites first -----===//
//
// Two rewrites that --braid-schedule-overlap (ScheduleOverlap.cpp) runs
// before it orders a function, each putting transfers where the schedule can
// start them early (ScheduleOverlap.h): a pipeline stage's gradient reductions
// into a copy of its chunk's last backward, ZeRO-3's gathers out of the
// layers' functions into their callers.
//
//===----------------------------------------------------------------------===//

#include "ScheduleOverlap.h"

#include "dialects/braid/Analysis/ElementwiseFusion.h"
#include "dialects/braid/Analysis/MemoryPlan.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::braid;

namespace {

/// A pipeline stage's gradient reduction after its chunk's last backward:
/// `result` of the call, turned by `chain` into what `transfer` reduces,
/// which `wait` completes; or the send of a result to the previous stage.
struct Reduction {
  unsigned result;
  /// What turns the result into the transfer's operand, in order: single-use
  /// elementwise ops and reshapes (the accumulation, ZeRO's flattening).
  SmallVector<Operation *> chain;
  Operation *transfer = nullptr;
  dist::WaitOp wait;
};

/// The reductions that only read the last backward `call`'s results (over
/// groups whose ranks run this program: not over pp), and the sends of its
/// results when there are reductions.
SmallVector<Reduction> reductionsAfter(func::CallOp call, std::optional<int16_t> pp) {
  SmallVector<Reduction> out;
  for (auto [i, result] : llvm::enumerate(call.getResults())) {
    Reduction r;
    r.result = i;
    Value value = result;
    Operation *user = nullptr;
    while (value.hasOneUse()) {
      user = *value.getUsers().begin();
      bool passes = (isFusibleElementwise(user) || isa<ReshapeOp>(user)) &&
                    user->getNumResults() == 1 &&
                    llvm::all_of(user->getOperands(), [&](Value v) {
                      return v == value || !v.getDefiningOp() ||
                             v.getDefiningOp()->isBeforeInBlock(call);
                    });
      if (!passes)
        break;
      r.chain.push_back(user);
      value = user->getResult(0);
      user = nullptr;
    }
    if (!user)
      continue;
    // The message to the previous stage moves too, so that it leaves
    // before the copy waits for its reductions.
    bool send = isa<dist::SendOp>(user) && r.chain.empty();
    if (!(send || isa<dist::AllReduceOp, dist::ReduceScatterOp>(user)) ||
        user->getNumOperands() != 1 || user->getBlock() != call->getBlock())
      continue;
    auto axes = user->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
    if (!axes || (!send && pp && llvm::is_contained(axes.asArrayRef(), *pp)))
      continue;
    Value token = dist::getToken(user);
    auto wait = token && token.hasOneUse() ? dyn_cast<dist::WaitOp>(*token.getUsers().begin())
                                           : dist::WaitOp();
    if (!wait || wait.getTokens().size() != 1)
      continue;
    r.transfer = user;
    r.wait = wait;
    out.push_back(r);
  }
  // Sends alone gain nothing from moving.
  if (llvm::all_of(out, [](const Reduction &r) { return isa<dist::SendOp>(r.transfer); }))
    out.clear();
  return out;
}

/// In each stage of a pipelined module, the gradient reductions that follow
/// a chunk's last backward call move into a copy of the callee made for that
/// call (`<callee>.last`, taking the accumulations' other operands as
/// arguments and returning the reduced values), where the schedule starts
/// each as soon as its layer's backward has produced the gradient: the
/// data-parallel reduction of the last micro-batch overlaps the backward of
/// the layers below, as Megatron's gradient buckets do. A send of the
/// call's results to the previous stage moves along, ahead of the copy's
/// waits (its order among the stage's pp transfers is unchanged). The call
/// keeps its attributes (the pipeline action the trace brackets).
} // namespace

namespace mlir::dist {

void specializeLastBackward(ModuleOp module, std::optional<int16_t> pp) {
  auto entries = module->getAttrOfType<ArrayAttr>(kPipelineEntriesAttrName);
  if (!entries)
    return;
  SymbolTable symbols(module);
  for (Attribute entry : entries) {
    auto stage = symbols.lookup<func::FuncOp>(cast<FlatSymbolRefAttr>(entry).getValue());
    if (!stage || !stage.getBody().hasOneBlock())
      continue;
    llvm::MapVector<StringRef, func::CallOp> last;
    llvm::StringMap<unsigned> calls;
    for (auto call : stage.getBody().front().getOps<func::CallOp>()) {
      last[call.getCallee()] = call;
      ++calls[call.getCallee()];
    }
    for (auto [name, call] : last) {
      auto callee = symbols.lookup<func::FuncOp>(name);
      if (!callee || !callee.getBody().hasOneBlock())
        continue;
      SmallVector<Reduction> reductions = reductionsAfter(call, pp);
      if (reductions.empty())
        continue;
      // The copy: the accumulations' other operands become arguments.
      func::FuncOp copy = callee.clone();
      copy.setPrivate();
      copy.setName((name + ".last").str());
      symbols.insert(copy, Block::iterator(callee->getNextNode()));
      Block &body = copy.getBody().front();
      auto ret = cast<func::ReturnOp>(body.getTerminator());
      SmallVector<Value> extraOperands;
      SmallVector<Value> returned(ret.getOperands());
      OpBuilder b(ret);
      SmallVector<Value> tokens;
      for (Reduction &r : reductions) {
        IRMapping map;
        map.map(call.getResult(r.result), returned[r.result]);
        // Dumps announce the gradients where the stage's program did.
        for (Operation *op : r.chain) {
          for (Value v : op->getOperands())
            if (!map.contains(v)) {
              extraOperands.push_back(v);
              map.map(v, body.addArgument(v.getType(), v.getLoc()));
            }
          b.clone(*op, map)->setAttr("dist.announce", b.getUnitAttr());
        }
        Operation *t = b.clone(*r.transfer, map);
        if (!isa<dist::SendOp>(t)) {
          t->setAttr("dist.announce", b.getUnitAttr());
          returned[r.result] = t->getResult(0);
        }
        tokens.push_back(dist::getToken(t));
      }
      for (Value token : tokens)
        dist::WaitOp::create(b, ret.getLoc(), ValueRange{token});
      ret->setOperands(returned);
      copy.setFunctionType(FunctionType::get(module.getContext(), body.getArgumentTypes(),
                                             ValueRange(returned).getTypes()));
      // Arguments keep their attributes (the new ones have none).
      if (ArrayAttr args = callee.getAllArgAttrs()) {
        SmallVector<Attribute> all(args.begin(), args.end());
        all.resize(body.getNumArguments(), DictionaryAttr::get(module.getContext()));
        copy.setAllArgAttrs(all);
      }
      // The call of the copy replaces the call and the reductions.
      OpBuilder at(call);
      SmallVector<Value> operands(call.getOperands());
      llvm::append_range(operands, extraOperands);
      auto replacement = func::CallOp::create(at, call.getLoc(), copy, operands);
      for (NamedAttribute attr : call->getDiscardableAttrs())
        replacement->setAttr(attr.getName(), attr.getValue());
      for (Reduction &r : reductions) {
        if (!isa<dist::SendOp>(r.transfer))
          r.transfer->getResult(0).replaceAllUsesWith(replacement.getResult(r.result));
        r.wait.erase();
        r.transfer->erase();
        for (Operation *op : llvm::reverse(r.chain))
          op->erase();
      }
      call.replaceAllUsesWith(replacement.getResults());
      call.erase();
      // A chunk run once (one micro-batch) leaves the original unused. The
      // stage's other calls of it answer without a walk of the module.
      if (calls.lookup(name) == 1 &&
          SymbolTable::symbolKnownUseEmpty(callee, module))
        callee.erase();
    }
  }
}

/// The gathers of `body`'s arguments that could move to the callers: each
/// the argument's only use, completed by a wait of its own.
static SmallVector<std::pair<dist::AllGatherOp, dist::WaitOp>>
argumentGathers(Block &body) {
  SmallVector<std::pair<dist::AllGatherOp, dist::WaitOp>> gathers;
  for (auto gather : body.getOps<dist::AllGatherOp>()) {
    auto arg = dyn_cast<BlockArgument>(gather.getInput());
    Value token = dist::getToken(gather);
    if (!arg || arg.getOwner() != &body || !arg.hasOneUse() || !token.hasOneUse())
      continue;
    auto wait = dyn_cast<dist::WaitOp>(*token.getUsers().begin());
    if (wait && wait.getTokens().size() == 1)
      gathers.push_back({gather, wait});
  }
  return gathers;
}

bool mayHoistArgumentGathers(ModuleOp module) {
  return llvm::any_of(module.getOps<func::FuncOp>(), [](func::FuncOp func) {
    return !func.isExternal() && func.getBody().hasOneBlock() &&
           !argumentGathers(func.getBody().front()).empty();
  });
}

/// ZeRO-3 gathers a layer's sharded parameters inside the layer's function,
/// where nothing comes before them to hide them behind. Each gather of an
/// argument (read by nothing else) moves to the function's callers, before
/// each call, and the function takes the gathered tensor instead; the
/// schedule then starts it one call ahead (a prefetch: the next layer's
/// parameters arrive while this layer computes). Functions some use of which
/// is not a call keep theirs.
/// Returns the most bytes one call's moved gathers produce (0: none moved).
int64_t hoistArgumentGathers(ModuleOp module) {
  int64_t largest = 0;
  // The users of each symbol, found in one walk of the module rather than
  // one per function (a module holds functions per layer). Moving gathers
  // adds and removes no use of a function.
  std::optional<SymbolTable::UseRange> allUses =
      SymbolTable::getSymbolUses(&module.getBodyRegion());
  if (!allUses)
    return largest;
  llvm::DenseMap<StringAttr, SmallVector<Operation *>> usersOf;
  for (const SymbolTable::SymbolUse &use : *allUses)
    usersOf[use.getSymbolRef().getRootReference()].push_back(use.getUser());
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || !func.getBody().hasOneBlock())
      continue;
    auto found = usersOf.find(func.getSymNameAttr());
    if (found == usersOf.end())
      continue;
    ArrayRef<Operation *> users = found->second;
    SmallVector<func::CallOp> calls;
    for (Operation *user : users)
      if (auto call = dyn_cast<func::CallOp>(user))
        calls.push_back(call);
    if (calls.size() != users.size())
      continue;
    // A pipeline action's (a model chunk's forward or backward per
    // micro-batch) keeps its gathers: moved to the stage's program they would
    // all run before the chunk, every layer's parameters gathered at once,
    // where inside it each layer's are gathered a call ahead of that layer.
    if (llvm::any_of(calls, [](func::CallOp call) { return call->hasAttr("dist.action"); }))
      continue;
    Block &body = func.getBody().front();
    SmallVector<std::pair<dist::AllGatherOp, dist::WaitOp>> gathers =
        argumentGathers(body);
    if (gathers.empty())
      continue;
    int64_t bytes = 0;
    for (auto [gather, wait] : gathers)
      bytes += getTensorBytes(gather.getResult().getType());
    largest = std::max(largest, bytes);
    for (func::CallOp call : calls) {
      OpBuilder b(call);
      for (auto [gather, wait] : gathers) {
        unsigned i = cast<BlockArgument>(gather.getInput()).getArgNumber();
        // A read of its own for each gather (the forward's and the
        // backward's calls share one), so that it moves with the gather.
        Value operand = call.getOperand(i);
        if (auto read = operand.getDefiningOp<GetParamOp>()) {
          operand = b.clone(*read)->getResult(0);
        } else if (auto convert = operand.getDefiningOp<ConvertOp>()) {
          // The compute copy of a parameter (bf16): a read and a convert of
          // its own, for the same reason.
          if (auto read = convert.getInput().getDefiningOp<GetParamOp>()) {
            IRMapping copy;
            copy.map(read.getResult(), b.clone(*read)->getResult(0));
            operand = b.clone(*convert, copy)->getResult(0);
          }
        }
        IRMapping map;
        map.map(gather.getInput(), operand);
        Operation *copy = b.clone(*gather, map);
        dist::WaitOp::create(b, wait.getLoc(), ValueRange{dist::getToken(copy)});
        Operation *replaced = call.getOperand(i).getDefiningOp();
        call->setOperand(i, copy->getResult(0));
        if (replaced && isa<GetParamOp, ConvertOp>(replaced) && replaced->use_empty()) {
          Operation *read = isa<ConvertOp>(replaced)
                                ? cast<ConvertOp>(replaced).getInput().getDefiningOp()
                                : nullptr;
          replaced->erase();
          if (read && isa<GetParamOp>(read) && read->use_empty())
            read->erase();
        }
      }
    }
    for (auto [gather, wait] : gathers) {
      auto arg = cast<BlockArgument>(gather.getInput());
      arg.setType(gather.getResult().getType());
      gather.getResult().replaceAllUsesWith(arg);
      wait.erase();
      gather.erase();
      // The argument is whole now: no sharding to describe.
      func.removeArgAttr(arg.getArgNumber(), kSplitAttrName);
      func.removeArgAttr(arg.getArgNumber(), kGlobalShapeAttrName);
    }
    func.setFunctionType(FunctionType::get(module.getContext(), body.getArgumentTypes(),
                                           func.getResultTypes()));
  }
  return largest;
}

} // namespace mlir::dist
