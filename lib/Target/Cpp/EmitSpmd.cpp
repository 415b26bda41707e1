//===- EmitSpmd.cpp - collectives and partitioned ops ---------------------===//
//
// What the SPMD partitioner leaves in a per-rank program besides its
// transfers (which --convert-braid-to-dist has made dist ops: EmitDist.cpp):
// shard.all_slice, bias_add and unslice, and braid ops whose partitioning
// attributes make them local pieces of a global op (vocabulary-parallel
// embedding and cross-entropy, ZeRO updates). Also the sharding of
// parameters, states and inputs the descriptor records.
//
// A rank's coordinate over a group of grid axes is the rank of the group's
// communicator when the axes are listed in grid order; otherwise it is
// assembled from the single-axis coordinates in the listed order, which is
// the order the partitioner numbers blocks in.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/braid/Analysis/OpCost.h"
#include "dialects/braid/IR/BraidOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

namespace braid::cpp {

/// The block a rank holds when `replicas` consecutive ranks share one.
static std::string blockOf(const std::string &coordinate, int64_t replicas) {
  if (replicas == 1)
    return coordinate;
  return "(" + coordinate + " / " + std::to_string(replicas) + ")";
}

bool isSpmdOp(Operation *op) {
  if (isa_and_nonnull<shard::ShardDialect>(op->getDialect()))
    return true;
  return TypeSwitch<Operation *, bool>(op)
      .Case<BiasAddOp, SliceOp, UnsliceOp>([](auto) { return true; })
      .Case<EmbeddingOp, EmbeddingGradOp>(
          [](auto e) { return e.getVocabAxes().has_value(); })
      .Case<CrossEntropyOp, CrossEntropyGradOp>(
          [](Operation *c) { return isShardedCrossEntropy(c); })
      .Case<AdamWUpdateOp, SGDUpdateOp>(
          [](auto u) { return u.getZeroAxes().has_value(); })
      .Case<Conv1dOp, Conv1dGradOp, SelectiveScanOp, SelectiveScanGradOp>(
          [](auto m) { return m.getContextAxes().has_value(); })
      .Default([](Operation *) { return false; });
}

FailureOr<std::optional<Sharding>>
readSharding(DictionaryAttr attrs, RankedTensorType type, Operation *anchor) {
  Attribute global = attrs ? attrs.get("braid.global_shape") : Attribute();
  Attribute split = attrs ? attrs.get("braid.split") : Attribute();
  if (!global && !split)
    return std::optional<Sharding>();
  auto globalShape = dyn_cast_or_null<DenseI64ArrayAttr>(global);
  auto splitAxes = dyn_cast_or_null<ArrayAttr>(split);
  int64_t rank = type.getRank();
  if (!globalShape || !splitAxes ||
      static_cast<int64_t>(globalShape.size()) != rank ||
      static_cast<int64_t>(splitAxes.size()) != rank)
    return anchor->emitError("a sharded tensor of type ")
           << type
           << " needs braid.global_shape = array<i64: ...> and braid.split "
              "= [[axes], ...] with one entry per dimension";
  Sharding sharding;
  sharding.globalShape = llvm::to_vector(globalShape.asArrayRef());
  for (int64_t d = 0; d < rank; ++d) {
    auto axes = dyn_cast<ArrayAttr>(splitAxes[d]);
    if (!axes || !llvm::all_of(axes, llvm::IsaPred<StringAttr>))
      return anchor->emitError("braid.split entry ")
             << d << " must be an array of grid axis names, found "
             << splitAxes[d];
    int64_t parts = 1;
    std::string names;
    if (!axes.empty()) {
      FailureOr<GridGroup> group = getGridGroup(
          anchor, axes, [&] { return anchor->emitError("braid.split: "); });
      if (failed(group))
        return failure();
      parts = group->size();
      names = group->spec();
    }
    int64_t whole = sharding.globalShape[d];
    if (type.getDimSize(d) != (whole + parts - 1) / parts)
      return anchor->emitError("local size ")
             << type.getDimSize(d) << " of dimension " << d << " is not ceil("
             << whole << " / " << parts << ") for global size " << whole
             << " split over " << parts << " ranks";
    sharding.split.push_back(names);
  }
  return std::optional<Sharding>(std::move(sharding));
}

LogicalResult ProgramEmitter::collectSpmd() {
  if (shard::GridOp gridOp = getProgramGrid(module)) {
    if (llvm::range_size(module.getOps<shard::GridOp>()) != 1)
      return gridOp.emitError("a program runs on one device grid; the module "
                              "declares several");
    FailureOr<SmallVector<std::string>> names = getGridAxisNames(gridOp);
    if (failed(names))
      return failure();
    for (auto [name, size] : llvm::zip_equal(*names, gridOp.getShape()))
      grid += (grid.empty() ? "" : ",") + name + "=" + std::to_string(size);
    if (auto axis = module->getAttrOfType<StringAttr>("braid.zigzag_axis")) {
      if (!llvm::is_contained(*names, axis.getValue()))
        return module.emitError("braid.zigzag_axis '")
               << axis.getValue() << "' is not an axis of the program's grid";
      zigzagAxis = axis.getValue().str();
    }
  }
  for (Operation &op : module.getOps()) {
    if (!isa<ParamOp, StateOp>(op))
      continue;
    auto symbol = cast<SymbolOpInterface>(op);
    auto type = isa<ParamOp>(op) ? cast<ParamOp>(op).getTensorType()
                                 : cast<StateOp>(op).getTensorType();
    FailureOr<std::optional<Sharding>> sharding =
        readSharding(op.getDiscardableAttrDictionary(), type, &op);
    if (failed(sharding))
      return failure();
    if (*sharding)
      shardings[symbol.getName()] = std::move(**sharding);
  }
  WalkResult walk = module.walk([&](Operation *op) {
    ArrayAttr axes;
    StringRef param;
    if (auto u = dyn_cast<AdamWUpdateOp>(op)) {
      axes = u.getZeroAxesAttr();
      param = u.getParam();
    } else if (auto u = dyn_cast<SGDUpdateOp>(op)) {
      axes = u.getZeroAxesAttr();
      param = u.getParam();
    }
    if (!axes)
      return WalkResult::advance();
    FailureOr<GridGroup> group =
        getGridGroup(op, axes, [&] { return op->emitError("zero_axes: "); });
    if (failed(group))
      return WalkResult::interrupt();
    zeroGroups[param] = *group;
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

std::optional<Sharding> ProgramEmitter::gradSharding(StringRef name,
                                                     RankedTensorType type) {
  if (!name.consume_front("grad."))
    return std::nullopt;
  auto param = module.lookupSymbol<ParamOp>(name);
  if (!param)
    return std::nullopt;
  RankedTensorType local = param.getTensorType();
  auto sharded = shardings.find(name);
  if (sharded != shardings.end() && type.getShape() == local.getShape())
    return sharded->second;
  // A ZeRO-2 gradient: this rank's range of the flat parameter.
  auto zero = zeroGroups.find(name);
  if (zero != zeroGroups.end() && type.getRank() == 1 &&
      type.getNumElements() * zero->second.size() == local.getNumElements() &&
      type.getNumElements() != local.getNumElements())
    return Sharding{{local.getNumElements()}, {zero->second.spec()}};
  return std::nullopt;
}

std::string FunctionEmitter::strings(ArrayRef<std::string> values) {
  std::string name = "kS" + std::to_string(nextArray++);
  body += "  static const char *const " + name + "[] = {" +
          llvm::join(llvm::map_range(values, quoted), ", ") + "};\n";
  return name;
}

LogicalResult FunctionEmitter::queryOffset(Operation *op, ArrayAttr axes,
                                           int64_t seq, std::string &offset) {
  offset.clear();
  if (!axes)
    return success();
  FailureOr<GridGroup> group =
      getGridGroup(op, axes, [&] { return op->emitError(); });
  if (failed(group))
    return failure();
  offset = ", " + coordinate(*group) + " * " + std::to_string(seq);
  return success();
}

std::string FunctionEmitter::coordinate(const GridGroup &group) {
  if (group.inGridOrder())
    return "coord(rt, " + quoted(group.spec()) + ")";
  std::string expr;
  for (auto [name, size] : llvm::zip_equal(group.names, group.sizes)) {
    std::string axis = "coord(rt, " + quoted(name) + ")";
    expr = expr.empty()
               ? axis
               : "(" + expr + " * " + std::to_string(size) + " + " + axis + ")";
  }
  return expr;
}

void FunctionEmitter::announce(Value result, raw_ostream &os) {
  auto type = cast<RankedTensorType>(result.getType());
  std::string name = nameOf(result);
  os << "  braid_rt_value";
  std::optional<Sharding> sharding = program.gradSharding(name, type);
  if (sharding)
    os << "_sharded";
  os << "(rt, nullptr, " << quoted(name) << ", " << ptr(result) << ", "
     << dtypeName(type) << ", " << type.getRank() << ", "
     << array(type.getShape());
  if (sharding)
    os << ", " << array(sharding->globalShape) << ", "
       << strings(sharding->split);
  os << ");\n";
}

/// Sizes of a tensor of `shape` around dimension `dim`: the product of the
/// dimensions before it and of those after it.
static std::pair<int64_t, int64_t> outerInner(ArrayRef<int64_t> shape,
                                              int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (int64_t d = dim + 1, e = shape.size(); d < e; ++d)
    inner *= shape[d];
  return {outer, inner};
}

LogicalResult FunctionEmitter::emitSpmdOp(Operation *op, raw_ostream &os) {
  std::string call;
  auto p = [&](Value v) { return ptr(v); };
  auto n = [](int64_t v) { return std::to_string(v); };
  auto dt = [](Value v) { return dtypeName(v.getType()); };
  auto error = [&] { return op->emitError(); };
  // Statements after the first one start on a new line.
  auto add = [&](const std::string &statement) {
    call += (call.empty() ? "" : ";\n  ") + statement;
  };
  auto comm = [](const GridGroup &group) {
    return "braid_rt_comm(rt, " + quoted(group.spec()) + ")";
  };
  auto wait = [](const std::string &collective) {
    return "braid_event_wait(rt, " + collective + ")";
  };
  std::string scratch;
  if (auto it = fp.scratch.find(op); it != fp.scratch.end())
    scratch = "at(arena, frame + " + n(it->second.offset) + ")";
  // The group of a shard collective, which must be on the program's grid.
  auto collectiveGroup = [&](auto c) -> FailureOr<GridGroup> {
    shard::GridOp grid = getProgramGrid(op);
    if (!grid || c.getGrid() != grid.getSymName())
      return op->emitError("runs on grid @")
             << c.getGrid() << ", not the program's grid";
    if (getElementTypeOrSelf(c.getInput().getType()) !=
        getElementTypeOrSelf(c.getResult().getType()))
      return op->emitError("the runtime's collectives keep the element type");
    return getGridGroup(op, c.getGridAttr(), c.getGridAxes(), error);
  };

  // The group named by a braid op's attribute.
  auto namedGroup = [&](ArrayAttr axes) {
    return getGridGroup(op, axes, error);
  };

  LogicalResult result =
      TypeSwitch<Operation *, LogicalResult>(op)
          .Case<shard::AllReduceOp, shard::AllGatherOp,
                shard::ReduceScatterOp, shard::AllToAllOp>([&](auto) {
            return op->emitError("a transfer reaches the emitter as a dist "
                                 "op: run --convert-braid-to-dist first");
          })
          .Case([&](shard::AllSliceOp s) {
            FailureOr<GridGroup> group = collectiveGroup(s);
            if (failed(group))
              return failure();
            int64_t dim = s.getSliceAxis().getSExtValue();
            auto [outer, inner] = outerInner(shapeOf(s.getInput()), dim);
            int64_t local = shapeOf(s.getResult())[dim];
            add("braid_k_slice(rt, " + dt(s.getInput()) + ", " +
                p(s.getInput()) + ", " + p(s.getResult()) + ", " + n(outer) +
                ", " + n(shapeOf(s.getInput())[dim]) + ", " + n(local) + ", " +
                n(inner) + ", " + coordinate(*group) + " * " + n(local) + ")");
            return success();
          })
          .Case<Conv1dOp, Conv1dGradOp>([&](auto c) -> LogicalResult {
            // The halo: this chunk's last K-1 rows go to the next rank, the
            // previous rank's arrive (zeros on the first). The gradient sends
            // the halo's cotangent back and adds the next rank's into its
            // last rows.
            FailureOr<GridGroup> group = namedGroup(*c.getContextAxes());
            if (failed(group))
              return failure();
            auto x = shapeOf(c.getInput());
            int64_t batch = x[0], seq = x[1], ch = x[2];
            int64_t kernel = shapeOf(c.getWeight())[1], rows = kernel - 1;
            if (seq < rows)
              return c.emitError("a chunk of ")
                     << seq << " positions is shorter than the convolution's "
                     << rows << "-position halo";
            int64_t haloBytes = getConvHaloBytes(op);
            auto at = [&](int64_t k) {
              return "static_cast<void *>(static_cast<char *>(" + scratch +
                     ") + " + n(k * haloBytes) + ")";
            };
            std::string halo = at(0), sent = at(1), cr = coordinate(*group),
                        size = n(group->size()), count = n(batch * rows * ch),
                        cm = comm(*group), d = dt(c.getInput());
            std::string dims = n(batch) + ", " + n(seq) + ", " + n(ch) + ", " + n(kernel);
            add("braid_k_slice(rt, " + d + ", " + p(c.getInput()) + ", " + sent +
                ", " + n(batch) + ", " + n(seq) + ", " + n(rows) + ", " + n(ch) +
                ", " + n(seq - rows) + ")");
            add("braid_k_zero(rt, " + d + ", " + halo + ", " + count + ")");
            // One send-receive pair (one NCCL group) per direction.
            auto exchange = [&](const std::string &from, const std::string &into,
                                const std::string &to, const std::string &source) {
              return wait("braid_sendrecv(rt, " + cm + ", " + from + ", " + count +
                          ", " + to + ", " + into + ", " + count + ", " + source +
                          ", " + d + ")");
            };
            std::string nextRank = cr + " < " + size + " - 1 ? " + cr + " + 1 : -1";
            std::string prevRank = cr + " > 0 ? " + cr + " - 1 : -1";
            add(exchange(sent, halo, nextRank, prevRank));
            if constexpr (std::is_same_v<decltype(c), Conv1dOp>) {
              add("braid_k_conv1d_halo(rt, " + d + ", " + p(c.getInput()) + ", " +
                  halo + ", " + p(c.getWeight()) + ", " +
                  (c.getBias() ? p(c.getBias()) : std::string("nullptr")) + ", " +
                  p(c.getResult()) + ", " + dims + ")");
            } else {
              std::string dhalo = at(2), dnext = at(3);
              add("braid_k_conv1d_halo_grad(rt, " + d + ", " + p(c.getInput()) +
                  ", " + halo + ", " + p(c.getWeight()) + ", " + p(c.getGrad()) +
                  ", " + p(c.getDinput()) + ", " + p(c.getDweight()) + ", " +
                  p(c.getDbias()) + ", " + dhalo + ", " + dims + ")");
              add(exchange(dhalo, dnext, prevRank, nextRank));
              add("if (" + cr + " < " + size + " - 1) braid_k_conv1d_halo_accumulate(rt, " +
                  d + ", " + p(c.getDinput()) + ", " + dnext + ", " + dims + ")");
            }
            return success();
          })
          .Case<SelectiveScanOp, SelectiveScanGradOp>([&](auto sc) -> LogicalResult {
            // Pass 1: the chunk from a zero state gives its final state and
            // decay; gathered over the ranks, they compose into the state
            // entering this chunk (an exclusive scan); pass 2 scans from it.
            FailureOr<GridGroup> group = namedGroup(*sc.getContextAxes());
            if (failed(group))
              return failure();
            auto x = shapeOf(sc.getInput());
            int64_t batch = x[0], seq = x[1], di = x[2];
            int64_t state = shapeOf(sc.getA())[1], count = batch * di * state;
            int64_t ranks = group->size();
            int64_t slot = 0;
            auto f32 = [&](int64_t slots) {
              std::string ptr = "reinterpret_cast<float *>(static_cast<char *>(" +
                                scratch + ") + " + n(4 * count * slot) + ")";
              slot += slots;
              return ptr;
            };
            std::string hend = f32(1), decay = f32(1), hendAll = f32(ranks),
                        decayAll = f32(ranks), h0 = f32(1);
            std::string cr = coordinate(*group), cm = comm(*group), d = dt(sc.getInput());
            std::string in = p(sc.getInput()) + ", " + p(sc.getDelta()) + ", " +
                             p(sc.getA()) + ", " + p(sc.getB()) + ", " +
                             p(sc.getC()) + ", " + p(sc.getD());
            std::string dims = n(batch) + ", " + n(seq) + ", " + n(di) + ", " +
                               n(state) + ", " + (sc.getDeltaSoftplus() ? "1" : "0");
            add("braid_k_selective_scan_chunk(rt, " + d + ", " + in +
                ", nullptr, nullptr, " + hend + ", " + decay + ", " + dims + ")");
            add(wait("braid_all_gather(rt, " + cm + ", " + hend + ", " + hendAll +
                     ", " + n(count) + ", BRAID_F32)"));
            add(wait("braid_all_gather(rt, " + cm + ", " + decay + ", " + decayAll +
                     ", " + n(count) + ", BRAID_F32)"));
            add("braid_k_scan_carry(rt, " + decayAll + ", " + hendAll + ", " + h0 +
                ", " + n(ranks) + ", " + cr + ", " + n(count) + ")");
            if constexpr (std::is_same_v<decltype(sc), SelectiveScanOp>) {
              add("braid_k_selective_scan_chunk(rt, " + d + ", " + in + ", " + h0 +
                  ", " + p(sc.getResult()) + ", nullptr, nullptr, " + dims + ")");
            } else {
              std::string dh0 = f32(1), dh0All = f32(ranks), ddecay = f32(1),
                          dhend = f32(1);
              std::string grads = p(sc.getDinput()) + ", " + p(sc.getDdelta()) + ", " +
                                  p(sc.getDA()) + ", " + p(sc.getDB()) + ", " +
                                  p(sc.getDC()) + ", " + p(sc.getDD());
              // The chunk's own scan from h0, which also gives the state's
              // cotangent; the ranks' state cotangents give this chunk's
              // final state's and decay's; their pass-1 gradients add.
              add("braid_k_selective_scan_chunk_grad(rt, " + d + ", " + in + ", " +
                  h0 + ", " + p(sc.getGrad()) + ", nullptr, nullptr, " + grads +
                  ", " + dh0 + ", " + dims + ", 0)");
              add(wait("braid_all_gather(rt, " + cm + ", " + dh0 + ", " + dh0All +
                       ", " + n(count) + ", BRAID_F32)"));
              add("braid_k_scan_carry_grad(rt, " + decayAll + ", " + hendAll + ", " +
                  dh0All + ", " + ddecay + ", " + dhend + ", " + n(ranks) + ", " + cr +
                  ", " + n(count) + ")");
              add("braid_k_selective_scan_chunk_grad(rt, " + d + ", " + in +
                  ", nullptr, nullptr, " + dhend + ", " + ddecay + ", " + grads +
                  ", nullptr, " + dims + ", 1)");
            }
            return success();
          })
          .Case([&](BiasAddOp b) {
            add("braid_k_bias_add(rt, " + dt(b.getInput()) + ", " +
                p(b.getInput()) + ", " + p(b.getBias()) + ", " +
                p(b.getResult()) + ", " + n(numElements(b.getResult())) + ", " +
                n(numElements(b.getBias())) + ")");
            return success();
          })
          .Case([&](UnsliceOp u) {
            FailureOr<GridGroup> group = namedGroup(u.getAxes());
            if (failed(group))
              return failure();
            int64_t dim = u.getDim();
            auto [outer, inner] = outerInner(shapeOf(u.getInput()), dim);
            int64_t local = shapeOf(u.getInput())[dim];
            add("braid_k_unslice(rt, " + dt(u.getInput()) + ", " +
                p(u.getInput()) + ", " + p(u.getResult()) + ", " + n(outer) +
                ", " + n(shapeOf(u.getResult())[dim]) + ", " + n(local) + ", " +
                n(inner) + ", " + blockOf(coordinate(*group), u.getReplicas()) +
                " * " + n(local) + ")");
            return success();
          })
          .Case([&](SliceOp sl) {
            FailureOr<GridGroup> group = namedGroup(sl.getAxes());
            if (failed(group))
              return failure();
            int64_t dim = sl.getDim();
            auto [outer, inner] = outerInner(shapeOf(sl.getInput()), dim);
            int64_t local = shapeOf(sl.getResult())[dim];
            add("braid_k_slice(rt, " + dt(sl.getInput()) + ", " +
                p(sl.getInput()) + ", " + p(sl.getResult()) + ", " + n(outer) +
                ", " + n(shapeOf(sl.getInput())[dim]) + ", " + n(local) + ", " +
                n(inner) + ", " + blockOf(coordinate(*group), sl.getReplicas()) +
                " * " + n(local) + ")");
            return success();
          })
          .Case([&](EmbeddingOp e) -> LogicalResult {
            if (e.getPositionTable())
              return e.emitError("a vocabulary-parallel embedding has no "
                                 "position table (partitioning adds "
                                 "positions with braid.bias_add)");
            FailureOr<GridGroup> group = namedGroup(*e.getVocabAxes());
            if (failed(group))
              return failure();
            auto table = shapeOf(e.getTable());
            add("braid_k_embedding_shard(rt, " + dt(e.getResult()) + ", " +
                dt(e.getTokens()) + ", " + p(e.getTokens()) + ", " +
                p(e.getTable()) + ", " + p(e.getResult()) + ", " +
                n(numElements(e.getTokens())) + ", " + n(table[0]) + ", " +
                n(table[1]) + ", " + coordinate(*group) + " * " + n(table[0]) +
                ")");
            return success();
          })
          .Case([&](EmbeddingGradOp e) {
            FailureOr<GridGroup> group = namedGroup(*e.getVocabAxes());
            if (failed(group))
              return failure();
            auto table = shapeOf(e.getResult());
            add("braid_k_embedding_grad_shard(rt, " + dt(e.getResult()) + ", " +
                dt(e.getTokens()) + ", " + p(e.getTokens()) + ", " +
                p(e.getGrad()) + ", " + p(e.getResult()) + ", " +
                n(numElements(e.getTokens())) + ", " + n(table[0]) + ", " +
                n(table[1]) + ", " + coordinate(*group) + " * " + n(table[0]) +
                ")");
            return success();
          })
          .Case<CrossEntropyOp, CrossEntropyGradOp>([&](auto c)
                                                        -> LogicalResult {
            // Both recompute the softmax statistics: max, then the sum of
            // exponentials and the label's logit, each all-reduced over the
            // vocabulary's ranks.
            Value logits = c.getLogits();
            int64_t vocab = shapeOf(logits).back();
            int64_t rows = numElements(logits) / vocab;
            std::optional<GridGroup> group;
            if (ArrayAttr axes = c.getVocabAxesAttr()) {
              FailureOr<GridGroup> g = namedGroup(axes);
              if (failed(g))
                return failure();
              group = *g;
            }
            std::string offset =
                group ? coordinate(*group) + " * " + n(vocab) : "0";
            int64_t valid = c.getVocabSize().value_or(
                group ? vocab * group->size() : vocab);
            int64_t denominator = c.getDenominator().value_or(rows);
            std::string rowMax = "static_cast<float *>(" + scratch + ")";
            std::string stats = "static_cast<float *>(at(arena, frame + " +
                                n(fp.scratch.lookup(op).offset +
                                  getCrossEntropyStatsOffset(rows)) +
                                "))";
            std::string common = dt(logits) + ", " + p(logits);
            add("braid_k_ce_shard_max(rt, " + common + ", " + rowMax + ", " +
                n(rows) + ", " + n(vocab) + ", " + offset + ", " + n(valid) +
                ")");
            if (group)
              add(wait("braid_all_reduce(rt, " + comm(*group) + ", " + rowMax +
                       ", " + rowMax + ", " + n(rows) +
                       ", BRAID_F32, BRAID_RED_MAX)"));
            add("braid_k_ce_shard_stats(rt, " + dt(logits) + ", " +
                dt(c.getLabels()) + ", " + p(logits) + ", " + p(c.getLabels()) +
                ", " + rowMax + ", " + stats + ", " + n(rows) + ", " +
                n(vocab) + ", " + offset + ", " + n(valid) + ")");
            if (group)
              add(wait("braid_all_reduce(rt, " + comm(*group) + ", " + stats +
                       ", " + stats + ", " + n(2 * rows) +
                       ", BRAID_F32, BRAID_RED_SUM)"));
            if constexpr (std::is_same_v<decltype(c), CrossEntropyOp>)
              add("braid_k_ce_shard_loss(rt, " + rowMax + ", " + stats +
                  ", static_cast<float *>(" + p(c.getResult()) + "), " +
                  n(rows) + ", " + n(denominator) + ")");
            else
              add("braid_k_ce_shard_grad(rt, " + dt(logits) + ", " +
                  dt(c.getLabels()) + ", " + p(logits) + ", " +
                  p(c.getLabels()) + ", " + rowMax + ", " + stats +
                  ", static_cast<const float *>(" + p(c.getGrad()) + "), " +
                  p(c.getResult()) + ", " + n(rows) + ", " + n(vocab) + ", " +
                  offset + ", " + n(valid) + ", " + n(denominator) + ")");
            return success();
          })
          .Case<AdamWUpdateOp, SGDUpdateOp>([&](auto u) -> LogicalResult {
            // This rank updates its range [c L, (c + 1) L) of the flat
            // parameter, then the ranks all-gather the parameter in place.
            FailureOr<GridGroup> group = namedGroup(*u.getZeroAxes());
            if (failed(group))
              return failure();
            if (!group->inGridOrder())
              return u.emitError("zero_axes must list grid axes in grid "
                                 "order (the communicator's rank order, in "
                                 "which the parameter is all-gathered)");
            auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(
                u, u.getParamAttr());
            RankedTensorType type = param.getTensorType();
            int64_t whole = type.getNumElements();
            if (whole % group->size() != 0)
              return u.emitError("a ZeRO update needs the parameter's ")
                     << whole << " elements divisible by the " << group->size()
                     << " ranks of its zero_axes";
            int64_t range = whole / group->size();
            int64_t gradElements = numElements(u.getGrad());
            if (gradElements != whole && gradElements != range)
              return u.emitError("the gradient of a ZeRO update is the whole "
                                 "parameter (")
                     << whole << " elements) or this rank's range (" << range
                     << "), not " << gradElements;
            std::string c = coordinate(*group);
            int64_t rangeBytes = range * getElementBytes(type.getElementType());
            std::string paramPtr =
                "at(arena, " + n(*program.plan.offsetOf(u.getParam())) + ")";
            std::string part =
                "advance(" + paramPtr + ", " + c + " * " + n(rangeBytes) + ")";
            std::string grad = p(u.getGrad());
            if (gradElements == whole)
              grad = "advance(" + grad + ", " + c + " * " +
                     n(range * getElementBytes(
                                   u.getGrad().getType().getElementType())) +
                     ")";
            std::string coef =
                "static_cast<const float *>(" + p(u.getCoef()) + ")";
            if constexpr (std::is_same_v<decltype(u), AdamWUpdateOp>) {
              for (FlatSymbolRefAttr moment : {u.getMAttr(), u.getVAttr()}) {
                auto state =
                    SymbolTable::lookupNearestSymbolFrom<StateOp>(u, moment);
                if (state.getTensorType().getNumElements() != range)
                  return u.emitError("moment ")
                         << moment << " holds "
                         << state.getTensorType().getNumElements()
                         << " elements, not this rank's range of " << range;
              }
              auto symbol = [&](StringRef name) {
                return "at(arena, " + n(*program.plan.offsetOf(name)) + ")";
              };
              add("braid_k_adamw_update(rt, " + dt(u.getGrad()) + ", " + part +
                  ", " + grad + ", static_cast<float *>(" + symbol(u.getM()) +
                  "), static_cast<float *>(" + symbol(u.getV()) + "), " + coef +
                  ", static_cast<const float *>(" + symbol(u.getStep()) +
                  "), " + n(range) + ", " +
                  literal(u.getLr().convertToDouble()) + ", " +
                  literal(u.getBeta1().convertToDouble()) + ", " +
                  literal(u.getBeta2().convertToDouble()) + ", " +
                  literal(u.getEps().convertToDouble()) + ", " +
                  literal(u.getWeightDecay().convertToDouble()) + ")");
            } else {
              add("braid_k_sgd_update(rt, " + dt(u.getGrad()) + ", " + part +
                  ", " + grad + ", " + coef + ", " + n(range) + ", " +
                  literal(u.getLr().convertToDouble()) + ", " +
                  literal(u.getWeightDecay().convertToDouble()) + ")");
            }
            add(wait("braid_all_gather(rt, " + comm(*group) + ", " + part +
                     ", " + paramPtr + ", " + n(range) + ", " +
                     dtypeName(type) + ")"));
            return success();
          })
          .Default([&](Operation *other) {
            return other->emitError("braid-translate cannot emit '")
                   << other->getName() << "'";
          });
  if (failed(result))
    return failure();
  emitBracketed(op, call, os);
  return success();
}

} // namespace braid::cpp
