//===- DeriveInference.cpp - inference programs from the training step ----===//
//
// A model is written once, as its training step. Inference runs the same
// layers in two other shapes: prefill (a batch of prompts padded to L rows)
// and decode (one row per sequence), with each attention layer's keys and
// values kept between calls in a KV cache. This pass clones the step into
// the two programs, re-types them (their shapes follow from the tokens, as
// --braid-microbatch re-types a micro-batch), threads the cache through the
// layer functions as arguments, and replaces each causal attention by a
// write of the new rows into the cache and attention over it. Both programs
// share the parameters and the cache states, so a runtime that keeps one
// arena runs prefill, then decode steps, on the same cache.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/DeriveInference.h"
#include "dialects/braid/Transforms/DeriveInferenceMamba.h"
#include "dialects/braid/Transforms/DeriveInferenceMoE.h"
#include "dialects/braid/Transforms/Retype.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidDialect.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::derive;

namespace {

/// The extra arguments a function takes in an inference program: its
/// sequences' positions, then one cache per slot (its attention layers' key
/// and value caches, its callees' after its own, in op order).
struct CacheSlots {
  SmallVector<std::string> names;
  SmallVector<RankedTensorType> types;
};

/// The per-sequence values a program's cached layers read: each sequence's
/// first position and, with a paged cache, its last real row (-1: idle),
/// its page table and (prefill with Mamba layers) its state slot. Null
/// where the program does not take them.
struct SequenceInputs {
  Value positions, lastRows, pages, slots;
  /// The mixed program's row of each group whose logits it returns.
  Value logitRows;
};

class InferenceDeriver {
public:
  InferenceDeriver(ModuleOp module, func::FuncOp step, TokenShape train,
                   int64_t context, std::optional<SamplingSpec> sampling,
                   std::optional<PagedSpec> paged)
      : module(module), symbols(module), step(step), train(train),
        context(context), sampling(sampling), paged(paged) {}

  /// Derives one program from the step.
  LogicalResult derive(const ProgramSpec &spec);
  /// Removes the step and the functions only it called.
  void eraseTrainingStep();

private:
  ModuleOp module;
  SymbolTable symbols;
  func::FuncOp step;
  TokenShape train;
  int64_t context;
  std::optional<SamplingSpec> sampling;
  std::optional<PagedSpec> paged;

  // Per program.
  const ProgramSpec *spec = nullptr;
  llvm::DenseMap<Operation *, func::FuncOp> clones;
  llvm::DenseMap<Operation *, CacheSlots> slotsOf;
  llvm::DenseMap<Operation *, bool> attends;
  llvm::SetVector<func::FuncOp> originals;

  /// Whether `f` or a function it calls has an attention or Mamba layer.
  bool needsCaches(func::FuncOp f);
  /// Whether `f` takes each prompt's last row: a prefill function with a
  /// Mamba layer (DeriveInferenceMamba.cpp), or any cached function with a
  /// paged cache (whose rows may be idle).
  bool needsLastRows(func::FuncOp f) {
    if (paged)
      return needsCaches(f);
    return spec->kind == EntryKind::Prefill && hasMambaState(f, symbols);
  }
  /// Whether `f` takes page tables (paged attention layers in it or below).
  bool needsPages(func::FuncOp f) { return paged && hasAttention(f); }
  /// Whether `f` or a function it calls has an attention layer.
  bool hasAttention(func::FuncOp f);
  /// Whether `f` takes the Mamba state slots of its rows: a paged prefill
  /// function with a Mamba layer (decode row b holds state slot b).
  bool needsSlots(func::FuncOp f) {
    return paged && spec->kind == EntryKind::Prefill &&
           hasMambaState(f, symbols);
  }

  FailureOr<func::FuncOp> cloneCallee(func::FuncOp callee, TypeRange inputs,
                                      Operation *call);
  LogicalResult retype(func::FuncOp f, TypeRange inputs);
  LogicalResult retypeOp(Operation &op);
  FailureOr<RankedTensorType> retypeTokens(RankedTensorType type,
                                           Operation *op);
  LogicalResult rewriteOutput(func::FuncOp entry, Value lastRows);
  FailureOr<Value> pickRows(CrossEntropyOp loss, Value lastRows);
  FailureOr<CacheSlots> threadCaches(func::FuncOp f,
                                     const SequenceInputs &entryInputs);
  SequenceInputs addSequenceArguments(func::FuncOp f);
  SequenceInputs addEntryArguments(func::FuncOp entry);
  RankedTensorType cacheType(Value rows) const;
  LogicalResult replaceAttention(AttentionOp attention,
                                 const SequenceInputs &inputs, Value keyCache,
                                 Value valueCache);
  LogicalResult addPositionsAtOffsets(func::FuncOp entry, Value positions);
  void appendSample(func::FuncOp entry);
  void declareState(StringRef name, RankedTensorType type);
};

} // namespace

