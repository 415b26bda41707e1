//===- Pipeline.cpp - the --braid-pipeline pass ---------------------------===//
//
// Cuts a differentiated, micro-batched step whose ops carry model chunks
// (braid.stage; the reverse pass's ops also braid.backward) into functions
// per chunk and phase, and writes for every pipeline rank a step function
// that runs its part of the schedule explicitly.
//
// What crosses between the pieces follows from the data alone:
//  - carry[k]: forward values made before chunk k and used from chunk k on
//    (usually the residual stream; a value skipping chunks is relayed);
//  - cotangent carry bcarry[k]: backward values made after chunk k and used
//    by the backward of chunk k or earlier;
//  - saved(c): forward values of chunk c its backward reads, kept by the
//    rank between the two (the received carry is kept as well).
// A rank's step function is unrolled over its actions, so the number of
// micro-batches whose activations are alive at once is visible to the memory
// planner, which then plans the stage's peak exactly.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/EntryPass.h"
#include "dialects/braid/Transforms/Passes.h"

#include "braid/Support/Debug.h"
#include "dialects/braid/Analysis/PipelineSchedule.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"
#include "dialects/braid/IR/OpRules.h"
#include "dialects/braid/Transforms/Pipelining.h"
#include "dialects/braid/Transforms/Sharding.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

#define DEBUG_TYPE "braid-pipeline"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDPIPELINEPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

namespace {
using ValueSet = llvm::SetVector<Value>;

/// One piece of the step: the ops of a chunk's forward or backward (or of
/// the backward's input- or weight-gradient part), what it reads from
/// elsewhere and what it gives out, in a deterministic order.
struct Piece {
  SmallVector<Operation *> ops;
  ValueSet inputs;
  ValueSet outputs;
  func::FuncOp function;
};

class PipelineBuilder {
public:
  PipelineBuilder(ModuleOp module, func::FuncOp step, PipelineSchedule schedule,
                  int64_t microbatches, std::optional<Grid> grid)
      : module(module), step(step), schedule(std::move(schedule)),
        microbatches(microbatches), grid(std::move(grid)),
        chunks(this->schedule.numChunks()) {}

  LogicalResult run();

private:
  ModuleOp module;
  func::FuncOp step;
  PipelineSchedule schedule;
  int64_t microbatches;
  std::optional<Grid> grid;
  int64_t chunks;

  llvm::DenseMap<Operation *, int64_t> chunkOf;
  llvm::DenseMap<Operation *, bool> backwardOf;
  SmallVector<Piece> forward, backward, backwardInput, backwardWeight;
  SmallVector<ValueSet> carry, bcarry;
  Value loss;
  /// The step's gradients: value, parameter, position in braid.gradients.
  SmallVector<std::pair<Value, FlatSymbolRefAttr>> gradients;

  LogicalResult classify();
  void computeCarries();
  void collectOutputs();
  LogicalResult collectInputs(Piece &piece, int64_t chunk, bool isBackward);
  void splitBackward(int64_t chunk);
  func::FuncOp outline(StringRef name, Piece &piece);
  friend class RankWriter;

  bool definedIn(Value v, int64_t chunk, bool isBackward) const {
    Operation *def = v.getDefiningOp();
    return def && chunkOf.lookup(def) == chunk &&
           backwardOf.lookup(def) == isBackward;
  }
};
} // namespace

