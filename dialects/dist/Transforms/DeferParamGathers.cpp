//===- DeferParamGathers.cpp - ZeRO's parameter gathers in the next step --===//
//
// A ZeRO-1/2 step ends with the all-gather of every parameter's updated
// ranges (ZeroUpdate.cpp), which nothing of the step can hide: the update
// waits for the whole gradient's reduction, and nothing follows it. As
// Megatron's distributed optimizer does with overlap-param-gather, the
// gathers move to the next step instead, before each parameter's first read,
// where the schedule starts them all at the step's start and waits for each
// just before the layer that reads it: the first layers' parameters arrive
// first, and the others while those compute.
//
//   %part = braid.get_param_range @p at %off     (a view of the parameter)
//   %whole, %t = dist.all_gather %part ...
//   dist.wait %t
//   braid.set_param @p, %whole                   (the gather writes @p)
//
// moves before the first op of the step that reads @p; when that op is a call
// (a pipeline stage's first forward of a model chunk), into a copy of the
// callee made for that call (`<callee>.first`), before the callee's first
// read of @p. Step 1 gathers parameters every rank holds whole already: the
// same values. What the last step leaves is completed by a function of the
// same gathers (`<step>.finish`, named by the step's `braid.finish`), which
// the runtime runs before it reads the parameters (dumps, the end of a run)
// and which, run between two steps, changes nothing.
//
//===----------------------------------------------------------------------===//

#include "ScheduleOverlap.h"

#include "dialects/braid/Analysis/PersistentEffects.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

#include <functional>

using namespace mlir;
using namespace mlir::braid;

namespace {

/// The end of a ZeRO update: the gather of @p's ranges into @p.
struct ParamGather {
  GetParamRangeOp range;
  dist::AllGatherOp gather;
  dist::WaitOp wait;
  SetParamOp set;

  SmallVector<Operation *, 4> ops() const { return {range, gather, wait, set}; }
};

/// The gathers `block` ends its ZeRO updates with: a set of @p from a gather
/// of a range of @p, each value read once, the wait the gather's only.
SmallVector<ParamGather> paramGathers(Block &block) {
  SmallVector<ParamGather> out;
  for (auto set : block.getOps<SetParamOp>()) {
    auto gather = set.getValue().getDefiningOp<dist::AllGatherOp>();
    if (!gather || gather->getBlock() != &block || !gather.getResult().hasOneUse())
      continue;
    auto range = gather.getInput().getDefiningOp<GetParamRangeOp>();
    if (!range || range->getBlock() != &block || range.getParam() != set.getParam() ||
        !range.getResult().hasOneUse())
      continue;
    Value token = gather.getToken();
    auto wait = token.hasOneUse() ? dyn_cast<dist::WaitOp>(*token.getUsers().begin())
                                  : dist::WaitOp();
    if (!wait || wait.getTokens().size() != 1 || wait->getBlock() != &block ||
        !wait->isBeforeInBlock(set))
      continue;
    out.push_back({range, gather, wait, set});
  }
  return out;
}

class Deferral {
public:
  explicit Deferral(ModuleOp module) : module(module), symbols(module) {}

  /// Defers the gathers of `entry`; returns how many moved.
  unsigned run(func::FuncOp entry) {
    if (entry.isExternal() || !entry.getBody().hasOneBlock() ||
        entry->hasAttr(kFinishAttrName))
      return 0;
    Block &block = entry.getBody().front();
    SmallVector<ParamGather> gathers = paramGathers(block);
    if (gathers.empty())
      return 0;
    func::FuncOp finish = makeFinish(entry);
    Block &finishBody = finish.getBody().front();
    unsigned moved = 0;
    for (ParamGather g : gathers) {
      // The finish function's copy, in the order of the step's.
      copy(g, finishBody, finishBody.getTerminator());
      Operation *reader = firstReader(block, g);
      if (!reader)
        continue; // a parameter nothing reads: it stays where it is
      auto call = dyn_cast<func::CallOp>(reader);
      if (call && !isa<func::CallOp>(readerInCallee(call, g)))
        reader = readerInCallee(firstCallCopy(call), g);
      copy(g, *reader->getBlock(), reader);
      erase(g);
      ++moved;
    }
    return moved;
  }

private:
  ModuleOp module;
  SymbolTable symbols;
  /// Each callee's copy for a first call, by the callee's name.
  llvm::StringMap<func::FuncOp> firstCopies;
  llvm::StringSet<> copies;
  /// What functions name, for where a parameter is first read. A callee's
  /// `.first` copy is summarized when a query first reaches it: it names what
  /// its original does, and the gathers moved into it name nothing else.
  PersistentEffects effects{symbols};

