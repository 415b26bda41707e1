//===- PipelineInference.cpp - the --braid-pipeline-inference pass --------===//
//
// Pipeline parallelism for the inference programs (prefill, decode,
// forward). Unlike a training step there is no backward and no schedule to
// choose: every stage runs the micro-batches in order, receiving each from
// the stage before and passing it on, so stage s works on micro-batch j
// while stage s+1 works on micro-batch j-1. What a stage holds is its
// layers' parameters and their KV cache; every program of a stage holds the
// same ones, so the runtime can run a stage's prefill, decode and forward on
// one arena.
//
// The layers are assigned to stages once for all programs (the forward
// program's costs, as --braid-pipeline-stages balances the training step's),
// and each program's ops are stamped with stampChunks, so that what crosses
// a boundary follows from the data alone: the residual stream, relayed by
// every stage it skips. Inputs (tokens, positions, the rows prefill keeps)
// are read by each stage that uses them rather than sent along.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/Pipelining.h"

#include "braid/Support/Debug.h"
#include "dialects/braid/Analysis/PipelineSchedule.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"
#include "dialects/braid/Transforms/Sharding.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "braid-pipeline-inference"

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDPIPELINEINFERENCEPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

namespace {
/// The stage programs of one inference program.
class StageWriter {
public:
  StageWriter(func::FuncOp program, int64_t stages, int64_t microbatches,
              const Grid &grid, int16_t ppAxis,
              const llvm::StringMap<SmallVector<StringAttr>> &stateCopies)
      : program(program), stages(stages), microbatches(microbatches),
        grid(grid), ppAxis(ppAxis), stateCopies(stateCopies),
        context(program.getContext()), b(context), loc(program.getLoc()) {}

  /// Sorts the stamped program's ops by stage and finds what crosses each
  /// boundary.
  void analyse();
  /// Writes the program of `stage`.
  func::FuncOp write(int64_t stage);

private:
  func::FuncOp program;
  int64_t stages, microbatches;
  const Grid &grid;
  int16_t ppAxis;
  /// Each state's copies, one per micro-batch (empty with one micro-batch).
  const llvm::StringMap<SmallVector<StringAttr>> &stateCopies;
  MLIRContext *context;
  OpBuilder b;
  Location loc;

  /// The ops of each stage, parameter views left out (each stage makes its
  /// own where it reads one).
  SmallVector<SmallVector<Operation *>> ops;
  /// carry[k]: values made before stage k and read from stage k on.
  SmallVector<llvm::SetVector<Value>> carry;

  static int64_t stageOf(Operation *op) {
    return op->getAttrOfType<IntegerAttr>(kStageAttrName).getInt();
  }
  int64_t tag(int64_t boundary, int64_t mb) const {
    return 1 + 2 * (boundary * microbatches + mb);
  }
  /// The program's arguments `stage` reads, in order.
  SmallVector<unsigned> argumentsOf(int64_t stage);
  func::FuncOp create(int64_t stage, ArrayRef<unsigned> args);
  /// `view` (a parameter view) for micro-batch `mb`: a parameter is read
  /// once per stage program (`shared`), a state once per micro-batch, of
  /// the micro-batch's own copy.
  Value paramView(Value view, int64_t mb, IRMapping &shared, IRMapping &map);
  void send(Value v, int64_t peer, int64_t t);
  Value recv(Type type, int64_t peer, int64_t t);
  /// The results of the micro-batches, concatenated along their leading
  /// dimension (one value per result).
  SmallVector<Value> concatenate(ArrayRef<SmallVector<Value>> perMicrobatch);
};
} // namespace

