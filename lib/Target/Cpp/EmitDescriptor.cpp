//===- EmitDescriptor.cpp - the program descriptor the runtime reads ------===//
//
// After the functions, the emitted file describes the program to the
// runtime: the arena's size, every parameter and state (shape, initializer,
// offset, sharding), the step's inputs (how the runtime generates them), the
// loss, the grid and the communicators a pipeline's stages create.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::braid;

namespace braid::cpp {

/// braid.sample's per-sequence inputs, which the driver fills from its
/// options and requests, or none.
static std::optional<std::string> sampleInputRole(Operation *user, Value value) {
  auto named = [&](ArrayRef<std::pair<Value, const char *>> operands)
      -> std::optional<std::string> {
    for (auto [operand, name] : operands)
      if (operand == value)
        return std::string(name);
    return std::nullopt;
  };
  if (auto s = dyn_cast<SampleOp>(user))
    return named({{s.getSeeds(), "seeds"}, {s.getSteps(), "steps"},
                  {s.getTemperature(), "temperature"}, {s.getTopK(), "top_k"},
                  {s.getTopP(), "top_p"}});
  if (auto m = dyn_cast<SampleMergeOp>(user))
    return named({{m.getSeeds(), "seeds"}, {m.getSteps(), "steps"},
                  {m.getTemperature(), "temperature"}, {m.getTopK(), "top_k"},
                  {m.getTopP(), "top_p"}});
  if (auto l = dyn_cast<SampleLocalOp>(user))
    return named({{l.getTemperature(), "temperature"}, {l.getTopK(), "top_k"},
                  {l.getTopP(), "top_p"}});
  return std::nullopt;
}

/// The page table inputs of braid.paged_cache_write and
/// braid.paged_cache_attention, or none.
template <typename PagedOp>
static std::optional<std::string> pagedInputRole(PagedOp op, Value value) {
  if (op.getPositions() == value)
    return std::string("positions");
  if (op.getPages() == value)
    return std::string("pages");
  if (op.getLastRows() == value)
    return std::string("last_rows");
  return std::nullopt;
}

/// How a step input is generated: tokens for an embedding, labels for the
/// loss; both uniform below the vocabulary the model draws from. An
/// inference program's positions and last rows are the driver's. A
/// partitioned program may first move the input through collectives.
static std::optional<std::string> inputRole(Value value) {
  for (Operation *user : value.getUsers()) {
    if (isa<EmbeddingOp, EmbeddingShardOp>(user) && user->getOperand(0) == value)
      return std::string("tokens");
    if (isa<CrossEntropyOp, CrossEntropyStatsOp>(user) &&
        user->getOperand(1) == value)
      return std::string("labels");
    // Inference programs: each sequence's first position, and the row of
    // each prompt whose logits prefill returns (the driver fills both).
    if (auto write = dyn_cast<CacheWriteOp>(user);
        write && write.getPositions() == value)
      return std::string("positions");
    if (auto attention = dyn_cast<CacheAttentionOp>(user);
        attention && attention.getPositions() == value)
      return std::string("positions");
    // The same over a cache split by sequence (CacheContext.cpp).
    if (auto write = dyn_cast<CacheWriteChunkOp>(user);
        write && write.getPositions() == value)
      return std::string("positions");
    if (auto attention = dyn_cast<CacheAttentionChunkOp>(user);
        attention && attention.getPositions() == value)
      return std::string("positions");
    if (auto shift = dyn_cast<AddPositionsOp>(user);
        shift && shift.getPositions() == value)
      return std::string("positions");
    if (auto take = dyn_cast<TakeRowsOp>(user); take && take.getIndex() == value)
      return std::string("last_rows");
    // A serving program's paged KV cache: each sequence's first position,
    // page table and last real row (-1: idle), all the scheduler's.
    if (auto write = dyn_cast<PagedCacheWriteOp>(user))
      if (std::optional<std::string> role = pagedInputRole(write, value))
        return role;
    if (auto attention = dyn_cast<PagedCacheAttentionOp>(user))
      if (std::optional<std::string> role = pagedInputRole(attention, value))
        return role;
    // A Mamba layer's state steps (a model without attention has no other
    // reader of the positions).
    if (auto conv = dyn_cast<ConvStepOp>(user)) {
      if (conv.getPositions() == value)
        return std::string("positions");
      if (conv.getLastRows() == value)
        return std::string("last_rows");
      if (conv.getSlots() == value)
        return std::string("slots");
    }
    if (auto scan = dyn_cast<ScanStepOp>(user)) {
      if (scan.getPositions() == value)
        return std::string("positions");
      if (scan.getLastRows() == value)
        return std::string("last_rows");
      if (scan.getSlots() == value)
        return std::string("slots");
    }
    // The same over a prompt split by cp (MambaContext.cpp of BraidToDist).
    if (auto conv = dyn_cast<ConvStepChunkOp>(user)) {
      if (conv.getPositions() == value)
        return std::string("positions");
      if (conv.getLastRows() == value)
        return std::string("last_rows");
    }
    if (auto scan = dyn_cast<ScanStepChunkOp>(user)) {
      if (scan.getPositions() == value)
        return std::string("positions");
      if (scan.getLastRows() == value)
        return std::string("last_rows");
    }
    if (std::optional<std::string> role = sampleInputRole(user, value))
      return role;
    if (isa_and_nonnull<shard::ShardDialect, dist::DistDialect>(
            user->getDialect()) ||
        isa<ReshapeOp, TransposeOp>(user))
      for (Value result : user->getResults())
        if (std::optional<std::string> role = inputRole(result))
          return role;
    // A pipeline rank passes its micro-batches to its chunk functions.
    if (auto call = dyn_cast<func::CallOp>(user))
      if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              call, call.getCalleeAttr()))
        for (auto [operand, arg] :
             llvm::zip(call.getOperands(), callee.getArguments()))
          if (operand == value)
            if (std::optional<std::string> role = inputRole(arg))
              return role;
  }
  return std::nullopt;
}