LogicalResult PipelineBuilder::classify() {
  Block &body = step.getBody().front();
  forward.resize(chunks);
  backward.resize(chunks);
  for (Operation &op : body.without_terminator()) {
    auto attr = op.getAttrOfType<IntegerAttr>(kStageAttrName);
    if (!attr)
      return op.emitError("this op has no pipeline chunk (braid.stage): run "
                          "--braid-pipeline-stages before --braid-autodiff");
    int64_t chunk = attr.getInt();
    if (chunk < 0 || chunk >= chunks)
      return op.emitError("pipeline chunk ")
             << chunk << " is not one of the " << chunks << " model chunks";
    bool isBackward = op.hasAttr(kBackwardAttrName);
    chunkOf[&op] = chunk;
    backwardOf[&op] = isBackward;
    // Parameter reads and their compute copies are views of the rank's
    // parameters: every piece reading one makes it itself rather than being
    // passed it.
    if (isParamView(&op))
      continue;
    (isBackward ? backward : forward)[chunk].ops.push_back(&op);
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto names = step->getAttrOfType<ArrayAttr>(kGradientsAttrName);
  if (!names || ret.getNumOperands() != names.size() + 1)
    return step.emitError("--braid-pipeline needs the differentiated step: "
                          "the loss and the gradients of braid.gradients "
                          "(run --braid-autodiff first)");
  loss = ret.getOperand(0);
  if (!loss.getDefiningOp() || backwardOf.lookup(loss.getDefiningOp()) ||
      chunkOf.lookup(loss.getDefiningOp()) != chunks - 1)
    return step.emitError("the loss must be computed by the forward of the "
                          "last model chunk");
  for (auto [value, name] : llvm::zip(ret.getOperands().drop_front(), names)) {
    if (!value.getDefiningOp() || !backwardOf.lookup(value.getDefiningOp()))
      return step.emitError("the gradient of ")
             << name << " is not computed by a backward op";
    gradients.push_back({value, cast<FlatSymbolRefAttr>(name)});
  }
  return success();
}

/// Records what `piece` (chunk `chunk`, forward or backward) reads from
/// outside itself and checks it reads only what a pipeline can deliver.
LogicalResult PipelineBuilder::collectInputs(Piece &piece, int64_t chunk,
                                             bool isBackward) {
  llvm::SmallPtrSet<Operation *, 32> inside(piece.ops.begin(), piece.ops.end());
  for (Operation *op : piece.ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && (inside.count(def) || isParamView(def)))
        continue;
      if (def) {
        int64_t from = chunkOf.lookup(def);
        bool fromBackward = backwardOf.lookup(def);
        bool ok = isBackward ? (fromBackward ? from > chunk : from <= chunk)
                             : (!fromBackward && from < chunk);
        if (!ok)
          return op->emitError("a ")
                 << (isBackward ? "backward" : "forward") << " op of chunk "
                 << chunk << " reads a " << (fromBackward ? "backward" : "forward")
                 << " value of chunk " << from
                 << ", which no pipeline schedule delivers";
      }
      piece.inputs.insert(operand);
    }
  return success();
}

/// ZB-H1: the backward's input-gradient part is what the cotangents sent to
/// the previous chunk need; the rest (weight gradients) can wait.
void PipelineBuilder::splitBackward(int64_t chunk) {
  Piece &whole = backward[chunk];
  Piece &input = backwardInput[chunk];
  Piece &weight = backwardWeight[chunk];
  llvm::SetVector<Operation *> needed;
  BackwardSliceOptions slice;
  slice.inclusive = true;
  slice.omitBlockArguments = true;
  slice.filter = [&](Operation *op) {
    return chunkOf.lookup(op) == chunk && backwardOf.lookup(op);
  };
  for (Value v : whole.outputs)
    if (chunk > 0 && bcarry[chunk - 1].contains(v))
      (void)getBackwardSlice(v, &needed, slice);
  for (Operation *op : whole.ops)
    (needed.count(op) ? input : weight).ops.push_back(op);
  auto readsFrom = [](Piece &piece) {
    llvm::SmallPtrSet<Operation *, 32> inside(piece.ops.begin(),
                                              piece.ops.end());
    for (Operation *op : piece.ops)
      for (Value operand : op->getOperands())
        if (!operand.getDefiningOp() ||
            (!inside.count(operand.getDefiningOp()) &&
             !isParamView(operand.getDefiningOp())))
          piece.inputs.insert(operand);
  };
  readsFrom(input);
  readsFrom(weight);
  llvm::SmallPtrSet<Operation *, 32> inInput(input.ops.begin(),
                                             input.ops.end());
  for (Value v : whole.outputs)
    (inInput.count(v.getDefiningOp()) ? input : weight).outputs.insert(v);
  // What the weight part reads of the input part is kept in between.
  unsigned kept = 0;
  for (Value v : weight.inputs)
    if (v.getDefiningOp() && inInput.count(v.getDefiningOp()))
      kept += input.outputs.insert(v);
  LLVM_DEBUG(llvm::dbgs()
             << "chunk " << chunk << ": of its " << whole.ops.size()
             << " backward ops, " << input.ops.size()
             << " make the cotangents the previous chunk waits for (B), "
             << weight.ops.size()
             << " only weight gradients, which can wait (W); " << kept
             << " values are kept from B for W\n");
}