void StageWriter::analyse() {
  Block &body = program.getBody().front();
  ops.resize(stages);
  carry.resize(stages + 1);
  for (Operation &op : body.without_terminator())
    if (!isParamView(&op))
      ops[stageOf(&op)].push_back(&op);
  // A value crossing several boundaries is relayed by each stage it skips;
  // what the program returns goes to the last stage.
  auto reads = [&](Value v, int64_t to) {
    Operation *def = v.getDefiningOp();
    if (!def || isParamView(def))
      return;
    for (int64_t k = stageOf(def) + 1; k <= to; ++k)
      carry[k].insert(v);
  };
  for (Operation &op : body.without_terminator())
    if (!isParamView(&op))
      for (Value operand : op.getOperands())
        reads(operand, stageOf(&op));
  for (Value result : body.getTerminator()->getOperands())
    reads(result, stages - 1);
}

SmallVector<unsigned> StageWriter::argumentsOf(int64_t stage) {
  llvm::SetVector<unsigned> used;
  Block &body = program.getBody().front();
  auto note = [&](ValueRange values) {
    for (Value v : values)
      if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == &body)
        used.insert(arg.getArgNumber());
  };
  for (Operation *op : ops[stage])
    note(op->getOperands());
  if (stage == stages - 1)
    note(body.getTerminator()->getOperands());
  SmallVector<unsigned> args(used.begin(), used.end());
  llvm::sort(args);
  return args;
}

/// `attrs` with the leading dimension of its global shape times `count`.
static DictionaryAttr wholeBatch(MLIRContext *context, DictionaryAttr attrs,
                                 int64_t count) {
  NamedAttrList list(attrs);
  if (auto global = list.get(kGlobalShapeAttrName)) {
    SmallVector<int64_t> shape(cast<DenseI64ArrayAttr>(global).asArrayRef());
    shape[0] *= count;
    list.set(kGlobalShapeAttrName, DenseI64ArrayAttr::get(context, shape));
  }
  return list.getDictionary(context);
}

/// `type` with its leading dimension times `count`.
static RankedTensorType wholeBatch(Type type, int64_t count) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[0] *= count;
  return tensor.clone(shape);
}

func::FuncOp StageWriter::create(int64_t stage, ArrayRef<unsigned> args) {
  SmallVector<Type> argTypes, resultTypes;
  for (unsigned a : args)
    argTypes.push_back(wholeBatch(program.getArgumentTypes()[a], microbatches));
  if (stage == stages - 1)
    for (Type type : program.getResultTypes())
      resultTypes.push_back(wholeBatch(type, microbatches));
  b.setInsertionPoint(program);
  std::string name = program.getSymName().str();
  if (stages > 1)
    name += ".pp" + std::to_string(stage);
  else
    name += ".microbatched"; // renamed once the program is gone
  auto f = func::FuncOp::create(b, loc, name,
                                b.getFunctionType(argTypes, resultTypes));
  for (NamedAttribute attr : program->getDiscardableAttrs())
    if (attr.getName() != kMicrobatchesAttrName)
      f->setAttr(attr.getName(), attr.getValue());
  for (auto [i, a] : llvm::enumerate(args))
    f.setArgAttrs(i, wholeBatch(context, program.getArgAttrDict(a), microbatches));
  if (stage == stages - 1)
    for (unsigned r = 0; r < program.getNumResults(); ++r)
      f.setResultAttrs(
          r, wholeBatch(context, program.getResultAttrDict(r), microbatches));
  if (stages > 1)
    f->setAttr(kPipelineRankAttrName, b.getI64IntegerAttr(stage));
  return f;
}

Value StageWriter::paramView(Value view, int64_t mb, IRMapping &shared,
                             IRMapping &map) {
  auto read = view.getDefiningOp<GetParamOp>();
  if (!read)
    read = view.getDefiningOp()->getOperand(0).getDefiningOp<GetParamOp>();
  auto unstage = [](Operation *clone) { clone->removeAttr(kStageAttrName); };
  auto copies = stateCopies.find(read.getName());
  if (copies == stateCopies.end())
    return cloneParamView(b, view, shared, unstage);
  // The micro-batch's own cache: read where it is used, once per use
  // (cache_write updates its operand in place, which must have no other).
  IRMapping own;
  own.map(read.getResult(),
          GetParamOp::create(b, loc, read.getType(),
                             FlatSymbolRefAttr::get(copies->second[mb]))
              .getResult());
  return cloneParamView(b, view, own, unstage);
}

