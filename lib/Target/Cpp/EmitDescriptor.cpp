//===- EmitDescriptor.cpp - the program descriptor the runtime reads ------===//
//
// After the functions, the emitted file describes the program to the
// runtime: the arena's size, every parameter and state (shape, initializer,
// offset, sharding), the step's inputs (how the runtime generates them), the
// loss, the grid and the communicators a pipeline's stages create.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/braid/IR/BraidOps.h"
#include "dialects/dist/IR/DistDialect.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::braid;

namespace braid::cpp {

/// How a step input is generated: tokens for an embedding, labels for the
/// loss; both uniform below the vocabulary the model draws from. A
/// partitioned program may first move the input through collectives.
static std::optional<std::string> inputRole(Value value) {
  for (Operation *user : value.getUsers()) {
    if (isa<EmbeddingOp, EmbeddingShardOp>(user) && user->getOperand(0) == value)
      return std::string("tokens");
    if (isa<CrossEntropyOp, CrossEntropyStatsOp>(user) &&
        user->getOperand(1) == value)
      return std::string("labels");
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
  if (std::optional<std::string> role = inputRole(arg))
    return *role;
  return emitError(arg.getLoc(), "step argument #")
         << arg.getArgNumber()
         << " feeds neither an embedding's tokens nor the loss's labels, so "
            "the runtime cannot generate it";
}

LogicalResult ProgramEmitter::emitDescriptor(raw_ostream &os) {
  // The bound of token draws: the unpadded vocabulary when the model pads.
  int64_t bound = 0;
  if (auto config = module->getAttrOfType<DictionaryAttr>(
          BraidDialect::getModelAttrName()))
    for (StringRef key : {"vocab_unpadded", "vocab"})
      if (auto v = config.getAs<IntegerAttr>(key); v && bound == 0)
        bound = v.getInt();
  if (bound == 0)
    plan.entry.walk([&](EmbeddingOp e) {
      bound = shapeOf(e.getTable())[0];
      // A vocabulary-parallel table is a slice: draw from the global one.
      if (auto get = e.getTable().getDefiningOp<GetParamOp>())
        if (auto it = shardings.find(get.getName()); it != shardings.end())
          bound = it->second.globalShape[0];
    });

  // One array per shape and per sharding: a model's layers share them.
  llvm::StringMap<std::string> arrays;
  unsigned shapeId = 0, shardingId = 0;
  auto shapeArray = [&](RankedTensorType type) -> std::string {
    if (type.getRank() == 0)
      return "nullptr";
    std::string content;
    llvm::raw_string_ostream cs(content);
    llvm::interleaveComma(type.getShape(), cs);
    auto [it, inserted] = arrays.try_emplace("shape:" + content, "");
    if (inserted) {
      it->second = "kShape" + std::to_string(shapeId++);
      os << "constexpr int64_t " << it->second << "[] = {" << content
         << "};\n";
    }
    return it->second;
  };
  // Parameters and program state are both initialized by the runtime.
  SmallVector<PersistentTensor> persistent(plan.params);
  llvm::append_range(persistent, plan.states);
  // A sharded tensor's global shape and split axes: ", kGlobalN, kSplitN".
  auto shardingArrays = [&](const ShardedTensor *sharding) -> std::string {
    if (!sharding)
      return "";
    std::string global, split;
    llvm::raw_string_ostream gs(global), ss(split);
    llvm::interleaveComma(sharding->globalShape, gs);
    llvm::interleaveComma(splitSpecs(*sharding, *devices), ss,
                          [&](const std::string &axes) { ss << quoted(axes); });
    auto [it, inserted] =
        arrays.try_emplace("sharding:" + global + ";" + split, "");
    if (inserted) {
      std::string id = std::to_string(shardingId++);
      os << "constexpr int64_t kGlobal" << id << "[] = {" << global
         << "};\nconst char *const kSplit" << id << "[] = {" << split
         << "};\n";
      it->second = ", kGlobal" + id + ", kSplit" + id;
    }
    return it->second;
  };
  SmallVector<std::string> paramShapes, inputShapes, paramShardings,
      inputShardings;
  for (const PersistentTensor &p : persistent) {
    paramShapes.push_back(shapeArray(p.type));
    auto it = shardings.find(p.name);
    paramShardings.push_back(
        shardingArrays(it == shardings.end() ? nullptr : &it->second));
  }
  for (auto [i, in] : llvm::enumerate(plan.inputs)) {
    inputShapes.push_back(shapeArray(in.type));
    FailureOr<std::optional<ShardedTensor>> sharding =
        readSharding(plan.entry.getArgAttrDict(i), in.type, plan.entry);
    if (failed(sharding))
      return failure();
    inputShardings.push_back(shardingArrays(*sharding ? &**sharding : nullptr));
  }
  SmallVector<std::string> outputShapes;
  for (const PersistentTensor &out : plan.outputs)
    outputShapes.push_back(shapeArray(out.type));

  // A ZeRO-1/2 moment of a tp-sharded weight (opt.m.W, opt.v.W) is a flat
  // range of W's block, dumped through the block (runtime.h: zero_axes):
  // its fields, with their arrays defined before the descriptors.
  SmallVector<std::string> zeroBlocks;
  for (const PersistentTensor &p : persistent) {
    std::string zeroBlock;
    StringRef name = p.name;
    if (name.consume_front("opt.m.") || name.consume_front("opt.v.")) {
      auto param = symbols.lookup<ParamOp>(name);
      auto zero = zeroGroups.find(name);
      auto block = shardings.find(name);
      if (param && zero != zeroGroups.end() && block != shardings.end() &&
          p.type.getRank() == 1 &&
          p.type.getNumElements() * zero->second.size() ==
              param.getTensorType().getNumElements() &&
          p.type.getNumElements() != param.getTensorType().getNumElements())
        zeroBlock = ", " + quoted(zero->second.spec()) + ", " +
                    std::to_string(param.getTensorType().getRank()) + ", " +
                    shapeArray(param.getTensorType()) +
                    shardingArrays(&block->second); // ", kGlobalN, kSplitN"
    }
    zeroBlocks.push_back(zeroBlock);
  }

  os << "\nconst braid_tensor_desc kParams[] = {\n";
  for (auto [i, p] : llvm::enumerate(persistent)) {
    InitKind kind;
    double std = 0.0;
    if (auto param = symbols.lookup<ParamOp>(p.name)) {
      kind = param.getInit();
      if (FloatAttr attr = param.getInitStdAttr())
        std = attr.getValueAsDouble();
    } else {
      kind = symbols.lookup<StateOp>(p.name).getInit();
    }
    std::string init = "BRAID_INIT_NORMAL";
    // s4d_real's period: the last dimension of the global tensor.
    int64_t bound = 0;
    switch (kind) {
    case InitKind::Normal:
      break;
    case InitKind::Zeros:
      init = "BRAID_INIT_ZEROS";
      break;
    case InitKind::Ones:
      init = "BRAID_INIT_ONES";
      break;
    case InitKind::S4DReal: {
      init = "BRAID_INIT_S4D_REAL";
      auto sharded = shardings.find(p.name);
      bound = sharded != shardings.end() ? sharded->second.globalShape.back()
                                         : p.type.getShape().back();
      break;
    }
    case InitKind::MambaDt:
      init = "BRAID_INIT_MAMBA_DT";
      break;
    }
    os << "  {" << quoted(p.name) << ", " << dtypeName(p.type) << ", "
       << p.type.getRank() << ", " << paramShapes[i] << ", " << init << ", "
       << literal(std) << ", " << bound << ", " << p.offset
       << paramShardings[i];
    const std::string &zeroBlock = zeroBlocks[i];
    // A lower pipeline rank holds this tensor too, and dumps it.
    bool mirror = mirrors.contains(p.name);
    if (mirror || !zeroBlock.empty())
      os << (paramShardings[i].empty() ? ", nullptr, nullptr" : "") << ", "
         << (mirror ? 1 : 0) << zeroBlock;
    os << "},\n";
  }
  if (persistent.empty())
    os << "  {nullptr, BRAID_F32, 0, nullptr, BRAID_INIT_ZEROS, 0, 0, 0},\n";
  os << "};\n\nconst braid_tensor_desc kInputs[] = {\n";
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
    os << "  {nullptr, BRAID_I32, 0, nullptr, BRAID_INIT_ZEROS, 0, 0, 0},\n";
  // What a call writes: the entry's results, declared for the runtime.
  os << "};\n\nconst braid_tensor_desc kOutputs[] = {\n";
  for (auto [i, out] : llvm::enumerate(plan.outputs))
    os << "  {nullptr, " << dtypeName(out.type) << ", " << out.type.getRank() << ", "
       << outputShapes[i] << ", BRAID_INIT_ZEROS, 0, 0, " << out.offset << "},\n";
  if (plan.outputs.empty())
    os << "  {nullptr, BRAID_F32, 0, nullptr, BRAID_INIT_ZEROS, 0, 0, 0},\n";
  os << "};\n\n";

  // One step: the entry over the persistent inputs. A partitioned program
  // computes the global loss itself (its IR reduces it over the grid).
  os << "void step(braid_rt *rt, char *arena) {\n  void *const args[] = {";
  llvm::interleaveComma(plan.inputs, os, [&](const PersistentTensor &in) {
    os << "arena + " << in.offset;
  });
  if (plan.inputs.empty())
    os << "nullptr";
  os << "};\n  void *const results[] = {";
  llvm::interleaveComma(plan.outputs, os, [&](const PersistentTensor &out) {
    os << "arena + " << out.offset;
  });
  if (plan.outputs.empty())
    os << "nullptr";
  os << "};\n";
  os << "  fn_" << identifier(plan.entry.getSymName()) << "(rt, arena, "
     << plan.persistentBytes << ", args, results);\n}\n\n";
  // What completes the parameters after a step (the runtime runs it before
  // it reads them: dumps, the end of the run), in the entry's frame.
  if (plan.finish)
    os << "void finish(braid_rt *rt, char *arena) {\n  fn_"
       << identifier(plan.finish.getSymName()) << "(rt, arena, " << plan.persistentBytes
       << ", nullptr, nullptr);\n}\n\n";

  std::string name = "braid";
  if (auto config = module->getAttrOfType<DictionaryAttr>(
          BraidDialect::getModelAttrName()))
    if (auto n = config.getAs<StringAttr>("name"))
      name = n.getValue().str();
  if (!commGroups.empty()) {
    os << "const char *const kCommGroups[] = {";
    llvm::interleaveComma(commGroups, os,
                          [&](const std::string &g) { os << quoted(g); });
    os << "};\n\n";
  }
  os << "const braid_program kProgram = {" << quoted(name) << ", "
     << plan.arenaBytes << ", " << persistent.size() << ", kParams, "
     << plan.inputs.size() << ", kInputs, "
     << (plan.kind == EntryKind::TrainStep ? plan.outputs.front().offset : -1)
     << ", step, "
     << (grid.empty() ? "nullptr" : quoted(grid)) << ", " << commGroups.size()
     << ", " << (commGroups.empty() ? "nullptr" : "kCommGroups") << ", "
     << (onPipelineAxis ? "\"pp\"" : "nullptr") << ", "
     << (onPipelineAxis ? *pipelineRank : 0) << ", "
     << (zigzagAxis.empty() ? std::string("nullptr") : quoted(zigzagAxis)) << ", "
     << (plan.finish ? "finish" : "nullptr") << ", BRAID_ENTRY_"
     << StringRef(stringifyEntryKind(plan.kind)).upper() << ", "
     << plan.outputs.size() << ", kOutputs};\n";
  return success();
}

} // namespace braid::cpp
