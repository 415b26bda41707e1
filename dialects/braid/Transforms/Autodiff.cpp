//===- Autodiff.cpp - the --braid-autodiff pass ---------------------------===//
//
// Reverse mode over the step function. Ops are visited in reverse; each
// contributes the cotangents of its operands through its VJP rule
// (VJPRules.cpp), summed where a value has several uses. A call to a layer
// function is differentiated through a generated backward function:
//
//   1. f.vjp(args..., dresults...) -> (dargs...) clones f's forward body and
//      appends its reverse pass (this is full recompute);
//   2. unless recompute=full, the forward part is split off: f.fwd returns
//      f's results plus every value the reverse part reads ("saved"), and
//      f.bwd(args..., saved..., dresults...) keeps only the reverse part and
//      the ops recompute chooses to redo (attention cores for selective).
//
// A step whose ops carry pipeline chunks (`braid.stage`, from
// --braid-pipeline-stages) keeps them: every op the reverse pass creates gets
// the chunk of the forward op it differentiates and the unit attribute
// `braid.backward`, and a parameter read in several chunks (a tied
// embedding) gets one gradient per chunk, so that --braid-pipeline can cut
// forward and backward of each chunk apart.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/EntryPass.h"
#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/Pipelining.h"

#include "braid/Support/Debug.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"
#include "dialects/braid/IR/OpRules.h"
#include "dialects/braid/Transforms/VJPRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"

#include <set>

#define DEBUG_TYPE "braid-autodiff"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDAUTODIFFPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

namespace {

std::optional<int64_t> stageOf(Operation *op) {
  if (op)
    if (auto attr = op->getAttrOfType<IntegerAttr>(kStageAttrName))
      return attr.getInt();
  return std::nullopt;
}

/// Stamps the ops a builder creates in the step with the pipeline chunk of
/// the op being differentiated, and marks those of the reverse pass.
struct StageStamper : public OpBuilder::Listener {
  std::optional<int64_t> stage;
  bool backward = false;

  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint previous) override {
    if (stage)
      op->setAttr(kStageAttrName,
                  IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                   *stage));
    if (backward)
      op->setAttr(kBackwardAttrName, UnitAttr::get(op->getContext()));
  }
};

/// The functions a layer call is differentiated with.
struct LayerVJP {
  func::FuncOp forward;  ///< f itself (full recompute) or f.fwd
  func::FuncOp backward; ///< (args..., saved..., dresults...) -> (dargs...)
  unsigned numResults = 0;
  unsigned numSaved = 0;
};

/// A location without its name: the names of forward values must not be
/// reused by the ops computing their cotangents.
Location plain(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getChildLoc();
  return loc;
}

/// The name a value was written with, if any.
std::optional<StringRef> nameOf(Value value) {
  if (Operation *op = value.getDefiningOp()) {
    if (auto get = dyn_cast<GetParamOp>(op))
      return get.getName();
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      return name.getName().getValue();
  }
  return std::nullopt;
}

class Autodiff {
public:
  Autodiff(ModuleOp module, Recompute policy)
      : module(module), symbols(module), policy(policy) {}

  LogicalResult differentiateStep(func::FuncOp step);

private:
  ModuleOp module;
  SymbolTable symbols;
  Recompute policy;
  llvm::DenseMap<Operation *, std::unique_ptr<LayerVJP>> layers;
  /// Calls to forward variants: their layer and where saved values start.
  llvm::DenseMap<Operation *, LayerVJP *> callLayer;
  /// Stamps the step's new ops (null outside the step's reverse pass).
  StageStamper *stamper = nullptr;