func::FuncOp PipelineBuilder::outline(StringRef name, Piece &piece) {
  MLIRContext *context = module.getContext();
  OpBuilder b(context);
  b.setInsertionPoint(step);
  SmallVector<Type> inputs, outputs;
  for (Value v : piece.inputs)
    inputs.push_back(v.getType());
  for (Value v : piece.outputs)
    outputs.push_back(v.getType());
  auto f = func::FuncOp::create(b, step.getLoc(), name,
                                b.getFunctionType(inputs, outputs));
  f.setPrivate();
  f->setAttr(kPipelineChunkAttrName, UnitAttr::get(context));
  Block *entry = f.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  map.map(piece.inputs.getArrayRef(), entry->getArguments());
  // A parameter view is made where the piece first reads it (a compute
  // copy of one held by a chunk's forward for its backward would hold the
  // stage's weights once per micro-batch in flight: 13.6 GB per GPU on
  // Llama 3 70B's first stage of pp=4 with ZeRO-1).
  auto unstage = [](Operation *clone) {
    clone->removeAttr(kStageAttrName);
    clone->removeAttr(kBackwardAttrName);
  };
  for (Operation *op : piece.ops) {
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && isParamView(def))
        cloneParamView(b, operand, map, unstage);
    Operation *clone = b.clone(*op, map);
    clone->removeAttr(kStageAttrName);
    clone->removeAttr(kBackwardAttrName);
  }
  SmallVector<Value> results;
  for (Value v : piece.outputs)
    results.push_back(map.lookup(v));
  func::ReturnOp::create(b, step.getLoc(), results);
  piece.function = f;
  return f;
}

namespace {
/// Writes the step function of one pipeline rank: its actions in the
/// schedule's order, each a call of a piece with the transfers between
/// ranks around it, then the loss every rank reports and the gradients the
/// rank holds (summed across ranks for a parameter several hold).
class RankWriter {
public:
  RankWriter(PipelineBuilder &pipeline, int64_t rank)
      : p(pipeline), rank(rank), context(p.module.getContext()), b(context),
        loc(p.step.getLoc()),
        ppAxis(p.grid ? p.grid->find("pp") : std::nullopt) {}

  /// Writes the function and adds its name to `entries`.
  void write(SmallVector<Attribute> &entries);

private:
  PipelineBuilder &p;
  int64_t rank;
  MLIRContext *context;
  OpBuilder b;
  Location loc;
  std::optional<int16_t> ppAxis;

  /// The step's arguments the rank's chunks read, in order.
  SmallVector<unsigned> args;
  /// The gradients this rank computes: parameter -> indices in gradients.
  llvm::MapVector<StringRef, SmallVector<unsigned>> held;
  func::FuncOp f;
  Block *entry = nullptr;
  /// Values of the step per micro-batch, as this rank has them.
  std::map<std::pair<void *, int64_t>, Value> env;
  Value lossSum;
  /// Each held parameter's gradient summed over the micro-batches so far.
  llvm::DenseMap<StringRef, Value> accumulated;

  void collectArguments();
  void createFunction();
  static std::pair<void *, int64_t> key(Value v, int64_t mb) {
    return std::make_pair(v.getAsOpaquePointer(), mb);
  }
  Value lookup(Value v, int64_t mb);
  /// Transfers between pipeline ranks are tagged so that they match
  /// whatever order the two ranks' schedules issue them in.
  int64_t tag(int64_t boundary, int64_t mb, bool isBackward) const {
    return 1 + 2 * (boundary * p.microbatches + mb) + (isBackward ? 1 : 0);
  }
  void send(Value v, int64_t peer, int64_t t);
  Value recv(Type type, int64_t peer, int64_t t);
  void call(Piece &piece, StringRef kind, int64_t chunk, int64_t mb);
  void accumulate(Piece &piece, int64_t mb);
  void runAction(const PipelineAction &action);
  /// The gradients the rank returns (after the loss), and for each its
  /// parameter and how many ranks hold a copy.
  void collectGradients(SmallVectorImpl<Value> &results,
                        SmallVectorImpl<Attribute> &names,
                        SmallVectorImpl<int64_t> &copies);
};
} // namespace