static FailureOr<std::string> inputName(BlockArgument arg) {
  // Named by the pass that made it (braid.input), where its readers do not
  // tell it.
  if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
    if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                      kInputNameAttrName))
      return name.getValue().str();
  if (std::optional<std::string> role = inputRole(arg))
    return *role;
  return emitError(arg.getLoc(), "step argument #")
         << arg.getArgNumber()
         << " feeds neither an embedding's tokens nor the loss's labels, so "
            "the runtime cannot generate it";
}

namespace {

/// A parameter's or state's initializer: the runtime's kind, a normal's
/// standard deviation and s4d_real's period.
struct Initializer {
  StringRef kind = "BRAID_INIT_NORMAL";
  double std = 0.0;
  int64_t period = 0;
};

/// Prints the descriptor: first the arrays its tables point to (one per
/// shape and per sharding, which a model's layers share), then the tables
/// of persistent tensors, inputs and outputs, the functions the runtime
/// calls and the braid_program itself.
class DescriptorEmitter {
public:
  DescriptorEmitter(ProgramEmitter &program, raw_ostream &os)
      : program(program), plan(program.plan), os(os) {
    // Parameters and program state are both initialized by the runtime.
    persistent.assign(plan.params.begin(), plan.params.end());
    llvm::append_range(persistent, plan.states);
  }

  LogicalResult emit() {
    int64_t bound = tokenBound();
    if (failed(emitArrays()))
      return failure();
    emitPersistent();
    if (failed(emitInputs(bound)))
      return failure();
    emitOutputs();
    emitFunctions();
    emitProgram();
    return success();
  }

private:
  int64_t tokenBound();
  std::string shapeArray(RankedTensorType type);
  std::string shardingArrays(const ShardedTensor *sharding);
  std::string zeroBlockFields(const PersistentTensor &tensor);
  Initializer initializerOf(const PersistentTensor &tensor);
  LogicalResult emitArrays();
  void emitPersistent();
  LogicalResult emitInputs(int64_t bound);
  void emitOutputs();
  void emitFunctions();
  void emitProgram();