  FailureOr<LayerVJP *> getLayerVJP(func::FuncOp f);
  /// f.bwd for full recompute, (args..., dresults...) -> (dargs...): f's
  /// forward body cloned (`forwardOps`), then its reverse pass.
  FailureOr<func::FuncOp> buildVJP(func::FuncOp f,
                                   SmallVectorImpl<Operation *> &forwardOps);
  /// The forward ops of a layer's backward function (`forwardOps`) that it
  /// redoes rather than being passed their values.
  llvm::SetVector<Operation *>
  chooseRecomputed(ArrayRef<Operation *> forwardOps);
  /// Makes `forward` (f.fwd: f's results and the values the backward reads
  /// that it does not redo) and reduces f.bwd to the reverse pass and the
  /// recomputed ops, taking the saved values as arguments. Returns how many
  /// values are saved.
  FailureOr<unsigned> splitLayer(func::FuncOp f, func::FuncOp vjp,
                                 ArrayRef<Operation *> forwardOps,
                                 const llvm::SetVector<Operation *> &recomputed,
                                 func::FuncOp &forward);
  /// Layer calls in the step call their forward variants, which also return
  /// saved values.
  LogicalResult callForwardVariants(OpBuilder &b, Block &body,
                                    StageStamper &stageStamper);
  /// The cotangent the loss is seeded with: the share of it each rank
  /// differentiates.
  double lossShare();
  void nameCotangents(ArrayRef<Operation *> forwardOps,
                      const llvm::DenseMap<Value, Value> &cot);
  /// Returns the loss and each parameter's gradient from the step
  /// (braid.gradients names them).
  void returnGradients(OpBuilder &b, func::FuncOp step,
                       ArrayRef<Operation *> forwardOps,
                       const llvm::DenseMap<Value, Value> &cot,
                       StageStamper &stageStamper, bool staged);
  LogicalResult reverse(OpBuilder &b, ArrayRef<Operation *> ops,
                        llvm::DenseMap<Value, Value> &cot);
  void accumulate(OpBuilder &b, llvm::DenseMap<Value, Value> &cot,
                  Value value, Value cotangent);
  Value zeros(OpBuilder &b, Location loc, Type type) {
    return FillOp::create(b, loc, type, b.getF64FloatAttr(0.0));
  }
};
} // namespace

void Autodiff::accumulate(OpBuilder &b, llvm::DenseMap<Value, Value> &cot,
                          Value value, Value cotangent) {
  if (!cotangent || !isDifferentiable(value.getType()))
    return;
  auto [it, inserted] = cot.try_emplace(value, cotangent);
  if (!inserted)
    it->second = AddOp::create(b, plain(cotangent.getLoc()), it->second,
                               cotangent);
}

LogicalResult Autodiff::reverse(OpBuilder &b, ArrayRef<Operation *> ops,
                                llvm::DenseMap<Value, Value> &cot) {
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> dresults;
    bool any = false;
    for (Value result : op->getResults()) {
      dresults.push_back(cot.lookup(result));
      any |= bool(dresults.back());
    }
    // Nothing flows back from results without cotangents, or into ops
    // without operands (parameter reads: their cotangents are the gradients).
    if (!any || op->getNumOperands() == 0)
      continue;
    Location loc = plain(op->getLoc());
    if (stamper)
      stamper->stage = stageOf(op);

    if (auto call = dyn_cast<func::CallOp>(op)) {
      LayerVJP *layer = callLayer.lookup(call);
      if (!layer)
        return call.emitError("autodiff reached a call it did not prepare");
      SmallVector<Value> operands(call.getOperands());
      for (unsigned i = 0; i < layer->numSaved; ++i)
        operands.push_back(call.getResult(layer->numResults + i));
      for (unsigned i = 0; i < layer->numResults; ++i) {
        Value d = dresults[i];
        operands.push_back(d ? d : zeros(b, loc, call.getResult(i).getType()));
      }
      auto backward = func::CallOp::create(b, loc, layer->backward, operands);
      unsigned next = 0;
      for (Value arg : call.getOperands())
        if (isDifferentiable(arg.getType()))
          accumulate(b, cot, arg, backward.getResult(next++));
      continue;
    }

    FailureOr<SmallVector<Value>> dops = emitVJP(b, loc, op, dresults);
    if (failed(dops))
      return failure();
    for (auto [operand, d] : llvm::zip(op->getOperands(), *dops))
      accumulate(b, cot, operand, d);
  }
  return success();
}