//===----------------------------------------------------------------------===//
// Re-typing
//===----------------------------------------------------------------------===//

// The token dimensions lead every activation: [B, S, ...] or, flattened,
// [B * S, ...]. A reshape's result is the one type that does not follow
// from its operands.
FailureOr<RankedTensorType>
InferenceDeriver::retypeTokens(RankedTensorType type, Operation *op) {
  SmallVector<int64_t> shape(type.getShape());
  TokenShape to = spec->shape;
  if (shape.size() >= 2 && shape[0] == train.batch && shape[1] == train.rows) {
    shape[0] = to.batch;
    shape[1] = to.rows;
  } else if (!shape.empty() && shape[0] == train.batch * train.rows) {
    shape[0] = to.batch * to.rows;
  } else {
    return op->emitError("--braid-derive-inference: cannot re-type ")
           << type << ": its leading dimensions are not the step's tokens ["
           << train.batch << ", " << train.rows << "]";
  }
  return type.clone(shape);
}

LogicalResult InferenceDeriver::retypeOp(Operation &op) {
  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal())
      return call.emitError("--braid-derive-inference: cannot derive a call "
                            "to ")
             << call.getCalleeAttr() << ", which has no body";
    FailureOr<func::FuncOp> clone =
        cloneCallee(callee, call.getOperandTypes(), call);
    if (failed(clone))
      return failure();
    call.setCallee(clone->getSymName());
    for (auto [result, type] :
         llvm::zip(call.getResults(), clone->getResultTypes()))
      result.setType(type);
    return success();
  }
  if (isCapacityGroupOp(op))
    return retypeWithoutDrops(op); // MoE: a capacity that drops no token
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    FailureOr<RankedTensorType> type =
        retypeTokens(cast<RankedTensorType>(reshape.getType()), reshape);
    if (failed(type))
      return failure();
    reshape.getResult().setType(*type);
    return success();
  }
  if (op.getNumOperands() == 0)
    return success(); // parameter reads: no tokens
  return reinferResultTypes(op, "--braid-derive-inference: cannot re-type",
                            "--braid-derive-inference: this op's result types "
                            "do not follow from the program's shapes");
}

LogicalResult InferenceDeriver::retype(func::FuncOp f, TypeRange inputs) {
  return retypeFunction(
      f, inputs, "--braid-derive-inference: a function of several blocks",
      [&](Operation &op) { return retypeOp(op); });
}

// Each layer function is cloned once per program: the prefill and decode
// shapes differ, and the clone gains the cache arguments.
FailureOr<func::FuncOp> InferenceDeriver::cloneCallee(func::FuncOp callee,
                                                      TypeRange inputs,
                                                      Operation *call) {
  if (auto it = clones.find(callee); it != clones.end()) {
    if (TypeRange(it->second.getArgumentTypes()) != inputs)
      return call->emitError("--braid-derive-inference: @")
             << callee.getSymName()
             << " is called with shapes that differ in the "
             << spec->name << " program";
    return it->second;
  }
  func::FuncOp clone = callee.clone();
  clone.setSymName((callee.getSymName() + "." + spec->name).str());
  setServedKind(clone, spec->kind);
  symbols.insert(clone, Block::iterator(callee));
  clones[callee] = clone;
  originals.insert(callee);
  if (failed(retype(clone, inputs)))
    return failure();
  return clone;
}

//===----------------------------------------------------------------------===//
// The program's output
//===----------------------------------------------------------------------===//