  /// Per block asked about: the ops naming each persistent tensor, in
  /// block order (built when first asked, then kept current as gathers
  /// move), so that finding a parameter's first reader does not rescan the
  /// step for each of its parameters.
  llvm::DenseMap<Block *, llvm::StringMap<SmallVector<Operation *, 4>>> namers;

  llvm::StringMap<SmallVector<Operation *, 4>> &namersOf(Block &block) {
    auto [it, inserted] = namers.try_emplace(&block);
    if (inserted)
      for (Operation &op : block)
        for (const auto &name : effects.namedBy(&op))
          it->second[name.getKey()].push_back(&op);
    return it->second;
  }

  /// The first op of `block` touching `g`'s parameter, `g`'s own aside.
  Operation *firstReader(Block &block, ParamGather g) {
    SmallVector<Operation *, 4> own = g.ops();
    auto &byName = namersOf(block);
    auto it = byName.find(g.set.getParam());
    if (it != byName.end())
      for (Operation *op : it->second)
        if (!llvm::is_contained(own, op))
          return op;
    return nullptr;
  }

  /// The first op of `call`'s callee (one block) touching `g`'s parameter.
  Operation *readerInCallee(func::CallOp call, ParamGather g) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock())
      return call; // stays before the call
    return firstReader(callee.getBody().front(), g);
  }

  /// `call` made the call of a copy of its callee of its own
  /// (`<callee>.first`, one per callee: a stage's first forward of a chunk
  /// is its first call of it).
  func::CallOp firstCallCopy(func::CallOp call) {
    StringRef name = call.getCallee();
    if (copies.contains(name))
      return call; // made for this call already
    func::FuncOp &copy = firstCopies[name];
    if (!copy) {
      auto callee = symbols.lookup<func::FuncOp>(name);
      copy = callee.clone();
      copy.setPrivate();
      copy.setName((name + ".first").str());
      symbols.insert(copy, Block::iterator(callee->getNextNode()));
      copies.insert(copy.getSymName());
    }
    call.setCallee(copy.getSymName());
    return call;
  }

  /// `<entry>.finish`, empty, named by the entry's braid.finish.
  func::FuncOp makeFinish(func::FuncOp entry) {
    OpBuilder b(module.getContext());
    auto finish = func::FuncOp::create(b, entry.getLoc(), (entry.getSymName() + ".finish").str(),
                                       b.getFunctionType({}, {}));
    finish.setPrivate();
    Block *body = finish.addEntryBlock();
    b.setInsertionPointToEnd(body);
    func::ReturnOp::create(b, entry.getLoc());
    symbols.insert(finish, Block::iterator(entry->getNextNode()));
    entry->setAttr(kFinishAttrName, FlatSymbolRefAttr::get(finish));
    return finish;
  }

  /// Copies `g` into `block` before `before`, and the index ops its range's
  /// offset is computed by (constants, coordinates, their arithmetic) at the
  /// block's start, so that the schedule can start the gather there: compute
  /// keeps its side of calls, the gather's range moves with it.
  void copy(ParamGather g, Block &block, Operation *before) {
    IRMapping map;
    OpBuilder b = OpBuilder::atBlockBegin(&block);
    std::function<void(Value)> index = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || map.contains(v))
        return;
      for (Value operand : def->getOperands())
        index(operand);
      b.clone(*def, map);
    };
    index(g.range.getOffset());
    b.setInsertionPoint(before);
    SmallVector<Operation *, 4> copies;
    for (Operation *op : g.ops())
      copies.push_back(b.clone(*op, map));
    // The copies of the range and the set name the parameter, before
    // `before` (the block's first op naming it, or its terminator): first
    // among the block's ops naming it. The index ops name nothing.
    auto known = namers.find(&block);
    if (known == namers.end())
      return;
    SmallVector<Operation *, 4> &list = known->second[g.set.getParam()];
    auto at = llvm::find(list, before);
    for (Operation *op : copies)
      if (effects.names(op, g.set.getParam()))
        at = std::next(list.insert(at, op));
  }

  void erase(ParamGather g) {
    // Of its ops, the range and the set name the parameter.
    if (auto known = namers.find(g.set->getBlock()); known != namers.end())
      if (auto list = known->second.find(g.set.getParam()); list != known->second.end())
        llvm::erase_if(list->second,
                       [&](Operation *op) { return llvm::is_contained(g.ops(), op); });
    g.set.erase();
    g.wait.erase();
    g.gather.erase();
    g.range.erase();
  }
};

} // namespace

namespace mlir::dist {

unsigned deferParamGathers(ModuleOp module) {
  Deferral deferral(module);
  unsigned moved = 0;
  for (func::FuncOp f : mlir::braid::getPrograms(module))
    moved += deferral.run(f);
  return moved;
}

} // namespace mlir::dist
