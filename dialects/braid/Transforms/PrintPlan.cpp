//===- PrintPlan.cpp - the --braid-print-plan pass ------------------------===//
//
// Prints the parallel plan of a partitioned program (after --braid-partition,
// and after --braid-autodiff/--braid-optimizer for the whole training step):
// the grid; each parameter's sharding, per-rank shape and bytes; each value
// crossing a layer boundary (the activations layer functions take and
// return); and, per collective kind and group, how many run per step and the
// bytes each rank sends under the ring model the runtime also counts
// (all-reduce 2(n-1)/n of the buffer; all-gather, reduce-scatter and
// all-to-all n-1 blocks of a rank's share). Collectives inside ops (the
// softmax statistics of a vocabulary-parallel cross-entropy and its
// gradient, the parameter gather of a ZeRO update) are counted as the
// emitter issues them. Layer functions count once per call.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/StepSimulation.h"
#include "dialects/braid/Transforms/Sharding.h"

#include "dialects/braid/Analysis/OpCost.h"
#include "dialects/braid/Analysis/StepTiming.h"
#include "dialects/braid/IR/BraidAttributes.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "braid/CostModel/CommCost.h"

#include "braid/link_model.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <map>

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDPRINTPLANPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

namespace {

std::string shapeText(ArrayRef<int64_t> shape) {
  return llvm::join(llvm::map_range(shape, [](int64_t d) { return std::to_string(d); }),
                    "x");
}

int64_t bytesOf(RankedTensorType type) {
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

int64_t tensorBytes(Value value) {
  return bytesOf(cast<RankedTensorType>(value.getType()));
}

std::string splitText(ArrayAttr split) {
  if (!split)
    return "replicated";
  SmallVector<std::string> dims;
  for (Attribute dim : split) {
    auto axes = cast<ArrayAttr>(dim);
    dims.push_back(axes.empty()
                       ? "-"
                       : llvm::join(llvm::map_range(axes, [](Attribute a) {
                                      return cast<StringAttr>(a).getValue().str();
                                    }),
                                    ","));
  }
  return "[" + llvm::join(dims, ", ") + "]";
}

struct Traffic {
  int64_t count = 0;
  double bytes = 0;
  double seconds = 0;         ///< predicted on the hardware
  double largestSeconds = 0;  ///< of one transfer, and its algorithm
  const char *algorithm = "";
};

struct PlanPrinter {
  ModuleOp module;
  const Grid &grid;
  raw_ostream &os;
  /// (kind, group) -> traffic per step.
  std::map<std::pair<std::string, std::string>, Traffic> traffic;
  /// Forward attention FLOPs per step by the rank's cp coordinate (scores
  /// and weighted sum, 4 per visible query-key pair and head dimension).
  SmallVector<double> attentionFlops;

  void countAttention(AttentionOp a, int64_t times) {
    auto q = cast<RankedTensorType>(a.getQuery().getType()).getShape();
    auto k = cast<RankedTensorType>(a.getKey().getType()).getShape();
    int64_t ranks = attentionFlops.size();
    // Rank c's queries are stored rows [c S, (c + 1) S) of the global
    // sequence when they are its chunk (all-gather, ring), else all of it
    // (Ulysses: every row, a share of the heads). The keys are always the
    // whole sequence (gathered, or every ring block in turn).
    bool chunked = a.getQueryOffsetAxesAttr() || a.getRingAxesAttr();
    int64_t seqGlobal = chunked ? q[1] * ranks : q[1];
    int64_t keys = a.getRingAxesAttr() ? k[1] * ranks : k[1];
    int64_t zigzag = a.getSequenceZigzag().value_or(0);
    for (int64_t c = 0; c < ranks; ++c) {
      // Visible pairs: all of them, or under the causal mask each query
      // sees the keys at positions up to its own.
      double pairs = 0;
      int64_t first = chunked ? c * q[1] : 0;
      if (!a.getCausal()) {
        pairs = double(q[1]) * keys;
      } else {
        for (int64_t r = first; r < first + q[1]; ++r)
          pairs += double(storedPosition(r, seqGlobal, zigzag)) + 1;
      }
      attentionFlops[c] += 4.0 * q[0] * q[2] * q[3] * pairs * times;
    }
  }
  /// The position of stored row `row` of a sequence of `seq` rows held in
  /// zigzag order over `zigzag` ranks (0: natural order).
  static int64_t storedPosition(int64_t row, int64_t seq, int64_t zigzag) {
    if (zigzag <= 0)
      return row;
    int64_t chunk = seq / (2 * zigzag), pair = row / (2 * chunk),
            within = row % (2 * chunk);
    return within < chunk ? pair * chunk + within
                          : (2 * zigzag - 1 - pair) * chunk + (within - chunk);
  }

  const ::braid::cost::Hardware &hardware;
  /// link=: the links per grid axis (braid/link_model.h, the CPU ranks'
  /// BRAID_LINK); when given, transfers take their time from them instead of
  /// the hardware's, as the link emulator charges them.
  const ::braid::link::Links &links;
  const std::string &linkText;

  /// What predicted times are on: "h100-sxm", or "cpu.json with links
  /// dp:10us,1GB/s".
  std::string target() const {
    return links.empty() ? hardware.name
                         : hardware.name + " with links " + linkText;
  }

  /// Compute rates (null: the roofline).
  const ::braid::cost::ComputeCalibration *calibration = nullptr;
  /// The timing model the overlap scheduler charges too.
  StepTiming timing{grid, hardware, links, calibration};

  void add(StringRef kind, ArrayRef<int16_t> axes, double blockBytes,
           double blocks, int64_t times) {
    if (grid.size(axes) <= 1)
      return;
    Traffic &t = traffic[{kind.str(), grid.describe(axes)}];
    t.count += times;
    t.bytes += blockBytes * blocks * static_cast<double>(times);
    ::braid::cost::TransferTime time = timing.predict(kind, axes, blockBytes, blocks);
    t.seconds += time.seconds * static_cast<double>(times);
    if (time.seconds >= t.largestSeconds) {
      t.largestSeconds = time.seconds;
      t.algorithm = time.algorithm;
    }
  }
  /// `steps` shifts of each of `values` over `axes`.
  void shifts(ArrayRef<int16_t> axes, ArrayRef<Value> values, int64_t steps,
              int64_t times) {
    for (Value x : values)
      for (int64_t i = 0; i < steps; ++i)
        add("shift", axes, tensorBytes(x), 1, times);
  }
  AxisList axesOf(ArrayRef<int16_t> indices) {
    return AxisList(indices.begin(), indices.end());
  }
  AxisList axesNamed(ArrayAttr names) {
    AxisList axes;
    for (Attribute name : names)
      if (auto axis = grid.find(cast<StringAttr>(name).getValue()))
        axes.push_back(*axis);
    return axes;
  }

  /// Collectives of `func`, run `times` per step, and of its callees.
  void count(func::FuncOp func, int64_t times) {
    func.walk([&](Operation *op) {
      if (std::optional<StepTiming::Block> b = timing.blockOf(op)) {
        add(b->kind, b->axes, b->blockBytes, b->blocks, times);
        return;
      }
      TypeSwitch<Operation *>(op)
          .Case([&](func::CallOp call) {
            if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee()))
              count(callee, times);
          })
          .Case([&](AttentionOp a) {
            countAttention(a, times);
            // Forward: the key and value blocks move n - 1 times.
            if (ArrayAttr ring = a.getRingAxesAttr()) {
              AxisList axes = axesNamed(ring);
              shifts(axes, {a.getKey(), a.getValue()}, grid.size(axes) - 1,
                     times);
            }
          })
          .Case([&](AttentionGradOp a) {
            // Backward: the forward's blocks again (the recomputed output),
            // then the blocks with their f32 cotangents, which move every
            // step (the last one takes them home).
            if (ArrayAttr ring = a.getRingAxesAttr()) {
              AxisList axes = axesNamed(ring);
              int64_t n = grid.size(axes);
              shifts(axes, {a.getKey(), a.getValue()}, 2 * (n - 1), times);
              for (Value x : {a.getKey(), a.getValue()})
                for (int64_t i = 0; i < n; ++i)
                  add("shift", axes,
                      4.0 * cast<RankedTensorType>(x.getType()).getNumElements(),
                      1, times);
            }
          })
          .Case<CrossEntropyOp, CrossEntropyGradOp>([&](Operation *ce) {
            auto vocab = ce->getAttrOfType<ArrayAttr>("vocab_axes");
            if (!vocab)
              return;
            AxisList axes = axesNamed(vocab);
            auto logits = cast<RankedTensorType>(ce->getOperand(0).getType());
            double rows = logits.getNumElements() / logits.getShape().back();
            // Row maxima, then (sum of exponentials, label logit) per row.
            double blocks = timing.ringBlocks("all_reduce", axes);
            add("all_reduce", axes, 4 * rows, blocks, times);
            add("all_reduce", axes, 8 * rows, blocks, times);
          })
          .Case<AdamWUpdateOp, SGDUpdateOp>([&](Operation *update) {
            auto zero = update->getAttrOfType<ArrayAttr>("zero_axes");
            if (!zero)
              return;
            AxisList axes = axesNamed(zero);
            auto param = module.lookupSymbol<ParamOp>(
                update->getAttrOfType<FlatSymbolRefAttr>("param"));
            double n = grid.size(axes);
            add("all_gather", axes, bytesOf(param.getTensorType()) / n, n - 1, times);
          });
    });
  }
};
} // namespace