// The loss goes; the program returns its logits: all of them (forward), or
// those of one row per sequence (prefill, decode). The row is picked before
// the ops that work row by row on the last layer's output (final norm, LM
// head, a conversion), so they run on that row only.
LogicalResult InferenceDeriver::rewriteOutput(func::FuncOp entry,
                                              Value lastRows) {
  Block &body = entry.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto loss = ret.getNumOperands() == 1
                  ? ret.getOperand(0).getDefiningOp<CrossEntropyOp>()
                  : CrossEntropyOp();
  if (!loss)
    return entry.emitError("--braid-derive-inference: the training step must "
                           "return the cross-entropy of its logits");
  Value logits = loss.getLogits();
  if (spec->kind != EntryKind::Forward) {
    FailureOr<Value> picked = pickRows(loss, lastRows);
    if (failed(picked))
      return failure();
    logits = *picked;
  }
  ret->setOperands(logits);
  Value labels = loss.getLabels();
  loss.erase();
  if (auto arg = dyn_cast<BlockArgument>(labels); arg && arg.use_empty())
    body.eraseArgument(arg.getArgNumber());
  else
    return entry.emitError("--braid-derive-inference: the labels must be the "
                           "step's argument, used by the loss alone");
  return success();
}

FailureOr<Value> InferenceDeriver::pickRows(CrossEntropyOp loss,
                                            Value lastRows) {
  Value rows = loss.getLogits();
  Operation *firstRowwise = nullptr;
  while (Operation *def = rows.getDefiningOp()) {
    if (!isa<RMSNormOp, LayerNormOp, LinearOp, ConvertOp>(def) ||
        !def->getOperand(0).hasOneUse())
      break;
    firstRowwise = def;
    rows = def->getOperand(0);
  }
  OpBuilder b(loss.getContext());
  if (Operation *def = rows.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(loss->getBlock());
  auto type = cast<RankedTensorType>(rows.getType());
  if (int64_t groups = spec->logitGroups) {
    // [M, 1, H] as K groups of M / K rows: one row of each is picked.
    rows = ReshapeOp::create(b, loss.getLoc(),
                             type.clone({groups, type.getDimSize(0) / groups,
                                         type.getDimSize(2)}),
                             rows);
  }
  Value picked =
      lastRows ? TakeRowsOp::create(b, loss.getLoc(), rows, lastRows).getResult()
               : ReshapeOp::create(b, loss.getLoc(),
                                   type.clone({type.getDimSize(0),
                                               type.getDimSize(2)}),
                                   rows)
                     .getResult();
  if (!firstRowwise)
    return picked;
  firstRowwise->setOperand(0, picked);
  // The row-wise ops re-infer their types on one row per sequence.
  for (Operation *op = firstRowwise; op != loss; op = op->getNextNode())
    if (failed(retypeOp(*op)))
      return failure();
  return loss.getLogits();
}

//===----------------------------------------------------------------------===//
// The KV cache
//===----------------------------------------------------------------------===//

void InferenceDeriver::declareState(StringRef name, RankedTensorType type) {
  if (symbols.lookup(name))
    return; // the other program declared it (the same type: same batch)
  // Beside the other declarations, before the first function.
  OpBuilder b(module.getContext());
  auto functions = module.getOps<func::FuncOp>();
  b.setInsertionPoint(*functions.begin());
  auto state = StateOp::create(b, step.getLoc(), name, type, InitKind::Zeros);
  symbols.insert(state);
}

LogicalResult InferenceDeriver::replaceAttention(AttentionOp attention,
                                                 const SequenceInputs &inputs,
                                                 Value keyCache,
                                                 Value valueCache) {
  if (!attention.getCausal())
    return attention.emitError("--braid-derive-inference: generation needs "
                               "causal attention");
  OpBuilder b(attention);
  Location loc = attention.getLoc();
  Value positions = inputs.positions;
  if (paged) {
    Value keys = PagedCacheWriteOp::create(
        b, loc, keyCache.getType(), keyCache, attention.getKey(), positions,
        inputs.pages, inputs.lastRows, attention.getRopeThetaAttr());
    Value values = PagedCacheWriteOp::create(
        b, loc, valueCache.getType(), valueCache, attention.getValue(),
        positions, inputs.pages, inputs.lastRows, FloatAttr());
    Value out = PagedCacheAttentionOp::create(
        b, loc, attention.getQuery(), keys, values, positions, inputs.pages,
        inputs.lastRows, attention.getScaleAttr(),
        attention.getRopeThetaAttr());
    attention.replaceAllUsesWith(out);
    attention.erase();
    return success();
  }
  Value keys = CacheWriteOp::create(b, loc, keyCache.getType(), keyCache,
                                    attention.getKey(), positions,
                                    attention.getRopeThetaAttr());
  Value values = CacheWriteOp::create(b, loc, valueCache.getType(), valueCache,
                                      attention.getValue(), positions,
                                      FloatAttr());
  Value out = CacheAttentionOp::create(b, loc, attention.getQuery(), keys,
                                       values, positions,
                                       attention.getScaleAttr(),
                                       attention.getRopeThetaAttr());
  attention.replaceAllUsesWith(out);
  attention.erase();
  return success();
}

/// The cache of `rows` [B, S, H, D]: `context` rows per sequence, or a
/// pool of pages [N, P, H, D].
RankedTensorType InferenceDeriver::cacheType(Value rows) const {
  auto type = cast<RankedTensorType>(rows.getType());
  if (paged)
    return type.clone({paged->pages, paged->pageSize, type.getDimSize(2),
                       type.getDimSize(3)});
  return type.clone({type.getDimSize(0), context, type.getDimSize(2),
                     type.getDimSize(3)});
}

bool InferenceDeriver::hasAttention(func::FuncOp f) {
  // Before or after the attention became the cache's (callees first).
  return reachesOp(f, symbols, [](Operation *op) {
    return isa<AttentionOp, PagedCacheAttentionOp>(op);
  });
}

bool InferenceDeriver::needsCaches(func::FuncOp f) {
  if (auto it = attends.find(f); it != attends.end())
    return it->second;
  attends[f] = false; // a recursive call adds nothing
  bool found = false;
  f.walk([&](Operation *op) {
    if (isa<AttentionOp>(op) || carriesMambaState(op))
      found = true;
    else if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        found |= needsCaches(callee);
  });
  return attends[f] = found;
}

// A layer function gets its caches as arguments (after the positions and,
// in prefill with a Mamba layer, the last rows) and passes its callees
// theirs; the entry reads each from its state, named by the call's layer.
// A layer function's per-sequence arguments, in this order: positions,
// last rows, page tables, state slots (those it needs).
SequenceInputs InferenceDeriver::addSequenceArguments(func::FuncOp f) {
  Block &body = f.getBody().front();
  MLIRContext *ctx = f.getContext();
  Type i32 = IntegerType::get(ctx, 32);
  auto perSequence = RankedTensorType::get({spec->shape.batch}, i32);
  SequenceInputs in;
  if (needsCaches(f))
    in.positions = body.addArgument(perSequence, f.getLoc());
  if (needsLastRows(f))
    in.lastRows = body.addArgument(perSequence, f.getLoc());
  if (needsPages(f))
    in.pages = body.addArgument(
        RankedTensorType::get({spec->shape.batch, paged->tableEntries}, i32),
        f.getLoc());
  if (needsSlots(f))
    in.slots = body.addArgument(perSequence, f.getLoc());
  return in;
}

FailureOr<CacheSlots> InferenceDeriver::threadCaches(func::FuncOp f,
                                                     const SequenceInputs &entryInputs) {
  if (auto it = slotsOf.find(f); it != slotsOf.end())
    return it->second;
  bool isEntry = static_cast<bool>(entryInputs.positions);
  Block &body = f.getBody().front();
  CacheSlots slots;
  SmallVector<AttentionOp> attentions;
  SmallVector<Operation *> mambaOps;
  SmallVector<func::CallOp> calls;
  for (Operation &op : body.without_terminator()) {
    if (auto attention = dyn_cast<AttentionOp>(op))
      attentions.push_back(attention);
    else if (carriesMambaState(&op))
      mambaOps.push_back(&op);
    else if (auto call = dyn_cast<func::CallOp>(op))
      calls.push_back(call);
  }
  // Prefill's Mamba states are taken at each prompt's last row.
  SequenceInputs in = isEntry ? entryInputs : addSequenceArguments(f);
  auto addSlot = [&](std::string name, RankedTensorType type) -> Value {
    slots.names.push_back(name);
    slots.types.push_back(type);
    if (isEntry) {
      declareState(name, type);
      return Value();
    }
    return body.addArgument(type, f.getLoc());
  };
  OpBuilder b(f.getContext());
  for (auto [j, attention] : llvm::enumerate(attentions)) {
    std::string prefix = attentions.size() == 1 ? "" : "a" + std::to_string(j) + ".";
    if (isEntry)
      prefix = "cache." + prefix;
    RankedTensorType k = cacheType(attention.getKey());
    RankedTensorType v = cacheType(attention.getValue());
    Value kc = addSlot(prefix + "k", k), vc = addSlot(prefix + "v", v);
    if (isEntry) {
      b.setInsertionPoint(attention);
      kc = GetParamOp::create(b, attention.getLoc(), k, slots.names.end()[-2]);
      vc = GetParamOp::create(b, attention.getLoc(), v, slots.names.back());
    }
    if (failed(replaceAttention(attention, in, kc, vc)))
      return failure();
  }
  for (auto [j, op] : llvm::enumerate(mambaOps)) {
    // With slots, one state per decode row whatever the program's rows.
    auto [name, type] = mambaStateOf(
        op, paged ? paged->stateSlots : spec->shape.batch);
    if (mambaOps.size() > 2) // beyond one conv1d and one scan
      name = "m" + std::to_string(j) + "." + name;
    Value state = addSlot(isEntry ? "cache." + name : name, type);
    if (isEntry) {
      b.setInsertionPoint(op);
      state = GetParamOp::create(b, op->getLoc(), type, slots.names.back());
    }
    replaceWithStep(op, state, in.positions, in.lastRows, in.slots);
  }
  for (auto [n, call] : llvm::enumerate(calls)) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!needsCaches(callee))
      continue;
    FailureOr<CacheSlots> inner = threadCaches(callee, SequenceInputs());
    if (failed(inner))
      return failure();
    SmallVector<Value> operands(call.getOperands());
    operands.push_back(in.positions);
    if (needsLastRows(callee))
      operands.push_back(in.lastRows);
    if (needsPages(callee))
      operands.push_back(in.pages);
    if (needsSlots(callee))
      operands.push_back(in.slots);
    b.setInsertionPoint(call);
    for (auto [name, type] : llvm::zip(inner->names, inner->types)) {
      std::string slot = (isEntry ? "cache.layers." + std::to_string(n) + "."
                                  : "l" + std::to_string(n) + ".") +
                         name;
      Value cache = addSlot(slot, type);
      if (isEntry)
        cache = GetParamOp::create(b, call.getLoc(), type, slot);
      operands.push_back(cache);
    }
    call->setOperands(operands);
  }
  if (!isEntry)
    f.setType(FunctionType::get(f.getContext(), body.getArgumentTypes(),
                                f.getResultTypes()));
  return slotsOf[f] = slots;
}