FailureOr<LayerVJP *> Autodiff::getLayerVJP(func::FuncOp f) {
  if (auto it = layers.find(f); it != layers.end())
    return it->second.get();
  if (f.isExternal() || !f.getBody().hasOneBlock())
    return f.emitError("autodiff needs layer functions of one block");
  for (Operation &op : f.getBody().front())
    if (isa<func::CallOp>(op))
      return op.emitError("autodiff does not differentiate calls inside "
                          "layer functions yet");

  // 1. f.vjp: the forward body cloned, then its reverse pass.
  SmallVector<Operation *> forwardOps;
  FailureOr<func::FuncOp> vjp = buildVJP(f, forwardOps);
  if (failed(vjp))
    return failure();
  auto layer = std::make_unique<LayerVJP>();
  layer->forward = f;
  layer->backward = *vjp;
  layer->numResults = f.getFunctionType().getNumResults();
  LLVM_DEBUG(llvm::dbgs() << "layer @" << f.getSymName() << ", recompute="
                          << stringifyEnum(policy) << ": "
                          << forwardOps.size() << " forward ops"
                          << (policy == Recompute::Full
                                  ? "; the forward saves nothing, @" +
                                        vjp->getSymName().str() +
                                        " redoes them all\n"
                                  : std::string("\n")));

  // 2. Split: what the reverse part reads is saved by the forward call,
  // except what recompute redoes in the backward function.
  if (policy != Recompute::Full) {
    llvm::SetVector<Operation *> recomputed = chooseRecomputed(forwardOps);
    FailureOr<unsigned> numSaved =
        splitLayer(f, *vjp, forwardOps, recomputed, layer->forward);
    if (failed(numSaved))
      return failure();
    layer->numSaved = *numSaved;
  }
  LayerVJP *result = layer.get();
  layers[f] = std::move(layer);
  return result;
}

FailureOr<func::FuncOp>
Autodiff::buildVJP(func::FuncOp f, SmallVectorImpl<Operation *> &forwardOps) {
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  FunctionType type = f.getFunctionType();
  unsigned numArgs = type.getNumInputs();
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(f);
  SmallVector<Type> inputs(type.getInputs());
  llvm::append_range(inputs, type.getResults());
  SmallVector<Type> outputs;
  for (Type t : type.getInputs())
    if (isDifferentiable(t))
      outputs.push_back(t);
  auto vjp = func::FuncOp::create(b, f.getLoc(), (f.getSymName() + ".bwd").str(),
                                  b.getFunctionType(inputs, outputs));
  vjp.setPrivate();
  Block *entry = vjp.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  map.map(body.getArguments(), entry->getArguments().take_front(numArgs));
  for (Operation &op : body.without_terminator())
    forwardOps.push_back(b.clone(op, map));
  llvm::DenseMap<Value, Value> cot;
  for (auto [k, value] : llvm::enumerate(ret.getOperands()))
    accumulate(b, cot, map.lookup(value), entry->getArgument(numArgs + k));
  if (failed(reverse(b, forwardOps, cot)))
    return failure();
  SmallVector<Value> dargs;
  for (BlockArgument arg : entry->getArguments().take_front(numArgs))
    if (isDifferentiable(arg.getType())) {
      Value d = cot.lookup(arg);
      dargs.push_back(d ? d : zeros(b, f.getLoc(), arg.getType()));
    }
  func::ReturnOp::create(b, f.getLoc(), dargs);
  symbols.insert(vjp);
  return vjp;
}

llvm::SetVector<Operation *>
Autodiff::chooseRecomputed(ArrayRef<Operation *> forwardOps) {
  // Always redone: parameter reads and views of arguments or of redone
  // values (free, and a function cannot return them in place). Selective
  // recompute adds attention and the views of its results.
  llvm::SetVector<Operation *> recomputed;
  unsigned reads = 0, gathers = 0, views = 0, attention = 0;
  for (Operation *op : forwardOps) {
    bool view = isa<ReshapeOp, TransposeOp>(op);
    Value input = view ? op->getOperand(0) : Value();
    // A gather of an argument is a ZeRO-3 parameter shard made whole: it is
    // gathered again rather than kept, so that only shards live between
    // the passes (as FSDP does).
    bool gatheredArgument = isa<shard::AllGatherOp>(op) &&
                            isa<BlockArgument>(op->getOperand(0));
    bool redoneView = view && (isa<BlockArgument>(input) ||
                               recomputed.contains(input.getDefiningOp()));
    bool redoneAttention =
        policy == Recompute::Selective && isa<AttentionOp>(op);
    if (isa<GetParamOp>(op) || gatheredArgument || redoneView ||
        redoneAttention)
      recomputed.insert(op);
    reads += isa<GetParamOp>(op);
    gathers += gatheredArgument;
    views += redoneView;
    attention += redoneAttention;
  }
  LLVM_DEBUG(llvm::dbgs()
             << "  redone in the backward: " << reads << " parameter reads, "
             << gathers << " gathers of sharded arguments (ZeRO-3: only "
             << "shards live between the passes), " << views
             << " views of arguments or redone values (free), " << attention
             << " attention cores (recompute=selective)\n");
  return recomputed;
}