void StageWriter::send(Value v, int64_t peer, int64_t t) {
  auto op = dist::SendOp::create(
      b, loc, dist::TokenType::get(context), v,
      FlatSymbolRefAttr::get(context, grid.symbol),
      b.getDenseI16ArrayAttr({ppAxis}), b.getI64IntegerAttr(peer),
      b.getI64IntegerAttr(t));
  dist::WaitOp::create(b, loc, ValueRange{op.getToken()});
}

Value StageWriter::recv(Type type, int64_t peer, int64_t t) {
  auto op = dist::RecvOp::create(
      b, loc, type, dist::TokenType::get(context),
      FlatSymbolRefAttr::get(context, grid.symbol),
      b.getDenseI16ArrayAttr({ppAxis}), b.getI64IntegerAttr(peer),
      b.getI64IntegerAttr(t));
  dist::WaitOp::create(b, loc, ValueRange{op.getToken()});
  return op.getResult();
}

SmallVector<Value>
StageWriter::concatenate(ArrayRef<SmallVector<Value>> perMicrobatch) {
  int64_t m = static_cast<int64_t>(perMicrobatch.size());
  // The rows of one micro-batch on this rank: a result with k times as many
  // was gathered over the k data-parallel ranks, rank after rank.
  int64_t rows = cast<RankedTensorType>(program.getArgumentTypes().front())
                     .getDimSize(0);
  SmallVector<Value> results;
  for (unsigned r = 0; r < perMicrobatch.front().size(); ++r) {
    SmallVector<Value> pieces;
    for (const SmallVector<Value> &values : perMicrobatch)
      pieces.push_back(values[r]);
    if (m == 1) {
      results.push_back(pieces.front());
      continue;
    }
    // The batch is the outermost dimension: the micro-batches one after the
    // other are the rank's batch, row-major.
    auto piece = cast<RankedTensorType>(pieces.front().getType());
    Type element = piece.getElementType();
    int64_t size = piece.getNumElements();
    Value whole = dist::PackOp::create(
        b, loc, RankedTensorType::get({size * m}, element), pieces,
        b.getI64IntegerAttr(1));
    int64_t ranks = piece.getDimSize(0) / rows;
    if (ranks > 1 && piece.getDimSize(0) % rows == 0) {
      // [micro-batch][rank][row] to the global order [rank][micro-batch][row].
      int64_t block = size / ranks;
      Value blocks = ReshapeOp::create(
          b, loc, RankedTensorType::get({m, ranks, block}, element), whole);
      whole = TransposeOp::create(
          b, loc, RankedTensorType::get({ranks, m, block}, element), blocks,
          b.getDenseI64ArrayAttr({1, 0, 2}));
    }
    results.push_back(ReshapeOp::create(b, loc, wholeBatch(piece, m), whole));
  }
  return results;
}

func::FuncOp StageWriter::write(int64_t stage) {
  SmallVector<unsigned> args = argumentsOf(stage);
  func::FuncOp f = create(stage, args);
  Block *entry = f.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Block &body = program.getBody().front();
  IRMapping shared;
  SmallVector<SmallVector<Value>> results;
  for (int64_t mb = 0; mb < microbatches; ++mb) {
    IRMapping map;
    for (auto [i, a] : llvm::enumerate(args)) {
      Value input = entry->getArgument(i);
      if (microbatches > 1)
        input = dist::MicrobatchOp::create(
            b, loc, body.getArgument(a).getType(), input,
            b.getI64IntegerAttr(mb), b.getI64IntegerAttr(microbatches));
      map.map(body.getArgument(a), input);
    }
    if (stage > 0)
      for (Value v : carry[stage])
        map.map(v, recv(v.getType(), stage - 1, tag(stage, mb)));
    for (Operation *op : ops[stage]) {
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp(); def && isParamView(def))
          map.map(operand, paramView(operand, mb, shared, map));
      Operation *clone = b.clone(*op, map);
      clone->removeAttr(kStageAttrName);
    }
    if (stage + 1 < stages)
      for (Value v : carry[stage + 1])
        send(map.lookup(v), stage + 1, tag(stage + 1, mb));
    if (stage == stages - 1)
      results.push_back(llvm::map_to_vector(
          body.getTerminator()->getOperands(),
          [&](Value v) { return map.lookup(v); }));
  }
  func::ReturnOp::create(b, loc,
                         results.empty() ? SmallVector<Value>()
                                         : concatenate(results));
  return f;
}