void RankWriter::collectArguments() {
  llvm::SetVector<unsigned> used;
  for (int64_t c = 0; c < p.chunks; ++c)
    if (p.schedule.rankOf(c) == rank)
      for (SmallVector<Piece> *pieces : {&p.forward, &p.backward})
        for (Value v : (*pieces)[c].inputs)
          if (auto arg = dyn_cast<BlockArgument>(v))
            used.insert(arg.getArgNumber());
  args.assign(used.begin(), used.end());
  llvm::sort(args);
  for (auto [i, g] : llvm::enumerate(p.gradients))
    if (p.schedule.rankOf(p.chunkOf.lookup(g.first.getDefiningOp())) == rank)
      held[g.second.getValue()].push_back(i);
}

void RankWriter::createFunction() {
  // Arguments: the whole local batch (micro-batches times the step's).
  Block &body = p.step.getBody().front();
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned a : args) {
    auto type = cast<RankedTensorType>(body.getArgument(a).getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] *= p.microbatches;
    argTypes.push_back(type.clone(shape));
    NamedAttrList attrs(p.step.getArgAttrDict(a));
    if (auto global = attrs.get(kGlobalShapeAttrName)) {
      SmallVector<int64_t> g(cast<DenseI64ArrayAttr>(global).asArrayRef());
      g[0] *= p.microbatches;
      attrs.set(kGlobalShapeAttrName, DenseI64ArrayAttr::get(context, g));
    }
    argAttrs.push_back(attrs.getDictionary(context));
  }
  b.setInsertionPoint(p.step);
  std::string name = (p.step.getSymName() + ".pp" + Twine(rank)).str();
  f = func::FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    f.setArgAttrs(i, attrs);
  // Each rank's function is a program of its own, in place of the step.
  setEntryKind(f, EntryKind::TrainStep);
  f->setAttr(kPipelineRankAttrName, b.getI64IntegerAttr(rank));
  // The most micro-batch-chunks whose forward has run and backward not:
  // whose saved activations are alive at once (m for GPipe, at most p for
  // 1F1B on the first rank). The memory plan of this function holds them.
  int64_t live = 0, peakLive = 0;
  for (const PipelineAction &action : p.schedule.ranks[rank]) {
    if (action.kind == ActionKind::Forward)
      peakLive = std::max(peakLive, ++live);
    else if (action.kind == ActionKind::Backward)
      --live;
  }
  f->setAttr(kPeakLiveMicrobatchesAttrName, b.getI64IntegerAttr(peakLive));
  LLVM_DEBUG({
    llvm::dbgs() << "rank " << rank << " runs";
    for (const PipelineAction &action : p.schedule.ranks[rank])
      llvm::dbgs() << " " << p.schedule.label(action);
    llvm::dbgs() << "\n  at most " << peakLive
                 << " micro-batch-chunks' activations alive at once (forward "
                    "run, backward not yet)\n";
  });
  entry = f.addEntryBlock();
  b.setInsertionPointToStart(entry);
}

Value RankWriter::lookup(Value v, int64_t mb) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return env.at(key(v, mb));
  auto found = env.find(key(v, mb));
  if (found != env.end())
    return found->second;
  unsigned position = llvm::find(args, arg.getArgNumber()) - args.begin();
  Value slice = entry->getArgument(position);
  if (p.microbatches > 1)
    slice = dist::MicrobatchOp::create(
        b, loc, cast<RankedTensorType>(arg.getType()), slice,
        b.getI64IntegerAttr(mb), b.getI64IntegerAttr(p.microbatches));
  env[key(v, mb)] = slice;
  return slice;
}

// Each transfer is waited for where it is issued; the overlap scheduler is
// what moves waits later.
void RankWriter::send(Value v, int64_t peer, int64_t t) {
  auto op = dist::SendOp::create(
      b, loc, dist::TokenType::get(context), v,
      FlatSymbolRefAttr::get(context, p.grid->symbol),
      b.getDenseI16ArrayAttr({*ppAxis}), b.getI64IntegerAttr(peer),
      b.getI64IntegerAttr(t));
  dist::WaitOp::create(b, loc, ValueRange{op.getToken()});
}

Value RankWriter::recv(Type type, int64_t peer, int64_t t) {
  auto op = dist::RecvOp::create(
      b, loc, type, dist::TokenType::get(context),
      FlatSymbolRefAttr::get(context, p.grid->symbol),
      b.getDenseI16ArrayAttr({*ppAxis}), b.getI64IntegerAttr(peer),
      b.getI64IntegerAttr(t));
  dist::WaitOp::create(b, loc, ValueRange{op.getToken()});
  return op.getResult();
}