namespace {
struct BraidPrintPlanPass
    : mlir::braid::impl::BraidPrintPlanPassBase<BraidPrintPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    raw_ostream &os = llvm::outs();
    FailureOr<std::optional<Grid>> gridOf = Grid::of(module);
    if (failed(gridOf))
      return signalPassFailure();
    std::optional<Grid> grid = *gridOf;
    // A pipelined module: one program per stage, each with its transfers.
    auto stages = module->getAttrOfType<ArrayAttr>(kPipelineEntriesAttrName);
    if (stages && grid) {
      if (failed(printStages(module, *grid, stages, os)))
        return signalPassFailure();
      markAllAnalysesPreserved();
      return;
    }
    FailureOr<func::FuncOp> step =
        getUniqueEntry(module, std::nullopt, "--braid-print-plan");
    if (failed(step))
      return signalPassFailure();
    if (!grid) {
      os << "plan: one rank (the module is not partitioned)\n";
      return;
    }
    int64_t zero = 0;
    if (auto attr = module->getAttrOfType<IntegerAttr>(kZeroAttrName))
      zero = attr.getInt();
    SmallVector<std::string> axes;
    for (auto [name, size] : llvm::zip(grid->names, grid->sizes))
      axes.push_back(name + "=" + std::to_string(size));
    os << "plan: grid " << llvm::join(axes, ",") << " (" << grid->numRanks()
       << " ranks), zero " << zero << "\n";