namespace mlir::braid {
namespace {
struct BraidPipelineInferencePass
    : impl::BraidPipelineInferencePassBase<BraidPipelineInferencePass> {
  using BraidPipelineInferencePassBase::BraidPipelineInferencePassBase;

  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module);
  /// The stage of each layer, the same in every program.
  FailureOr<SmallVector<int64_t>> assignLayers(ModuleOp module,
                                               ArrayRef<func::FuncOp> programs,
                                               int64_t stages);
  /// One copy per micro-batch of every state the programs read, in the
  /// states' order, each named after it with ".mb<j>".
  llvm::StringMap<SmallVector<StringAttr>>
  copyStates(ModuleOp module, ArrayRef<func::FuncOp> programs,
             int64_t microbatches, SmallVectorImpl<Operation *> &originals);
};
} // namespace
} // namespace mlir::braid

/// The layer calls of `program`, in order.
static SmallVector<func::CallOp> layerCalls(func::FuncOp program) {
  return llvm::to_vector(program.getBody().front().getOps<func::CallOp>());
}

FailureOr<SmallVector<int64_t>> BraidPipelineInferencePass::assignLayers(
    ModuleOp module, ArrayRef<func::FuncOp> programs, int64_t stages) {
  // The forward program's costs are the training step's forward: the split
  // it gives is the one training balances.
  func::FuncOp costed = programs.front();
  for (func::FuncOp program : programs)
    if (getEntryKind(program) == EntryKind::Forward)
      costed = program;
  size_t layers = layerCalls(costed).size();
  for (func::FuncOp program : programs)
    if (layerCalls(program).size() != layers)
      return program.emitError("--braid-pipeline-inference: @")
             << program.getSymName() << " calls " << layerCalls(program).size()
             << " layer functions and @" << costed.getSymName() << " "
             << layers << ": the programs must share their layers";
  FailureOr<SmallVector<int64_t>> costs = computeLayerCosts(module, costed);
  if (failed(costs))
    return failure();
  Location loc = costed.getLoc();
  FailureOr<SmallVector<LayerChunk>> split =
      layout.empty() ? balanceLayers(*costs, stages, loc)
                     : layoutLayers(*costs, SmallVector<int64_t>(layout.begin(), layout.end()),
                                    stages, loc);
  if (failed(split))
    return failure();
  SmallVector<int64_t> stageOf(layers);
  for (auto [stage, chunk] : llvm::enumerate(*split)) {
    LLVM_DEBUG(llvm::dbgs() << "stage " << stage << ": layers " << chunk.begin
                            << ".." << chunk.end - 1 << ", cost " << chunk.cost
                            << " (forward FLOPs)\n");
    for (int64_t l = chunk.begin; l < chunk.end; ++l)
      stageOf[l] = stage;
  }
  return stageOf;
}