  ProgramEmitter &program;
  ProgramPlan &plan;
  raw_ostream &os;
  SmallVector<PersistentTensor> persistent;
  /// Each array's name (or a sharding's two), by content.
  llvm::StringMap<std::string> arrays;
  unsigned shapeId = 0, shardingId = 0;
  /// The array fields of each persistent tensor, input and output.
  SmallVector<std::string> paramShapes, paramShardings, zeroBlocks,
      inputShapes, inputShardings, outputShapes, outputShardings;
};

} // namespace

/// The bound of token draws: the unpadded vocabulary when the model pads.
int64_t DescriptorEmitter::tokenBound() {
  int64_t bound = 0;
  if (auto config = program.module->getAttrOfType<DictionaryAttr>(
          BraidDialect::getModelAttrName()))
    for (StringRef key : {"vocab_unpadded", "vocab"})
      if (auto v = config.getAs<IntegerAttr>(key); v && bound == 0)
        bound = v.getInt();
  if (bound == 0)
    plan.entry.walk([&](EmbeddingOp e) {
      bound = shapeOf(e.getTable())[0];
      // A vocabulary-parallel table is a slice: draw from the global one.
      if (auto get = e.getTable().getDefiningOp<GetParamOp>())
        if (auto it = program.shardings.find(get.getName());
            it != program.shardings.end())
          bound = it->second.globalShape[0];
    });
  return bound;
}

std::string DescriptorEmitter::shapeArray(RankedTensorType type) {
  if (type.getRank() == 0)
    return "nullptr";
  std::string content;
  llvm::raw_string_ostream cs(content);
  llvm::interleaveComma(type.getShape(), cs);
  auto [it, inserted] = arrays.try_emplace("shape:" + content, "");
  if (inserted) {
    it->second = "kShape" + std::to_string(shapeId++);
    os << "constexpr int64_t " << it->second << "[] = {" << content << "};\n";
  }
  return it->second;
}

/// A sharded tensor's global shape and split axes: ", kGlobalN, kSplitN".
std::string DescriptorEmitter::shardingArrays(const ShardedTensor *sharding) {
  if (!sharding)
    return "";
  std::string global, split;
  llvm::raw_string_ostream gs(global), ss(split);
  llvm::interleaveComma(sharding->globalShape, gs);
  llvm::interleaveComma(splitSpecs(*sharding, *program.devices), ss,
                        [&](const std::string &axes) { ss << quoted(axes); });
  auto [it, inserted] =
      arrays.try_emplace("sharding:" + global + ";" + split, "");
  if (inserted) {
    std::string id = std::to_string(shardingId++);
    os << "constexpr int64_t kGlobal" << id << "[] = {" << global
       << "};\nconst char *const kSplit" << id << "[] = {" << split << "};\n";
    it->second = ", kGlobal" + id + ", kSplit" + id;
  }
  return it->second;
}

/// A ZeRO-1/2 moment of a tp-sharded weight (opt.m.W, opt.v.W) is a flat
/// range of W's block, dumped through the block (runtime.h: zero_axes): its
/// fields, "" for any other tensor.
std::string DescriptorEmitter::zeroBlockFields(const PersistentTensor &tensor) {
  StringRef name = tensor.name;
  if (!name.consume_front("opt.m.") && !name.consume_front("opt.v."))
    return "";
  auto param = program.symbols.lookup<ParamOp>(name);
  auto zero = program.zeroGroups.find(name);
  auto block = program.shardings.find(name);
  if (!param || zero == program.zeroGroups.end() ||
      block == program.shardings.end())
    return "";
  RankedTensorType whole = param.getTensorType();
  if (!isZeroRange(tensor.type, whole, zero->second))
    return "";
  std::string fields = ", " + quoted(zero->second.spec()) + ", " +
                       std::to_string(whole.getRank()) + ", ";
  fields += shapeArray(whole);
  return fields + shardingArrays(&block->second); // ", kGlobalN, kSplitN"
}