/// Debug output: the values a layer's forward saves for its backward, by
/// the op making them.
static void logSaved(ArrayRef<Value> saved) {
  int64_t bytes = 0;
  llvm::MapVector<StringRef, unsigned> byOp;
  for (Value v : saved) {
    if (auto type = dyn_cast<ShapedType>(v.getType());
        type && type.hasStaticShape())
      bytes += getTensorBytes(type);
    ++byOp[v.getDefiningOp()->getName().getStringRef()];
  }
  llvm::dbgs() << "  saved for the backward: " << saved.size() << " values, "
               << bytes << " bytes:";
  for (auto [name, n] : byOp)
    llvm::dbgs() << " " << n << " x " << name;
  llvm::dbgs() << "\n";
}

FailureOr<unsigned>
Autodiff::splitLayer(func::FuncOp f, func::FuncOp vjp,
                     ArrayRef<Operation *> forwardOps,
                     const llvm::SetVector<Operation *> &recomputed,
                     func::FuncOp &forward) {
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  FunctionType type = f.getFunctionType();
  unsigned numArgs = type.getNumInputs();
  llvm::SetVector<Operation *> kept; // forward ops whose values are saved
  for (Operation *op : forwardOps)
    if (!recomputed.contains(op))
      kept.insert(op);
  SmallVector<Value> saved;
  for (Operation *op : kept)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !kept.contains(user); }))
        saved.push_back(result);
  LLVM_DEBUG(logSaved(saved));

  IRMapping inverse;
  for (auto [original, clone] : llvm::zip(body.without_terminator(), forwardOps))
    inverse.map(clone->getResults(), original.getResults());

  // f.fwd: f's body returning its results and the saved values.
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(f);
  SmallVector<Type> fwdResults(type.getResults());
  for (Value v : saved)
    fwdResults.push_back(v.getType());
  forward = func::FuncOp::create(
      b, f.getLoc(), (f.getSymName() + ".fwd").str(),
      b.getFunctionType(type.getInputs(), fwdResults));
  forward.setPrivate();
  // Its arguments are f's, shardings included.
  if (ArrayAttr argAttrs = f.getArgAttrsAttr())
    forward.setArgAttrsAttr(argAttrs);
  Block *fwdEntry = forward.addEntryBlock();
  b.setInsertionPointToStart(fwdEntry);
  IRMapping fwdMap;
  fwdMap.map(body.getArguments(), fwdEntry->getArguments());
  for (Operation &op : body.without_terminator())
    b.clone(op, fwdMap);
  SmallVector<Value> fwdReturn;
  for (Value v : ret.getOperands())
    fwdReturn.push_back(fwdMap.lookup(v));
  for (Value v : saved)
    fwdReturn.push_back(fwdMap.lookup(inverse.lookup(v)));
  func::ReturnOp::create(b, ret.getLoc(), fwdReturn);
  symbols.insert(forward);

  // f.bwd: saved values become arguments; the kept forward ops go.
  Block *entry = &vjp.getBody().front();
  for (auto [i, v] : llvm::enumerate(saved)) {
    BlockArgument arg = entry->insertArgument(numArgs + i, v.getType(), v.getLoc());
    v.replaceAllUsesWith(arg);
  }
  for (Operation *op : llvm::reverse(kept)) {
    if (!op->use_empty())
      return op->emitError("autodiff could not split this layer's forward "
                           "and backward");
    op->erase();
  }
  vjp.setType(b.getFunctionType(entry->getArgumentTypes(),
                                vjp.getFunctionType().getResults()));
  return static_cast<unsigned>(saved.size());
}

/// The reverse pass (from `first` to `end`) makes again each mixed-precision
/// compute copy of a weight it reads that the forward made (a parameter
/// view other than a plain read, Pipelining.h), right before its first use
/// there, so that the forward's copy dies with the forward instead of living
/// until the backward: one copy of the model's weights less at the peak
/// (Llama 3 8B on dp=8: 15 GB per GPU).
static void recastWeights(Operation *first, Operation *end) {
  llvm::DenseMap<Value, Value> copies;
  for (Operation *op = first; op != end; op = op->getNextNode())
    for (OpOperand &use : op->getOpOperands()) {
      Operation *def = use.get().getDefiningOp();
      if (!def || isa<GetParamOp>(def) || !isParamView(def) || !def->isBeforeInBlock(first))
        continue;
      Value &copy = copies[use.get()];
      if (!copy) {
        OpBuilder b(op);
        IRMapping map;
        copy = cloneParamView(b, use.get(), map);
      }
      use.set(copy);
    }
}