void RankWriter::call(Piece &piece, StringRef kind, int64_t chunk,
                      int64_t mb) {
  SmallVector<Value> operands;
  for (Value v : piece.inputs)
    operands.push_back(lookup(v, mb));
  auto c = func::CallOp::create(b, loc, piece.function, operands);
  c->setAttr("dist.action", b.getStringAttr(kind));
  c->setAttr("dist.chunk", b.getI64IntegerAttr(chunk));
  c->setAttr("dist.microbatch", b.getI64IntegerAttr(mb));
  for (auto [v, result] : llvm::zip(piece.outputs, c.getResults()))
    env[key(v, mb)] = result;
}

void RankWriter::accumulate(Piece &piece, int64_t mb) {
  for (auto &[param, indices] : held)
    for (unsigned i : indices)
      if (piece.outputs.contains(p.gradients[i].first)) {
        Value g = env.at(key(p.gradients[i].first, mb));
        Value &acc = accumulated[param];
        acc = acc ? AddOp::create(b, loc, acc, g).getResult() : g;
      }
}

void RankWriter::runAction(const PipelineAction &action) {
  const PipelineSchedule &schedule = p.schedule;
  int64_t c = action.chunk, mb = action.microbatch;
  bool fromOther = c > 0 && schedule.rankOf(c - 1) != rank;
  bool toOther = c + 1 < p.chunks && schedule.rankOf(c + 1) != rank;
  switch (action.kind) {
  case ActionKind::Forward:
    if (fromOther)
      for (Value v : p.carry[c])
        env[key(v, mb)] =
            recv(v.getType(), schedule.rankOf(c - 1), tag(c, mb, false));
    call(p.forward[c], "F", c, mb);
    if (toOther)
      for (Value v : p.carry[c + 1])
        send(lookup(v, mb), schedule.rankOf(c + 1), tag(c + 1, mb, false));
    if (c == p.chunks - 1) {
      Value l = lookup(p.loss, mb);
      lossSum = lossSum ? AddOp::create(b, loc, lossSum, l).getResult() : l;
    }
    break;
  case ActionKind::Backward: {
    if (toOther)
      for (Value v : p.bcarry[c])
        env[key(v, mb)] =
            recv(v.getType(), schedule.rankOf(c + 1), tag(c, mb, true));
    Piece &piece = schedule.splitBackward ? p.backwardInput[c] : p.backward[c];
    call(piece, "B", c, mb);
    if (fromOther)
      for (Value v : p.bcarry[c - 1])
        send(lookup(v, mb), schedule.rankOf(c - 1), tag(c - 1, mb, true));
    accumulate(piece, mb);
    break;
  }
  case ActionKind::Weight:
    call(p.backwardWeight[c], "W", c, mb);
    accumulate(p.backwardWeight[c], mb);
    break;
  }
}

// Parameters several ranks hold (a tied embedding): each sends its sum to
// the others, and all add the parts in rank order, so that the copies stay
// bit-identical.
void RankWriter::collectGradients(SmallVectorImpl<Value> &results,
                                  SmallVectorImpl<Attribute> &names,
                                  SmallVectorImpl<int64_t> &copies) {
  int64_t tiedTag = tag(p.chunks, 0, false) + 2;
  // Each parameter's first gradient in the step and the ranks whose chunks
  // hold one, in one pass over the gradients (a search per parameter would
  // be quadratic in the layers).
  llvm::StringMap<std::pair<int64_t, SmallVector<int64_t>>> byParam;
  for (auto [i, g] : llvm::enumerate(p.gradients)) {
    auto [it, fresh] = byParam.try_emplace(g.second.getValue());
    if (fresh)
      it->second.first = i;
    int64_t r = p.schedule.rankOf(p.chunkOf.lookup(g.first.getDefiningOp()));
    if (!llvm::is_contained(it->second.second, r))
      it->second.second.push_back(r);
  }
  for (auto [index, entryPair] : llvm::enumerate(p.gradients)) {
    StringRef param = entryPair.second.getValue();
    if (!held.count(param) || held[param].front() != index)
      continue; // not ours, or not its first gradient here
    // The tag: the parameter's first gradient in the step, the same on
    // every rank.
    int64_t first = byParam[param].first;
    SmallVector<int64_t> holders = byParam[param].second;
    llvm::sort(holders);
    Value total = accumulated.lookup(param);
    int64_t t = tiedTag + first;
    if (holders.size() > 1) {
      LLVM_DEBUG(llvm::dbgs()
                 << "rank " << rank << ": @" << param
                 << " is read by chunks of ranks "
                 << llvm::join(llvm::map_range(holders,
                                               [](int64_t h) {
                                                 return std::to_string(h);
                                               }),
                               ", ")
                 << ": each sends its gradient to the others and all add "
                    "the parts in rank order, so the copies stay equal\n");
      for (int64_t h : holders)
        if (h != rank)
          send(total, h, t);
      Value own = total;
      total = Value();
      for (int64_t h : holders) {
        Value part = h == rank ? own : recv(own.getType(), h, t);
        total = total ? AddOp::create(b, loc, total, part).getResult() : part;
      }
    }
    // Named as the gradient, for dumps (a copy when it is one micro-batch's
    // value, which its chunk function computes).
    if (!total.getDefiningOp() || !isa<AddOp>(total.getDefiningOp()))
      total = MulOp::create(b, loc, total,
                            FillOp::create(b, loc, total.getType(),
                                           b.getF64FloatAttr(1.0)));
    total.getDefiningOp()->setLoc(
        NameLoc::get(StringAttr::get(context, "grad." + param.str()), loc));
    results.push_back(total);
    names.push_back(entryPair.second);
    copies.push_back(static_cast<int64_t>(holders.size()));
  }
}