// GPT's learned positions: the embedding adds rows 0..S-1 of its table; a
// program whose rows start at a sequence's position adds the rows from
// there.
LogicalResult InferenceDeriver::addPositionsAtOffsets(func::FuncOp entry,
                                                      Value positions) {
  SmallVector<EmbeddingOp> lookups;
  entry.walk([&](EmbeddingOp op) {
    if (op.getPositionTable())
      lookups.push_back(op);
  });
  for (EmbeddingOp lookup : lookups) {
    OpBuilder b(lookup);
    Value table = lookup.getPositionTable();
    int64_t learned = cast<RankedTensorType>(table.getType()).getDimSize(0);
    if (learned < context)
      return lookup.emitError("--braid-derive-inference: a context of ")
             << context << " rows exceeds the model's " << learned
             << " learned positions";
    auto plain = EmbeddingOp::create(b, lookup.getLoc(), lookup.getTokens(),
                                     lookup.getTable(), Value(),
                                     lookup.getVocabAxesAttr());
    // The positions already have the program's batch and the lookup the
    // step's: the result type is the lookup's until the re-typing that
    // follows infers it anew.
    auto shifted = AddPositionsOp::create(
        b, lookup.getLoc(), TypeRange{plain.getType()},
        ValueRange{plain, table, positions});
    lookup.replaceAllUsesWith(shifted.getResult());
    lookup.erase();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// A program
//===----------------------------------------------------------------------===//

LogicalResult InferenceDeriver::derive(const ProgramSpec &program) {
  spec = &program;
  clones.clear();
  slotsOf.clear();
  attends.clear();
  func::FuncOp entry = step.clone();
  entry.setSymName(program.name);
  symbols.insert(entry, Block::iterator(step));
  setEntryKind(entry, program.kind);
  Block &body = entry.getBody().front();
  MLIRContext *ctx = entry.getContext();
  // The forward program is the step's forward pass returning its logits
  // (what generation is verified against): no cache, no positions.
  bool cached = program.kind != EntryKind::Forward;
  SequenceInputs in = cached ? addEntryArguments(entry) : SequenceInputs();
  Value positions = in.positions;
  // Prefill's logits are those of each row's last real row; decode's of its
  // one row (an idle row's are dropped).
  // The mixed program's of one row per group of rows.
  Value last = program.logitGroups       ? in.logitRows
               : program.kind == EntryKind::Prefill ? in.lastRows
                                                    : Value();
  // Tokens first, re-typed to the program's; the labels keep theirs until
  // the loss that reads them goes.
  SmallVector<Type> inputs(body.getArgumentTypes());
  auto tokens = cast<RankedTensorType>(inputs[0]);
  inputs[0] = tokens.clone({program.shape.batch, program.shape.rows});
  inputs[1] = inputs[0];
  // Learned positions move to the rows' offsets before the shapes change
  // (a lookup's own table would have to cover the prompt's rows).
  if (cached && failed(addPositionsAtOffsets(entry, positions)))
    return failure();
  if (failed(retype(entry, inputs)) || failed(rewriteOutput(entry, last)))
    return failure();
  if (cached && sampling)
    appendSample(entry);
  if (cached && failed(threadCaches(entry, in)))
    return failure();
  entry.setType(FunctionType::get(ctx, body.getArgumentTypes(),
                                  body.getTerminator()->getOperandTypes()));
  // Named for the runtime here: its one reader, braid.take_rows, would name
  // it last_rows.
  if (in.logitRows)
    entry.setArgAttr(cast<BlockArgument>(in.logitRows).getArgNumber(),
                     kInputNameAttrName, StringAttr::get(ctx, "logit_rows"));
  return success();
}

// After the tokens (and labels): positions [B]; last rows [B] (prefill, or
// with a paged cache); page tables [B, T] (paged); state slots [B] (paged
// prefill of a model with Mamba layers).
SequenceInputs InferenceDeriver::addEntryArguments(func::FuncOp entry) {
  Block &body = entry.getBody().front();
  Location loc = entry.getLoc();
  Type i32 = IntegerType::get(entry.getContext(), 32);
  auto perSequence = RankedTensorType::get({spec->shape.batch}, i32);
  SequenceInputs in;
  in.positions = body.addArgument(perSequence, loc);
  if (spec->kind == EntryKind::Prefill || paged)
    in.lastRows = body.addArgument(perSequence, loc);
  if (paged && hasAttention(step))
    in.pages = body.addArgument(
        RankedTensorType::get({spec->shape.batch, paged->tableEntries}, i32),
        loc);
  if (paged && spec->kind == EntryKind::Prefill && hasMambaState(step, symbols))
    in.slots = body.addArgument(perSequence, loc);
  if (spec->logitGroups)
    in.logitRows = body.addArgument(
        RankedTensorType::get({spec->logitGroups}, i32), loc);
  return in;
}

// The program's last op: each sequence's token from its logits, under its
// own seed, step and parameters (arguments after the others).
void InferenceDeriver::appendSample(func::FuncOp entry) {
  Block &body = entry.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value logits = ret.getOperand(0);
  auto type = cast<RankedTensorType>(logits.getType());
  MLIRContext *ctx = entry.getContext();
  auto perSequence = [&](Type element) {
    return body.addArgument(RankedTensorType::get({type.getDimSize(0)}, element),
                            entry.getLoc());
  };
  Type i64 = IntegerType::get(ctx, 64), f32 = Float32Type::get(ctx);
  Value seeds = perSequence(i64), steps = perSequence(i64),
        temperature = perSequence(f32),
        topK = perSequence(IntegerType::get(ctx, 32)), topP = perSequence(f32);
  OpBuilder b(ret);
  auto ids = SampleOp::create(
      b, ret.getLoc(), RankedTensorType::get({type.getDimSize(0)}, IntegerType::get(ctx, 32)),
      logits, seeds, steps, temperature, topK, topP, type.getDimSize(1),
      sampling->mode, sampling->topKCap, ArrayAttr());
  ret->setOperands({logits, ids.getResult()});
}

void InferenceDeriver::eraseTrainingStep() {
  step.erase();
  for (func::FuncOp f : originals)
    if (f && SymbolTable::symbolKnownUseEmpty(f, module))
      f.erase();
  originals.clear();
}

//===----------------------------------------------------------------------===//
// Entry
//===----------------------------------------------------------------------===//

LogicalResult mlir::braid::derive::derivePrograms(ModuleOp module, func::FuncOp step,
                                                 TokenShape train, int64_t context,
                                                 std::optional<SamplingSpec> sampling,
                                                 std::optional<PagedSpec> paged,
                                                 ArrayRef<ProgramSpec> programs) {
  InferenceDeriver deriver(module, step, train, context, sampling, paged);
  for (const ProgramSpec &program : programs)
    if (failed(deriver.derive(program)))
      return failure();
  deriver.eraseTrainingStep();
  return success();
}