LogicalResult Autodiff::differentiateStep(func::FuncOp step) {
  if (!step.getBody().hasOneBlock())
    return step.emitError("autodiff needs a step function of one block");
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() != 1 ||
      ret.getOperand(0).getType() !=
          RankedTensorType::get({}, Float32Type::get(step.getContext())))
    return step.emitError("autodiff needs a step function returning the "
                          "scalar loss (one tensor<f32>)");
  Value loss = ret.getOperand(0);

  OpBuilder b(step.getContext());
  StageStamper stageStamper;
  bool staged = llvm::any_of(body.without_terminator(), [](Operation &op) {
    return op.hasAttr(kStageAttrName);
  });
  if (staged)
    b.setListener(&stageStamper);
  if (failed(callForwardVariants(b, body, stageStamper)))
    return failure();

  SmallVector<Operation *> forwardOps;
  for (Operation &op : body.without_terminator())
    forwardOps.push_back(&op);
  b.setInsertionPoint(ret);
  llvm::DenseMap<Value, Value> cot;
  stageStamper.backward = true;
  stageStamper.stage = stageOf(loss.getDefiningOp());
  Value seed = FillOp::create(b, plain(ret.getLoc()), loss.getType(),
                              b.getF64FloatAttr(lossShare()));
  accumulate(b, cot, loss, seed);
  if (staged)
    stamper = &stageStamper;
  LogicalResult reversed = reverse(b, forwardOps, cot);
  stamper = nullptr;
  if (failed(reversed))
    return failure();
  recastWeights(seed.getDefiningOp(), ret);
  nameCotangents(forwardOps, cot);
  returnGradients(b, step, forwardOps, cot, stageStamper, staged);

  // Layer functions that only their forward variants replaced are dead.
  for (auto &[op, layer] : layers) {
    auto f = cast<func::FuncOp>(op);
    if (layer->forward != f && SymbolTable::symbolKnownUseEmpty(f, module))
      f.erase();
  }
  return success();
}

LogicalResult Autodiff::callForwardVariants(OpBuilder &b, Block &body,
                                            StageStamper &stageStamper) {
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    auto call = dyn_cast<func::CallOp>(op);
    if (!call)
      continue;
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee)
      return call.emitError("cannot differentiate a call to '")
             << call.getCalleeAttr() << "', which has no body in this module";
    FailureOr<LayerVJP *> layer = getLayerVJP(callee);
    if (failed(layer))
      return failure();
    b.setInsertionPoint(call);
    stageStamper.stage = stageOf(call);
    auto forward = func::CallOp::create(b, call.getLoc(), (*layer)->forward,
                                        call.getOperands());
    call.replaceAllUsesWith(
        forward.getResults().take_front((*layer)->numResults));
    call.erase();
    callLayer[forward] = *layer;
  }
  return success();
}

double Autodiff::lossShare() {
  // On a device grid every rank holds the same loss and differentiates its
  // share 1/ranks of it, so that the ranks' parameter cotangents sum to the
  // gradient (the convention the collectives' VJPs follow).
  // Pipeline ranks (pp) are not copies: each holds its own chunks.
  double share = 1.0;
  for (auto grid : module.getOps<shard::GridOp>()) {
    auto axes = grid->getAttrOfType<ArrayAttr>(kAxesAttrName);
    for (auto [i, size] : llvm::enumerate(grid.getShape()))
      if (!axes || i >= axes.size() ||
          cast<StringAttr>(axes[i]).getValue() != "pp")
        share /= static_cast<double>(size);
  }
  LLVM_DEBUG(if (share != 1.0) llvm::dbgs()
             << "the loss's cotangent is " << llvm::format("%g", share)
             << ": every rank holding a copy of the loss differentiates its "
                "share, so that the ranks' parameter cotangents sum to the "
                "gradient (pp ranks hold no copies)\n");
  return share;
}