void RankWriter::write(SmallVector<Attribute> &entries) {
  collectArguments();
  createFunction();
  for (const PipelineAction &action : p.schedule.ranks[rank])
    runAction(action);

  // The loss: the last chunk's rank has it; every rank reports it.
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  if (!lossSum)
    lossSum = FillOp::create(b, loc, scalar, b.getF64FloatAttr(0.0));
  if (p.schedule.stages > 1)
    lossSum = shard::AllReduceOp::create(b, loc, scalar, p.grid->symbol,
                                         {*ppAxis}, lossSum);
  SmallVector<Value> results = {lossSum};
  SmallVector<Attribute> names;
  SmallVector<int64_t> copies;
  collectGradients(results, names, copies);
  func::ReturnOp::create(b, loc, results);
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  f.setType(b.getFunctionType(f.getArgumentTypes(), resultTypes));
  f->setAttr(kGradientsAttrName, b.getArrayAttr(names));
  f->setAttr(kGradientCopiesAttrName, b.getDenseI64ArrayAttr(copies));
  entries.push_back(FlatSymbolRefAttr::get(f.getSymNameAttr()));
}

LogicalResult PipelineBuilder::run() {
  LLVM_DEBUG(llvm::dbgs() << "schedule " << stringifyEnum(schedule.kind)
                          << ": " << schedule.stages << " ranks x "
                          << schedule.virtualStages
                          << " model chunks (chunk c on rank c mod "
                          << schedule.stages << "), " << microbatches
                          << " micro-batches\n");
  if (schedule.splitBackward)
    splitLayerBackwards(module, step);
  if (failed(classify()))
    return failure();
  for (int64_t c = 0; c < chunks; ++c)
    if (failed(collectInputs(forward[c], c, false)) ||
        failed(collectInputs(backward[c], c, true)))
      return failure();

  computeCarries();
  collectOutputs();

  StringRef base = step.getSymName();
  if (schedule.splitBackward) {
    backwardInput.resize(chunks);
    backwardWeight.resize(chunks);
  }
  for (int64_t c = 0; c < chunks; ++c) {
    std::string prefix = (base + ".c" + Twine(c)).str();
    outline(prefix + ".fwd", forward[c]);
    if (schedule.splitBackward) {
      splitBackward(c);
      outline(prefix + ".bwd_input", backwardInput[c]);
      outline(prefix + ".bwd_weight", backwardWeight[c]);
    } else {
      outline(prefix + ".bwd", backward[c]);
    }
  }

  SmallVector<Attribute> entries;
  for (int64_t r = 0; r < schedule.stages; ++r)
    RankWriter(*this, r).write(entries);
  module->setAttr(kPipelineEntriesAttrName,
                  ArrayAttr::get(module.getContext(), entries));
  step.erase();
  return success();
}