LogicalResult DescriptorEmitter::emitArrays() {
  auto shardingOf = [&](StringRef name) -> const ShardedTensor * {
    auto it = program.shardings.find(name);
    return it == program.shardings.end() ? nullptr : &it->second;
  };
  for (const PersistentTensor &p : persistent) {
    paramShapes.push_back(shapeArray(p.type));
    paramShardings.push_back(shardingArrays(shardingOf(p.name)));
  }
  for (auto [i, in] : llvm::enumerate(plan.inputs)) {
    inputShapes.push_back(shapeArray(in.type));
    FailureOr<std::optional<ShardedTensor>> sharding =
        readSharding(plan.entry.getArgAttrDict(i), in.type, plan.entry);
    if (failed(sharding))
      return failure();
    inputShardings.push_back(shardingArrays(*sharding ? &**sharding : nullptr));
  }
  for (auto [i, out] : llvm::enumerate(plan.outputs)) {
    outputShapes.push_back(shapeArray(out.type));
    // Logits returned split by vocabulary (gather-logits=false).
    FailureOr<std::optional<ShardedTensor>> sharding =
        readSharding(plan.entry.getResultAttrDict(i), out.type, plan.entry);
    if (failed(sharding))
      return failure();
    outputShardings.push_back(shardingArrays(*sharding ? &**sharding : nullptr));
  }
  // Their arrays defined before the descriptors.
  for (const PersistentTensor &p : persistent)
    zeroBlocks.push_back(zeroBlockFields(p));
  return success();
}

Initializer DescriptorEmitter::initializerOf(const PersistentTensor &tensor) {
  Initializer init;
  InitKind kind;
  if (auto param = program.symbols.lookup<ParamOp>(tensor.name)) {
    kind = param.getInit();
    if (FloatAttr attr = param.getInitStdAttr())
      init.std = attr.getValueAsDouble();
  } else {
    kind = program.symbols.lookup<StateOp>(tensor.name).getInit();
  }
  switch (kind) {
  case InitKind::Normal:
    break;
  case InitKind::Zeros:
    init.kind = "BRAID_INIT_ZEROS";
    break;
  case InitKind::Ones:
    init.kind = "BRAID_INIT_ONES";
    break;
  case InitKind::S4DReal: {
    // The period: the last dimension of the global tensor.
    init.kind = "BRAID_INIT_S4D_REAL";
    auto sharded = program.shardings.find(tensor.name);
    init.period = sharded != program.shardings.end()
                      ? sharded->second.globalShape.back()
                      : tensor.type.getShape().back();
    break;
  }
  case InitKind::MambaDt:
    init.kind = "BRAID_INIT_MAMBA_DT";
    break;
  }
  return init;
}

/// An empty table's one row (C has no empty arrays).
static void emitEmptyRow(raw_ostream &os, StringRef dtype) {
  os << "  {nullptr, " << dtype
     << ", 0, nullptr, BRAID_INIT_ZEROS, 0, 0, 0},\n";
}

void DescriptorEmitter::emitPersistent() {
  os << "\nconst braid_tensor_desc kParams[] = {\n";
  for (auto [i, p] : llvm::enumerate(persistent)) {
    Initializer init = initializerOf(p);
    os << "  {" << quoted(p.name) << ", " << dtypeName(p.type) << ", "
       << p.type.getRank() << ", " << paramShapes[i] << ", " << init.kind
       << ", " << literal(init.std) << ", " << init.period << ", " << p.offset
       << paramShardings[i];
    // A lower pipeline rank holds this tensor too, and dumps it.
    bool mirror = program.mirrors.contains(p.name);
    if (mirror || !zeroBlocks[i].empty())
      os << (paramShardings[i].empty() ? ", nullptr, nullptr" : "") << ", "
         << (mirror ? 1 : 0) << zeroBlocks[i];
    os << "},\n";
  }
  if (persistent.empty())
    emitEmptyRow(os, "BRAID_F32");
  os << "};\n\n";
}