llvm::StringMap<SmallVector<StringAttr>> BraidPipelineInferencePass::copyStates(
    ModuleOp module, ArrayRef<func::FuncOp> programs, int64_t microbatches,
    SmallVectorImpl<Operation *> &originals) {
  llvm::StringMap<SmallVector<StringAttr>> copies;
  if (microbatches == 1)
    return copies;
  llvm::StringSet<> read;
  for (func::FuncOp program : programs)
    program.walk([&](GetParamOp op) { read.insert(op.getName()); });
  OpBuilder b(module.getContext());
  for (StateOp state : llvm::to_vector(module.getOps<StateOp>())) {
    if (!read.contains(state.getSymName()))
      continue;
    originals.push_back(state);
    b.setInsertionPointAfter(state);
    SmallVector<StringAttr> &names = copies[state.getSymName()];
    for (int64_t mb = 0; mb < microbatches; ++mb) {
      auto copy = cast<StateOp>(b.clone(*state));
      copy.setSymName((state.getSymName() + ".mb" + Twine(mb)).str());
      names.push_back(copy.getSymNameAttr());
      b.setInsertionPointAfter(copy);
    }
  }
  return copies;
}

LogicalResult BraidPipelineInferencePass::run(ModuleOp module) {
  SmallVector<func::FuncOp> programs;
  for (func::FuncOp entry : getEntries(module))
    if (getEntryKind(entry) != EntryKind::TrainStep)
      programs.push_back(entry);
  if (programs.empty())
    return success();
  StringRef flag = "--braid-pipeline-inference";
  FailureOr<std::optional<Grid>> gridOf = Grid::of(module);
  if (failed(gridOf))
    return failure();
  std::optional<Grid> grid = *gridOf;
  std::optional<int16_t> ppAxis = grid ? grid->find("pp") : std::nullopt;
  int64_t stages = ppAxis ? grid->sizes[*ppAxis] : 1;
  int64_t microbatches = 1;
  for (func::FuncOp program : programs) {
    if (failed(checkOneBlock(program, flag.drop_front(2))))
      return failure();
    int64_t m = 1;
    if (auto attr = program->getAttrOfType<IntegerAttr>(kMicrobatchesAttrName))
      m = attr.getInt();
    if (program != programs.front() && m != microbatches)
      return program.emitError(flag)
             << ": @" << program.getSymName() << " computes one of " << m
             << " micro-batches and @" << programs.front().getSymName()
             << " one of " << microbatches
             << ": the programs share their caches";
    microbatches = m;
  }
  if (stages == 1 && microbatches == 1)
    return success();

  FailureOr<SmallVector<int64_t>> stageOfLayer =
      assignLayers(module, programs, stages);
  if (failed(stageOfLayer))
    return failure();
  for (func::FuncOp program : programs) {
    llvm::DenseMap<Operation *, int64_t> layerChunk;
    for (auto [call, stage] : llvm::zip_equal(layerCalls(program), *stageOfLayer))
      layerChunk[call] = stage;
    stampChunks(program, layerChunk, stages - 1);
  }

  SmallVector<Operation *> originalStates;
  llvm::StringMap<SmallVector<StringAttr>> stateCopies =
      copyStates(module, programs, microbatches, originalStates);
  // Stage by stage: a stage's programs are one binary's.
  SmallVector<SmallVector<func::FuncOp>> written(stages);
  Grid noGrid;
  for (func::FuncOp program : programs) {
    StageWriter writer(program, stages, microbatches, grid ? *grid : noGrid,
                       ppAxis.value_or(0), stateCopies);
    writer.analyse();
    for (int64_t s = 0; s < stages; ++s)
      written[s].push_back(writer.write(s));
  }
  SmallVector<Attribute> entries;
  for (func::FuncOp program : programs) {
    std::string name = program.getSymName().str();
    program.erase();
    if (stages == 1)
      for (func::FuncOp f : written.front())
        if (f.getSymName() == name + ".microbatched")
          f.setSymName(name);
  }
  for (Operation *state : originalStates)
    state->erase();
  if (stages > 1) {
    for (const SmallVector<func::FuncOp> &stage : written)
      for (func::FuncOp f : stage)
        entries.push_back(FlatSymbolRefAttr::get(f.getSymNameAttr()));
    module->setAttr(kPipelineEntriesAttrName,
                    ArrayAttr::get(module.getContext(), entries));
  }
  return success();
}