/// A value named for debug output: its name, else its op and location.
static std::string describe(Value v) {
  std::string text;
  llvm::raw_string_ostream os(text);
  Operation *def = v.getDefiningOp();
  if (auto arg = dyn_cast<BlockArgument>(v))
    os << "argument #" << arg.getArgNumber();
  else if (auto name = dyn_cast<NameLoc>(def->getLoc()))
    os << "%" << name.getName().getValue();
  else
    os << "'" << def->getName() << "' at " << def->getLoc();
  return text;
}

/// Debug output: what crosses one boundary between chunks.
static void logCarry(StringRef direction, int64_t boundary,
                     const llvm::SetVector<Value> &values) {
  if (values.empty())
    return;
  int64_t bytes = 0;
  for (Value v : values)
    if (auto type = dyn_cast<ShapedType>(v.getType());
        type && type.hasStaticShape())
      bytes += getTensorBytes(type);
  llvm::dbgs() << "boundary " << boundary - 1 << "|" << boundary << ": "
               << direction << " " << bytes << " bytes a micro-batch in "
               << values.size() << " values: "
               << llvm::join(llvm::map_range(values, describe), ", ") << "\n";
}

/// Carries: every boundary a value crosses relays it.
void PipelineBuilder::computeCarries() {
  carry.resize(chunks + 1);
  bcarry.resize(chunks);
  for (int64_t c = 0; c < chunks; ++c)
    for (Piece *piece : {&forward[c], &backward[c]})
      for (Value v : piece->inputs) {
        Operation *def = v.getDefiningOp();
        if (!def)
          continue;
        int64_t from = chunkOf.lookup(def);
        if (!backwardOf.lookup(def))
          for (int64_t k = from + 1; k <= c; ++k)
            carry[k].insert(v);
        else
          for (int64_t k = c; k < from; ++k)
            bcarry[k].insert(v);
      }
  LLVM_DEBUG({
    for (int64_t k = 1; k < chunks; ++k) {
      logCarry("forward carries", k, carry[k]);
      logCarry("backward carries", k, bcarry[k - 1]);
    }
  });
}

/// Outputs: what later pieces and the driver take.
void PipelineBuilder::collectOutputs() {
  for (int64_t c = 0; c < chunks; ++c) {
    if (c == chunks - 1)
      forward[c].outputs.insert(loss);
    for (Value v : carry[c + 1])
      if (definedIn(v, c, false))
        forward[c].outputs.insert(v);
    for (Value v : backward[c].inputs)
      if (definedIn(v, c, false))
        forward[c].outputs.insert(v);
    if (c > 0)
      for (Value v : bcarry[c - 1])
        if (definedIn(v, c, true))
          backward[c].outputs.insert(v);
    for (auto &g : gradients)
      if (definedIn(g.first, c, true))
        backward[c].outputs.insert(g.first);
  }
}

namespace mlir::braid {
namespace {
struct BraidPipelinePass
    : TrainStepPass<BraidPipelinePass, impl::BraidPipelinePassBase> {
  using EntryPass::EntryPass;

  LogicalResult runOnEntry(ModuleOp module, func::FuncOp step) {
    if (failed(checkOneBlock(step, getArgument())))
      return failure();
    Location loc = step.getLoc();
    auto config = step->getAttrOfType<DictionaryAttr>(kPipelineAttrName);
    if (!config)
      return emitError(loc, "--braid-pipeline needs the step's model chunks "
                            "(run --braid-pipeline-stages first)");
    int64_t pp = config.getAs<IntegerAttr>("pp").getInt();
    int64_t virtualStages = config.getAs<IntegerAttr>("virtual_stages").getInt();
    int64_t microbatches = 1;
    if (auto attr = step->getAttrOfType<IntegerAttr>(kMicrobatchesAttrName))
      microbatches = attr.getInt();
    FailureOr<std::optional<Grid>> gridOf = Grid::of(module);
    if (failed(gridOf))
      return failure();
    std::optional<Grid> grid = *gridOf;
    if (pp > 1) {
      std::optional<int16_t> axis = grid ? grid->find("pp") : std::nullopt;
      if (!axis || grid->sizes[*axis] != pp)
        return emitError(loc, "a pipeline of ")
               << pp << " ranks needs a grid whose pp axis has size " << pp;
    }
    FailureOr<PipelineSchedule> plan =
        buildSchedule(schedule, pp, virtualStages, microbatches, loc);
    if (failed(plan))
      return failure();
    return PipelineBuilder(module, step, std::move(*plan), microbatches,
                           std::move(grid))
        .run();
  }
};
} // namespace
} // namespace mlir::braid