LogicalResult DescriptorEmitter::emitInputs(int64_t bound) {
  os << "const braid_tensor_desc kInputs[] = {\n";
  for (auto [i, in] : llvm::enumerate(plan.inputs)) {
    FailureOr<std::string> name = inputName(plan.entry.getArgument(i));
    if (failed(name))
      return failure();
    os << "  {" << quoted(*name) << ", " << dtypeName(in.type) << ", "
       << in.type.getRank() << ", " << inputShapes[i]
       << ", BRAID_INIT_TOKENS, 0, " << bound << ", " << in.offset
       << inputShardings[i] << "},\n";
  }
  if (plan.inputs.empty())
    emitEmptyRow(os, "BRAID_I32");
  os << "};\n\n";
  return success();
}

void DescriptorEmitter::emitOutputs() {
  // What a call writes: the entry's results, declared for the runtime.
  os << "const braid_tensor_desc kOutputs[] = {\n";
  for (auto [i, out] : llvm::enumerate(plan.outputs))
    os << "  {nullptr, " << dtypeName(out.type) << ", " << out.type.getRank()
       << ", " << outputShapes[i] << ", BRAID_INIT_ZEROS, 0, 0, " << out.offset
       << outputShardings[i] << "},\n";
  if (plan.outputs.empty())
    emitEmptyRow(os, "BRAID_F32");
  os << "};\n\n";
}

void DescriptorEmitter::emitFunctions() {
  // One step: the entry over the persistent inputs. A partitioned program
  // computes the global loss itself (its IR reduces it over the grid).
  auto pointers = [&](ArrayRef<PersistentTensor> tensors) {
    llvm::interleaveComma(tensors, os, [&](const PersistentTensor &t) {
      os << "arena + " << t.offset;
    });
    if (tensors.empty())
      os << "nullptr";
  };
  os << "void step(braid_rt *rt, char *arena) {\n  void *const args[] = {";
  pointers(plan.inputs);
  os << "};\n  void *const results[] = {";
  pointers(plan.outputs);
  os << "};\n";
  os << "  fn_" << identifier(plan.entry.getSymName()) << "(rt, arena, "
     << plan.persistentBytes << ", args, results);\n}\n\n";
  // What completes the parameters after a step (the runtime runs it before
  // it reads them: dumps, the end of the run), in the entry's frame.
  if (plan.finish)
    os << "void finish(braid_rt *rt, char *arena) {\n  fn_"
       << identifier(plan.finish.getSymName()) << "(rt, arena, "
       << plan.persistentBytes << ", nullptr, nullptr);\n}\n\n";
}

void DescriptorEmitter::emitProgram() {
  std::string name = "braid";
  if (auto config = program.module->getAttrOfType<DictionaryAttr>(
          BraidDialect::getModelAttrName()))
    if (auto n = config.getAs<StringAttr>("name"))
      name = n.getValue().str();
  ArrayRef<std::string> commGroups = program.commGroups;
  if (!commGroups.empty()) {
    os << "const char *const kCommGroups[] = {";
    llvm::interleaveComma(commGroups, os,
                          [&](const std::string &g) { os << quoted(g); });
    os << "};\n\n";
  }
  auto stringOrNull = [](StringRef text) {
    return text.empty() ? std::string("nullptr") : quoted(text);
  };
  os << "const braid_program kProgram = {" << quoted(name) << ", "
     << plan.arenaBytes << ", " << persistent.size() << ", kParams, "
     << plan.inputs.size() << ", kInputs, "
     << (plan.kind == EntryKind::TrainStep ? plan.outputs.front().offset : -1)
     << ", step, " << stringOrNull(program.grid) << ", " << commGroups.size()
     << ", " << (commGroups.empty() ? "nullptr" : "kCommGroups") << ", "
     << (program.onPipelineAxis ? "\"pp\"" : "nullptr") << ", "
     << (program.onPipelineAxis ? *program.pipelineRank : 0) << ", "
     << stringOrNull(program.zigzagAxis) << ", "
     << (plan.finish ? "finish" : "nullptr") << ", BRAID_ENTRY_"
     << StringRef(stringifyEntryKind(plan.kind)).upper() << ", "
     << plan.outputs.size() << ", kOutputs};\n";
}

LogicalResult ProgramEmitter::emitDescriptor(raw_ostream &os) {
  return DescriptorEmitter(*this, os).emit();
}

} // namespace braid::cpp
