//===- EmitCpp.cpp - a braid program as one C++/CUDA source ---------------===//
//
// The emitted file has three parts: generated fused elementwise kernels
// (functors run by braid::launch_elementwise on the CPU or as CUDA kernels),
// one C++ function per braid function (kernel calls at planned arena
// offsets, lifetime announcements, value names for dumps), and the program
// descriptor the runtime reads (arena size, parameters, inputs, loss, and
// for an SPMD program its grid and the sharding of its tensors).
//
//===----------------------------------------------------------------------===//

#include "braid/Target/Cpp.h"

#include "Emitter.h"

#include "braid/Pipelines.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"
#include "dialects/dist/IR/DistDialect.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <set>

using namespace mlir;
using namespace mlir::braid;

namespace braid::cpp {

/// The runtime's name of an element type.
std::string dtypeName(Type type) {
  type = getElementTypeOrSelf(type);
  if (type.isF32())
    return "BRAID_F32";
  if (type.isBF16())
    return "BRAID_BF16";
  if (type.isF16())
    return "BRAID_F16";
  if (type.isInteger(32))
    return "BRAID_I32";
  return "BRAID_I64";
}

/// The C++ storage type of a float element type in generated kernels.
std::string storageType(Type type) {
  type = getElementTypeOrSelf(type);
  if (type.isBF16())
    return "braid::bf16";
  if (type.isF16())
    return "braid::f16";
  return "float";
}

/// A double literal that reads back exactly.
std::string literal(double value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.17g", value);
  return text;
}

std::string quoted(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// A C identifier for a symbol name (`layers.0.x` -> `layers_0_x`).
std::string identifier(StringRef name) {
  std::string out;
  for (char c : name)
    out += llvm::isAlnum(c) ? c : '_';
  return out;
}

int64_t numElements(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<ShapedType>(value.getType()).getShape();
}

Code FunctionEmitter::ptr(Value value) {
  const Storage &storage = fp.storage.find(value)->second;
  switch (storage.kind) {
  case Storage::Kind::Frame:
    return Code("at(arena, frame + ") << storage.offset << ")";
  case Storage::Kind::Argument:
    return Code("args[") << storage.index << "]";
  case Storage::Kind::Result:
    return Code("results[") << storage.index << "]";
  case Storage::Kind::Param:
    return Code("at(arena, ") << storage.offset << ")";
  case Storage::Kind::ParamRange: {
    // The range's index is an expression of coordinates: get_param_range's
    // own emission reports one the emitter cannot print.
    FailureOr<Code> at = indexExpr(storage.at);
    return Code("advance(at(arena, ")
           << storage.offset << "), ("
           << (succeeded(at) ? *at : Code::integer(0)) << ") * "
           << storage.elementBytes << ")";
  }
  }
  llvm_unreachable("unknown storage");
}

std::string FunctionEmitter::nameOf(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return "arg" + std::to_string(arg.getArgNumber());
  auto result = cast<OpResult>(value);
  Operation *op = result.getOwner();
  std::string name = "v" + std::to_string(fp.position.lookup(op));
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    name = loc.getName().str();
  // Results are numbered when there are several, a transfer's token aside
  // (counted up to two: a stage call has hundreds of results).
  unsigned values = 0;
  for (Type type : op->getResultTypes())
    if (!isa<dist::TokenType>(type) && ++values > 1)
      break;
  if (values > 1)
    name += "." + std::to_string(result.getResultNumber());
  return name;
}

std::string FunctionEmitter::array(ArrayRef<int64_t> values) {
  if (values.empty())
    return "nullptr";
  // One array per content, so that ops passing equal arrays print alike.
  std::string content = llvm::join(
      llvm::map_range(values, [](int64_t v) { return std::to_string(v); }),
      ", ");
  auto [it, inserted] = arrays.try_emplace(content, "");
  if (!inserted)
    return it->second;
  it->second = "kA" + std::to_string(nextArray++);
  declarations += "  static const int64_t " + it->second + "[] = {" + content + "};\n";
  return it->second;
}

void FunctionEmitter::addStatement(const Code &code) {
  statements.push_back(Code("  ") << code << ";\n");
}

LogicalResult FunctionEmitter::emit(raw_ostream &os) {
  func::FuncOp func = fp.func;
  llvm::DenseMap<Value, const FrameBuffer *> bufferOf;
  llvm::DenseMap<unsigned, SmallVector<const FrameBuffer *>> freesAt;
  for (const FrameBuffer &buffer : fp.buffers) {
    bufferOf[buffer.value] = &buffer;
    freesAt[buffer.lastOp].push_back(&buffer);
  }

  for (Operation &op : func.getBody().front()) {
    Operation *root = fp.fusion->getRoot(&op);
    // A fused group is emitted at its root.
    if (root && root != &op)
      continue;
    for (Value result : op.getResults())
      if (const FrameBuffer *buffer = bufferOf.lookup(result))
        addStatement(Code("braid_rt_alloc(rt, frame + ")
                     << buffer->offset << ", " << buffer->bytes << ", "
                     << Code::string(nameOf(result)) << ")");
    if (failed(emitOp(&op)))
      return failure();
    announceResults(op);
    // Buffers whose last use executes at this position die after it.
    for (const FrameBuffer *buffer : freesAt.lookup(fp.position.lookup(&op)))
      addStatement(Code("braid_rt_free(rt, frame + ")
                   << buffer->offset << ", " << buffer->bytes << ")");
  }

  os << "// @" << func.getSymName() << ": frame of " << fp.frameBytes
     << " bytes.\n";
  os << "void fn_" << identifier(func.getSymName())
     << "(braid_rt *rt, char *arena, int64_t frame, void *const *args, "
        "void *const *results) {\n";
  os << "  (void)arena; (void)frame; (void)args; (void)results;\n";
  std::string printed = printStatements(
      statements, program.options.rollRepeats, declarations, nextTable);
  // A transfer's event lives in a slot of the function's array, numbered in
  // program order, so that repeated transfers differ in a literal only.
  if (!events.empty())
    declarations +=
        "  braid_event *ev[" + std::to_string(events.size()) + "];\n";
  os << declarations << printed << "}\n\n";
  return success();
}

LogicalResult FunctionEmitter::emitOp(Operation *op) {
  if (isa<GetParamOp, ReshapeOp, func::ReturnOp>(op) || isIndexOp(op))
    return success();
  // The partitioning attributes whose protocols --convert-braid-to-dist
  // expands: the emitter decides no protocol.
  if (isa<AttentionOp, AttentionGradOp, Conv1dOp, Conv1dGradOp,
          SelectiveScanOp, SelectiveScanGradOp, EmbeddingOp, EmbeddingGradOp,
          CrossEntropyOp, CrossEntropyGradOp, AdamWUpdateOp, SGDUpdateOp>(op))
    for (StringRef name : {"ring_axes", "query_offset_axes",
                           "sequence_zigzag", "context_axes", "zero_axes",
                           "vocab_axes", "vocab_size", "denominator"})
      if (op->hasAttr(name))
      return op->emitError("'")
             << op->getName() << "' carries " << name
             << ", which --convert-braid-to-dist expands: run it first";
  if (auto call = dyn_cast<func::CallOp>(op))
    return emitCall(call);
  if (isSpmdOp(op))
    return emitSpmdOp(op);
  if (isDistOp(op))
    return emitDistOp(op);
  if (isa<GetParamRangeOp, SetParamOp>(op))
    return emitParamAccess(op);
  if (fp.fusion->getRoot(op) == op)
    return emitFusedGroup(op);
  if (auto kernel = dyn_cast<KernelCallOpInterface>(op))
    return emitKernelCalls(kernel);
  return op->emitError("braid-translate cannot emit '")
         << op->getName() << "'";
}

/// The scope values computed by a call are named under: the longest dotted
/// prefix shared by the parameters it is passed (`layers.3` for
/// `layers.3.attn.wq`, `layers.3.mlp_norm`, ...), else the name of its result,
/// else the callee's name.
std::string FunctionEmitter::callScope(func::CallOp call) {
  // Dotted components shared by every parameter name, the last one excluded.
  std::optional<SmallVector<StringRef>> common;
  for (Value operand : call.getOperands()) {
    auto found = fp.storage.find(operand);
    if (found == fp.storage.end() ||
        found->second.kind != Storage::Kind::Param)
      continue;
    SmallVector<StringRef> parts;
    found->second.name.split(parts, '.');
    parts.pop_back();
    if (!common) {
      common = parts;
      continue;
    }
    unsigned n = 0;
    while (n < common->size() && n < parts.size() && (*common)[n] == parts[n])
      ++n;
    common->resize(n);
  }
  if (common && !common->empty())
    return llvm::join(*common, ".");
  if (auto loc = dyn_cast<NameLoc>(call.getLoc()))
    return loc.getName().str();
  return call.getCallee().str();
}

LogicalResult FunctionEmitter::emitCall(func::CallOp call) {
  // A pipeline action is one event of the trace, around its kernels: "F3c1"
  // is the forward of micro-batch 3 through model chunk 1.
  std::string action;
  if (auto kind = call->getAttrOfType<StringAttr>("dist.action")) {
    action = kind.getValue().str();
    if (auto mb = call->getAttrOfType<IntegerAttr>("dist.microbatch"))
      action += std::to_string(mb.getInt());
    if (auto chunk = call->getAttrOfType<IntegerAttr>("dist.chunk"))
      action += "c" + std::to_string(chunk.getInt());
    addStatement(Code("braid_rt_op_begin(rt, ")
                 << Code::string("pipeline") << ", " << Code::string(action)
                 << ")");
  }
  // The pointers of the operands or results, or a null one for none.
  auto pointers = [&](ValueRange values) {
    SmallVector<Code> each = llvm::map_to_vector(
        values, [&](Value v) { return Code("(void *)") << ptr(v); });
    return values.empty() ? Code("nullptr") : Code::join(each, ", ");
  };
  // One statement: the block is the roller's unit.
  statements.push_back(
      Code("  {\n    braid_rt_push_scope(rt, ")
      << Code::string(callScope(call)) << ");\n    void *const a[] = {"
      << pointers(call.getOperands()) << "};\n    void *const r[] = {"
      << pointers(call.getResults()) << "};\n    fn_"
      << identifier(call.getCallee()) << "(rt, arena, frame + "
      << fp.calleeFrame.lookup(call)
      << ", a, r);\n    braid_rt_pop_scope(rt);\n  }\n");
  if (!action.empty())
    addStatement("braid_rt_op_end(rt)");
  return success();
}

LogicalResult ProgramEmitter::emit(raw_ostream &os) {
  if (failed(collectSpmd()))
    return failure();
  std::string functions;
  llvm::raw_string_ostream fnOs(functions);
  for (auto &[op, fp] : plan.functions)
    if (failed(FunctionEmitter(*this, *fp).emit(fnOs)))
      return failure();
  std::string descriptor;
  llvm::raw_string_ostream descOs(descriptor);
  if (failed(emitDescriptor(descOs)))
    return failure();

  os << "// Generated by braid-translate --braid-to-cpp: one training-program "
        "step.\n// Compiles with the host C++ compiler (CPU runtime) and with "
        "nvcc (CUDA runtime).\n";
  os << "// Arena: " << plan.arenaBytes << " bytes (" << plan.persistentBytes
     << " persistent).\n\n";
  os << "#include \"braid/runtime.h\"\n#include \"braid/codegen.h\"\n\n";
  os << "namespace {\n\n";
  os << "/// A typeless pointer `offset` bytes into the arena.\n"
        "inline void *at(char *arena, int64_t offset) { return arena + offset; "
        "}\n\n";
  if (!grid.empty())
    os << "/// This rank's coordinate over grid axes listed in grid order: its "
          "rank in\n/// their communicator.\n"
          "[[maybe_unused]] inline int64_t coord(braid_rt *rt, const char *axes) {\n"
          "  return braid_comm_rank(braid_rt_comm(rt, axes));\n}\n\n"
          "/// `base` advanced by `bytes` bytes.\n"
          "[[maybe_unused]] inline void *advance(void *base, int64_t bytes) {\n"
          "  return static_cast<char *>(base) + bytes;\n}\n\n";
  os << kernels << functions << descriptor;
  // Inference programs (prefill, decode, forward, mixed) are linked into one
  // binary, so each exports a getter named after its entry, without a
  // pipeline stage's suffix (braid_program_get_decode for @decode and for
  // @decode.pp1: a stage's binary holds its stage's programs); a training
  // step is the binary's one program.
  std::string getter = "braid_program_get";
  if (plan.kind != EntryKind::TrainStep)
    getter += "_" + plan.entry.getSymName().split('.').first.str();
  os << "\n} // namespace\n\nextern \"C\" const braid_program *" << getter
     << "(void) { return &kProgram; }\n";
  return success();
}

} // namespace braid::cpp

namespace braid {
/// The communicators `entry`'s program uses, read from its IR (its own ops
/// and its callees'): every group a transfer runs over, and every group a
/// local piece takes the rank's coordinate over (one communicator per axis
/// when the axes are not listed in grid order: the emitter composes the
/// coordinate from them).
static mlir::LogicalResult
collectCommGroups(mlir::ModuleOp module, mlir::func::FuncOp entry,
                  std::set<std::string> &groups) {
  using namespace mlir;
  llvm::SmallPtrSet<Operation *, 16> seen;
  SymbolTable symbols(module); // one hashed lookup per call, not a scan
  SmallVector<func::FuncOp> work = {entry};
  auto add = [&](const mlir::braid::GridGroup &group) {
    if (group.inGridOrder()) {
      groups.insert(group.spec());
      return;
    }
    for (const std::string &axis : group.names)
      groups.insert(axis);
  };
  while (!work.empty()) {
    func::FuncOp func = work.pop_back_val();
    if (!seen.insert(func).second)
      continue;
    WalkResult walk = func.walk([&](Operation *op) {
      if (auto call = dyn_cast<func::CallOp>(op)) {
        if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
          work.push_back(callee);
        return WalkResult::advance();
      }
      FailureOr<mlir::braid::GridGroup> group = failure();
      auto grid = op->getAttrOfType<FlatSymbolRefAttr>("grid");
      auto gridAxes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
      if (grid && gridAxes)
        group = mlir::braid::getGridGroup(op, grid, gridAxes.asArrayRef(),
                                    [&] { return op->emitError(); });
      else if (isa<mlir::braid::SliceOp, mlir::braid::UnsliceOp>(op))
        group = mlir::braid::getGridGroup(op, op->getAttrOfType<ArrayAttr>("axes"),
                                    [&] { return op->emitError(); });
      else
        return WalkResult::advance();
      if (failed(group))
        return WalkResult::interrupt();
      add(*group);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return success();
}

/// The program `name` names (one of getPrograms: a pipeline rank's step, or
/// an entry point), or, when `name` is empty, the module's only program.
static mlir::FailureOr<mlir::func::FuncOp> findProgram(mlir::ModuleOp module,
                                                        llvm::StringRef name) {
  llvm::SmallVector<mlir::func::FuncOp> programs = mlir::braid::getPrograms(module);
  if (name.empty()) {
    if (programs.size() == 1)
      return programs.front();
    if (programs.empty())
      return mlir::emitError(module.getLoc(),
                             "no program to emit: no entry point (a public "
                             "func.func with a body marked braid.entry)");
    return mlir::emitError(module.getLoc(), "the module has ")
           << programs.size()
           << " programs (entry points or pipeline ranks): name the one to "
              "emit";
  }
  for (mlir::func::FuncOp program : programs)
    if (program.getSymName() == name)
      return program;
  return mlir::emitError(module.getLoc(), "no program @")
         << name << " to emit: the module's programs are its entry points "
         << "(braid.entry) or its pipeline ranks (braid.pipeline_entries)";
}

namespace {
/// What the programs of a pipelined module share, computed once per module
/// however many of its programs are emitted: the communicators every rank
/// creates (in one order: creating one is collective over all ranks) and
/// the lowest rank holding each persistent tensor (the one that dumps it).
struct PipelineShared {
  llvm::SmallVector<std::string> commGroups;
  llvm::StringMap<int64_t> lowestHolder;
  /// Whether the ranks lie along a pp axis of the grid.
  bool onPipelineAxis = false;
};
} // namespace

static mlir::FailureOr<PipelineShared>
collectPipelineShared(mlir::ModuleOp module, mlir::ArrayAttr entries) {
  PipelineShared shared;
  std::set<std::string> groups;
  mlir::SymbolTable symbols(module);
  for (auto [k, e] : llvm::enumerate(entries)) {
    auto name = llvm::cast<mlir::FlatSymbolRefAttr>(e).getValue();
    auto stage = symbols.lookup<mlir::func::FuncOp>(name);
    if (!stage)
      return mlir::emitError(module.getLoc(), "braid.pipeline_entries names @")
             << name << ", which is not a function of the module";
    // A training pipeline lists one program per rank; an inference one
    // each rank's prefill, decode and forward.
    int64_t rank = static_cast<int64_t>(k);
    if (auto attr = stage->getAttrOfType<mlir::IntegerAttr>(
            mlir::braid::kPipelineRankAttrName))
      rank = attr.getInt();
    // Its persistent tensors only: its frames are its own emission's.
    mlir::FailureOr<mlir::braid::ProgramPlan> other =
        mlir::braid::planProgram(module, stage,
                                 mlir::braid::PlanDetail::Persistent);
    if (mlir::failed(other))
      return mlir::failure();
    for (const auto *list : {&other->params, &other->states})
      for (const mlir::braid::PersistentTensor &t : *list)
        shared.lowestHolder.try_emplace(t.name, rank);
    if (mlir::failed(collectCommGroups(module, other->entry, groups)))
      return mlir::failure();
  }
  // Plus the group of a rank's own stage (every axis but pp), which dumps use.
  if (mlir::shard::GridOp grid = mlir::braid::getProgramGrid(module)) {
    mlir::FailureOr<llvm::SmallVector<std::string>> names =
        mlir::braid::getGridAxisNames(grid);
    if (mlir::failed(names))
      return mlir::failure();
    std::string stage;
    for (const std::string &axis : *names)
      if (axis != "pp")
        stage += (stage.empty() ? "" : ",") + axis;
      else
        shared.onPipelineAxis = true;
    if (!stage.empty())
      groups.insert(stage);
  }
  shared.commGroups.assign(groups.begin(), groups.end());
  return shared;
}

/// Emits the program `entry`. `shared` caches what a pipeline's programs
/// share: the first of them to be emitted fills it.
static mlir::LogicalResult emitProgram(mlir::ModuleOp module,
                                       mlir::func::FuncOp entry,
                                       std::optional<PipelineShared> &shared,
                                       llvm::raw_ostream &os,
                                       const CppEmitOptions &options) {
  mlir::FailureOr<mlir::braid::ProgramPlan> plan =
      mlir::braid::planProgram(module, entry);
  if (mlir::failed(plan))
    return mlir::failure();
  cpp::ProgramEmitter emitter(module, *plan, options);
  auto entries = module->getAttrOfType<mlir::ArrayAttr>(kPipelineEntriesAttr);
  if (!entries)
    return emitter.emit(os);

  // A pipeline: every rank's program creates the communicators any of them
  // uses, in one order, and the lowest rank holding a tensor dumps it.
  auto rank = plan->entry->getAttrOfType<mlir::IntegerAttr>(
      mlir::braid::kPipelineRankAttrName);
  if (!rank)
    return plan->entry.emitError("a pipelined module's programs are the "
                                 "functions of braid.pipeline_entries");
  emitter.pipelineRank = rank.getInt();
  if (!shared) {
    mlir::FailureOr<PipelineShared> collected =
        collectPipelineShared(module, entries);
    if (mlir::failed(collected))
      return mlir::failure();
    shared = std::move(*collected);
  }
  emitter.onPipelineAxis = shared->onPipelineAxis;
  emitter.commGroups = shared->commGroups;
  for (const auto *list : {&plan->params, &plan->states})
    for (const mlir::braid::PersistentTensor &t : *list)
      if (shared->lowestHolder.lookup(t.name) < rank.getInt())
        emitter.mirrors.insert(t.name);
  return emitter.emit(os);
}

mlir::LogicalResult emitProgramAsCpp(mlir::ModuleOp module,
                                     llvm::StringRef program,
                                     llvm::raw_ostream &os,
                                     const CppEmitOptions &options) {
  mlir::FailureOr<mlir::func::FuncOp> entry = findProgram(module, program);
  if (mlir::failed(entry))
    return mlir::failure();
  std::optional<PipelineShared> shared;
  return emitProgram(module, *entry, shared, os, options);
}

mlir::FailureOr<llvm::SmallVector<EmittedProgram>>
emitProgramsAsCpp(mlir::ModuleOp module, const CppEmitOptions &options) {
  llvm::SmallVector<mlir::func::FuncOp> programs =
      mlir::braid::getPrograms(module);
  if (programs.empty()) {
    (void)findProgram(module, ""); // says why there is none
    return mlir::failure();
  }
  std::optional<PipelineShared> shared;
  llvm::SmallVector<EmittedProgram> emitted;
  for (mlir::func::FuncOp program : programs) {
    EmittedProgram &out = emitted.emplace_back();
    out.name = program.getSymName().str();
    if (auto rank = program->getAttrOfType<mlir::IntegerAttr>(
            mlir::braid::kPipelineRankAttrName))
      out.pipelineRank = rank.getInt();
    llvm::raw_string_ostream os(out.source);
    if (mlir::failed(emitProgram(module, program, shared, os, options)))
      return mlir::failure();
  }
  return emitted;
}
} // namespace braid