/// Names the cotangents of named values so that dumps show them.
void Autodiff::nameCotangents(ArrayRef<Operation *> forwardOps,
                              const llvm::DenseMap<Value, Value> &cot) {
  MLIRContext *context = module.getContext();
  for (Operation *op : forwardOps)
    for (Value result : op->getResults()) {
      Value d = cot.lookup(result);
      std::optional<StringRef> name = nameOf(result);
      if (!d || !name || !d.getDefiningOp() ||
          isa<NameLoc>(d.getDefiningOp()->getLoc()) || isa<GetParamOp>(op))
        continue;
      d.getDefiningOp()->setLoc(NameLoc::get(
          StringAttr::get(context, "grad." + name->str()),
          d.getDefiningOp()->getLoc()));
    }
}

void Autodiff::returnGradients(OpBuilder &b, func::FuncOp step,
                               ArrayRef<Operation *> forwardOps,
                               const llvm::DenseMap<Value, Value> &cot,
                               StageStamper &stageStamper, bool staged) {
  // The gradient of each parameter: the sum over its reads (in a pipeline,
  // one sum per chunk reading it, in chunk order; an unread parameter's
  // zeros go with the first chunk).
  MLIRContext *context = step.getContext();
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  SmallVector<Value> results = {ret.getOperand(0)};
  llvm::DenseSet<Value> returned;
  SmallVector<Attribute> names;
  // Each parameter's reads, in program order (found once: a scan of the
  // step per parameter made the pass quadratic in the layers).
  llvm::StringMap<SmallVector<GetParamOp>> reads;
  for (Operation *op : forwardOps)
    if (auto get = dyn_cast<GetParamOp>(op))
      reads[get.getName()].push_back(get);
  auto emitGradient = [&](ParamOp param, std::optional<int64_t> chunk) {
    stageStamper.stage = staged ? std::optional<int64_t>(chunk.value_or(0))
                                : std::nullopt;
    Value grad;
    for (GetParamOp get : reads.lookup(param.getSymName()))
      if (!chunk || stageOf(get) == chunk)
        if (Value d = cot.lookup(get.getResult()))
          grad = grad ? AddOp::create(b, plain(get.getLoc()), grad, d).getResult()
                      : d;
    if (!grad)
      grad = zeros(b, param.getLoc(), param.getType());
    // Each gradient its own single-result op, named after its parameter
    // (a copy, x * 1, when it is shared, an argument, one result of many or
    // a view, which is not a value of its own).
    if (returned.contains(grad) || !grad.getDefiningOp() ||
        grad.getDefiningOp()->getNumResults() != 1 ||
        isa<ReshapeOp>(grad.getDefiningOp()))
      grad = MulOp::create(b, param.getLoc(), grad,
                           FillOp::create(b, param.getLoc(), grad.getType(),
                                          b.getF64FloatAttr(1.0)));
    grad.getDefiningOp()->setLoc(NameLoc::get(
        StringAttr::get(context, "grad." + param.getSymName().str()),
        plain(grad.getDefiningOp()->getLoc())));
    results.push_back(grad);
    returned.insert(grad);
    names.push_back(FlatSymbolRefAttr::get(param.getSymNameAttr()));
  };
  for (ParamOp param : module.getOps<ParamOp>()) {
    std::set<int64_t> chunks;
    if (staged)
      for (GetParamOp get : reads.lookup(param.getSymName()))
        chunks.insert(stageOf(get).value_or(0));
    LLVM_DEBUG(if (chunks.size() > 1) llvm::dbgs()
               << "@" << param.getSymName() << " is read in "
               << chunks.size()
               << " pipeline chunks: one gradient per chunk, so that each "
                  "chunk's backward computes its own\n");
    if (chunks.empty())
      emitGradient(param, std::nullopt);
    for (int64_t chunk : chunks)
      emitGradient(param, chunk);
  }
  stageStamper.stage = std::nullopt;
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  step.setType(FunctionType::get(context, step.getArgumentTypes(), resultTypes));
  step->setAttr(kGradientsAttrName, ArrayAttr::get(context, names));
}

namespace {
struct BraidAutodiffPass
    : TrainStepPass<BraidAutodiffPass, braid::impl::BraidAutodiffPassBase> {
  using EntryPass::EntryPass;

  LogicalResult runOnEntry(ModuleOp module, func::FuncOp step) {
    return Autodiff(module, recompute).differentiateStep(step);
  }
};
} // namespace