    // Parameters and optimizer state.
    int64_t localBytes = 0, globalBytes = 0;
    auto persistent = [&](Operation *op, StringRef kind, StringRef name,
                          RankedTensorType local) {
      auto split = op->getAttrOfType<ArrayAttr>(kSplitAttrName);
      auto global = op->getAttrOfType<DenseI64ArrayAttr>(kGlobalShapeAttrName);
      ArrayRef<int64_t> globalShape = global ? global.asArrayRef() : local.getShape();
      int64_t bytes = bytesOf(local);
      localBytes += bytes;
      globalBytes += bytesOf(local.clone(globalShape));
      os << kind << " " << name << ": " << shapeText(globalShape) << " "
         << splitText(split) << " -> " << shapeText(local.getShape()) << " ("
         << bytes << " bytes per rank)\n";
    };
    for (ParamOp param : module.getOps<ParamOp>())
      persistent(param, "param", param.getSymName(), param.getTensorType());
    for (StateOp state : module.getOps<StateOp>())
      persistent(state, "state", state.getSymName(),
                 cast<RankedTensorType>(state.getType()));
    os << "persistent: " << localBytes << " bytes per rank (" << globalBytes
       << " unpartitioned)\n";

    // Activations at layer boundaries: what layer functions take and return
    // besides parameters.
    llvm::DenseSet<func::FuncOp> seen;
    step->walk([&](func::CallOp call) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
      // Backward functions take what the forward saved, not boundaries.
      if (!callee || callee.getSymName().ends_with(".bwd") ||
          !seen.insert(callee).second)
        return;
      for (auto [i, operand] : llvm::enumerate(call.getOperands())) {
        if (operand.getDefiningOp<GetParamOp>())
          continue;
        auto type = cast<RankedTensorType>(operand.getType());
        auto split = callee.getArgAttrOfType<ArrayAttr>(i, kSplitAttrName);
        auto global = callee.getArgAttrOfType<DenseI64ArrayAttr>(i, kGlobalShapeAttrName);
        os << "boundary @" << callee.getSymName() << " arg " << i << ": "
           << shapeText(global ? global.asArrayRef() : type.getShape()) << " "
           << splitText(split) << " -> " << shapeText(type.getShape()) << "\n";
      }
    });

    llvm::Expected<::braid::cost::Hardware> hw =
        ::braid::cost::Hardware::named(hardware);
    if (!hw) {
      module.emitError("--braid-print-plan: ")
          << llvm::toString(hw.takeError());
      return signalPassFailure();
    }
    auto calibrated = StepTiming::calibrationFor(calibration, hardware);
    if (!calibrated) {
      module.emitError("--braid-print-plan: ") << llvm::toString(calibrated.takeError());
      return signalPassFailure();
    }
    const ::braid::cost::ComputeCalibration *cal = *calibrated ? &**calibrated : nullptr;
    ::braid::link::Links links;
    if (failed(parseLinks(module, *grid, links)))
      return signalPassFailure();
    PlanPrinter printer{module, *grid, os, {}, {}, *hw, links, link, cal};
    std::optional<int16_t> cp = grid->find("cp");
    printer.attentionFlops.assign(cp ? grid->sizes[*cp] : 1, 0.0);
    printer.count(*step, 1);
    // Context parallelism: how evenly attention's work falls on the ranks.
    if (cp) {
      double total = 0, busiest = 0;
      for (auto [c, flops] : llvm::enumerate(printer.attentionFlops)) {
        os << "attention_flops cp=" << c << ": "
           << llvm::format("%.0f", flops) << " per step\n";
        total += flops;
        busiest = std::max(busiest, flops);
      }
      if (total > 0)
        os << "attention_flops busiest/mean: "
           << llvm::format("%.3f", busiest * printer.attentionFlops.size() / total)
           << "\n";
    }
    printTransfers(printer, "", os);
    printExposed(printer, {*step}, /*stages=*/false, os);
    markAllAnalysesPreserved();
  }

  /// link=: parsed, every named axis an axis of the grid.
  LogicalResult parseLinks(ModuleOp module, const Grid &grid,
                           ::braid::link::Links &links) {
    std::string error;
    if (!::braid::link::parse(link, &links, &error))
      return module.emitError("--braid-print-plan: link='")
             << link << "': " << error;
    for (auto &entry : links.byAxis)
      if (entry.first != "*" && !grid.find(entry.first))
        return module.emitError("--braid-print-plan: link='")
               << link << "': axis '" << entry.first
               << "' is not an axis of the grid";
    return success();
  }

  /// The communication the simulated step waits for, by kind and group:
  /// what the program's order leaves exposed (after --braid-schedule-overlap,
  /// what the schedule could not hide). `funcs`: the step, or every stage of
  /// a pipeline (lines prefixed "stage K: ").
  static void printExposed(PlanPrinter &printer, ArrayRef<func::FuncOp> funcs,
                           bool stages, raw_ostream &os) {
    std::optional<SmallVector<SimulatedProgram>> procs =
        simulatePrograms(printer.module, funcs, printer.timing);
    if (!procs) {
      os << "exposed_time: not simulated (the stages wait for each other)\n";
      return;
    }
    int64_t ranks = printer.grid.numRanks();
    if (int64_t cores = printer.hardware.sharedCores(ranks))
      os << "compute_shared: " << ranks << " ranks on " << cores
         << " cores (an op computes at min(1, cores / ranks computing) of its rate)\n";
    for (const SimulatedProgram &p : *procs) {
      if (p.exposed.empty())
        continue;
      std::string prefix = stages ? ("stage " + Twine(p.stage) + ": ").str() : "";
      double exposed = 0;
      for (auto &[key, seconds] : p.exposed) {
        os << prefix << "exposed_time " << key.first << " over " << key.second
           << ": " << llvm::format("%.1f", seconds * 1e6) << " us per step on "
           << printer.target() << "\n";
        exposed += seconds;
      }
      os << prefix << "exposed_time_per_step: " << llvm::format("%.1f", exposed * 1e6)
         << " us of " << llvm::format("%.1f", p.transferSeconds * 1e6)
         << " us of transfers, step " << llvm::format("%.1f", p.stepSeconds * 1e6)
         << " us (compute " << llvm::format("%.1f", p.computeSeconds * 1e6)
         << " us at " << printer.timing.computeBasis() << ") on " << printer.target() << "\n";
      if (stages)
        os << prefix << "bubble_time_per_step: " << llvm::format("%.1f", p.bubbleSeconds * 1e6)
           << " us waiting for other stages' compute\n";
    }
  }

  /// The transfers `printer` counted, their bytes and predicted times, each
  /// line after `prefix`.
  static void printTransfers(const PlanPrinter &printer, StringRef prefix,
                             raw_ostream &os) {
    double total = 0;
    for (auto &[key, t] : printer.traffic) {
      os << prefix << "collective " << key.first << " over " << key.second
         << ": " << t.count << " per step, " << llvm::format("%.0f", t.bytes)
         << " bytes sent per rank\n";
      total += t.bytes;
    }
    os << prefix << "collective_bytes_per_step: " << llvm::format("%.0f", total)
       << "\n";
    // What the cost model predicts for them, one after another.
    double seconds = 0;
    for (auto &[key, t] : printer.traffic) {
      os << prefix << "transfer_time " << key.first << " over " << key.second
         << ": " << llvm::format("%.1f", t.seconds * 1e6) << " us per step on "
         << printer.target() << " (" << t.algorithm << ")\n";
      seconds += t.seconds;
    }
    os << prefix << "transfer_time_per_step: "
       << llvm::format("%.1f", seconds * 1e6) << " us on "
       << printer.target() << "\n";
  }

  /// A pipelined module: each stage's program and its transfers, prefixed
  /// "stage K: " (the runtime reports stage 0's, rank 0's).
  LogicalResult printStages(ModuleOp module, const Grid &grid,
                            ArrayAttr stages, raw_ostream &os) {
    llvm::Expected<::braid::cost::Hardware> hw =
        ::braid::cost::Hardware::named(hardware);
    if (!hw)
      return module.emitError("--braid-print-plan: ")
             << llvm::toString(hw.takeError());
    auto calibrated = StepTiming::calibrationFor(calibration, hardware);
    if (!calibrated)
      return module.emitError("--braid-print-plan: ")
             << llvm::toString(calibrated.takeError());
    const ::braid::cost::ComputeCalibration *cal = *calibrated ? &**calibrated : nullptr;
    ::braid::link::Links links;
    if (failed(parseLinks(module, grid, links)))
      return failure();
    SmallVector<std::string> axes;
    for (auto [name, size] : llvm::zip(grid.names, grid.sizes))
      axes.push_back(name + "=" + std::to_string(size));
    os << "plan: grid " << llvm::join(axes, ",") << " (" << grid.numRanks()
       << " ranks), pipeline of " << stages.size() << " stages\n";
    SmallVector<func::FuncOp> funcs;
    for (auto [k, stage] : llvm::enumerate(stages)) {
      auto ref = dyn_cast<FlatSymbolRefAttr>(stage);
      auto func = ref ? module.lookupSymbol<func::FuncOp>(ref) : func::FuncOp();
      if (!func)
        return module.emitError("--braid-print-plan: stage ")
               << k << " names no function: " << stage;
      PlanPrinter printer{module, grid, os, {}, {}, *hw, links, link, cal};
      printer.attentionFlops.assign(1, 0.0);
      printer.count(func, 1);
      os << "stage " << k << ": program @" << func.getSymName() << "\n";
      printTransfers(printer, ("stage " + Twine(k) + ": ").str(), os);
      funcs.push_back(func);
    }
    PlanPrinter printer{module, grid, os, {}, {}, *hw, links, link, cal};
    printExposed(printer, funcs, /*stages=*/true, os);
    return success();
  }
};
} // namespace
