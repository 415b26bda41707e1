//===- CheckOptions.cpp - the pipeline's options checked in the user's terms ===//
//
// A value out of range would otherwise fail in the pass that takes it, named
// as that pass and its own option name it ("--braid-partition: zero must
// be ...", "--braid-pipeline-stages: ..."), or do nothing at all (a schedule
// without a pipeline). The user wrote braid-run's --zero or Python's zero=:
// each message here names that option, the value and what is accepted.
//
// An option that cannot act on the grid is an error where it asks for a
// structure the grid lacks (a pipeline schedule, virtual stages or a layout
// without a pp axis: Megatron refuses an interleaved schedule without
// pipeline parallelism the same way; the user most likely forgot pp= in the
// grid). It is a warning where the run is what the user would get without
// it and a script reused across grids should keep working (ZeRO without a dp
// axis, as DeepSpeed and Megatron's distributed optimizer accept one rank;
// sequence parallelism without tp, which Megatron disables with a warning;
// the cp options without a cp axis).
//
//===----------------------------------------------------------------------===//

#include "braid/CostModel/Hardware.h"
#include "braid/Pipelines.h"
#include "braid/link_model.h"
#include "dialects/braid/IR/Grid.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace braid {
using mlir::braid::Grid;
using mlir::braid::OptimizerKind;

std::string spellOption(llvm::StringRef name, OptionSpelling spelling) {
  return spelling == OptionSpelling::Flag ? ("--" + name).str() : name.str();
}

std::string spellOption(llvm::StringRef name, const llvm::Twine &value,
                        OptionSpelling spelling) {
  return spelling == OptionSpelling::Flag ? ("--" + name + " " + value).str()
                                          : (name + "=" + value).str();
}

namespace {
/// The checks, in the order a user would fix them: ranges, then the grid,
/// then what the grid makes of the options.
class Checker {
public:
  Checker(const TrainingPipelineOptions &options, OptionSpelling spelling)
      : o(options), spelling(spelling) {}

  OptionProblems run(bool useOnGrid) {
    if (checkRanges() && checkGrid() && checkTiming() && useOnGrid)
      checkUseOnGrid();
    return std::move(problems);
  }

private:
  std::string name(llvm::StringRef option) const { return spellOption(option, spelling); }
  std::string given(llvm::StringRef option, const llvm::Twine &value) const {
    return spellOption(option, value, spelling);
  }
  bool error(const llvm::Twine &message) {
    problems.error = message.str();
    return false;
  }

  static std::string number(double value) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%g", value);
    return text;
  }

  /// `value` is finite and at least 0 (torch.optim's rule for lr, eps and
  /// weight decay).
  bool nonNegative(llvm::StringRef option, double value) {
    if (std::isfinite(value) && value >= 0)
      return true;
    return error(name(option) + " must be a finite number >= 0, found " +
                 number(value));
  }

  bool checkRanges() {
    if (o.zero < 0 || o.zero > 3)
      return error(name("zero") + " must be 0, 1, 2 or 3 (the ZeRO stage), found " +
                   llvm::Twine(o.zero.getValue()));
    if (o.microbatches < 1)
      return error(name("microbatches") + " must be at least 1, found " +
                   llvm::Twine(o.microbatches.getValue()));
    if (o.virtualStages < 1)
      return error(name("virtual-stages") + " must be at least 1, found " +
                   llvm::Twine(o.virtualStages.getValue()));
    if (llvm::any_of(o.ppLayout, [](int64_t n) { return n < 1; }))
      return error(name("pp-layout") +
                   " must list positive layer counts (e.g. 2,3), found '" + layout() + "'");
    if (!std::isfinite(o.maxNorm))
      return error(name("max-norm") + " must be a finite number (<= 0: no clipping), found " +
                   number(o.maxNorm));
    return nonNegative("lr", o.lr) && nonNegative("weight-decay", o.weightDecay) &&
           nonNegative("eps", o.eps) && nonNegative("bucket-mb", o.bucketMb) &&
           nonNegative("first-bucket-mb", o.firstBucketMb);
  }

  bool checkGrid() {
    if (o.grid.empty())
      return true;
    std::string why;
    llvm::FailureOr<Grid> parsed = Grid::parse(o.grid, why);
    if (mlir::failed(parsed))
      return error(given("grid", o.grid) + ": " + why);
    grid = std::move(*parsed);
    return true;
  }

  /// The overlap scheduler's and the collective matmul's timing model.
  bool checkTiming() {
    bool timed = o.lowerToDist &&
                 (o.scheduleOverlap ||
                  o.collectiveMatmul == mlir::braid::CollectiveMatmulMode::Auto);
    if (!timed)
      return true;
    llvm::Expected<cost::Hardware> hardware = cost::Hardware::named(o.scheduleHardware);
    if (!hardware)
      return error(given("schedule-hardware", o.scheduleHardware) + ": " +
                   llvm::toString(hardware.takeError()));
    std::string why;
    link::Links links;
    if (!o.scheduleLink.empty() && !link::parse(o.scheduleLink, &links, &why))
      return error(given("schedule-link", o.scheduleLink) + ": " + why);
    return true;
  }

  int64_t axis(llvm::StringRef axisName) const {
    std::optional<int16_t> index = grid.find(axisName);
    return index ? grid.sizes[*index] : 1;
  }
  bool hasAxis(llvm::StringRef axisName) const { return grid.find(axisName).has_value(); }
  /// "the grid dp=2" or "one rank (no grid)", for messages.
  std::string gridWords() const {
    return o.grid.empty() ? "one rank (no " + name("grid") + ")"
                          : "the grid " + o.grid.getValue();
  }
  std::string layout() const {
    std::string text;
    for (int64_t n : o.ppLayout)
      text += (text.empty() ? "" : ",") + std::to_string(n);
    return text;
  }

  void checkUseOnGrid() {
    int64_t pp = axis("pp");
    bool training = o.optimizer != OptimizerKind::None;
    if (o.schedule.hasValue() && !(training && (pp > 1 || o.microbatches > 1))) {
      error(given("schedule", mlir::braid::stringifyEnum(o.schedule.getValue())) +
            (training ? " orders the micro-batches of a pipeline, which " + gridWords() +
                            " with " + given("microbatches", llvm::Twine(o.microbatches)) +
                            " does not have: add a pp axis to " + name("grid") +
                            " or more " + name("microbatches")
                      : " orders the backward passes of micro-batches, which " +
                            given("optimizer", "none") + " (the forward only) does not run"));
      return;
    }
    if (o.virtualStages > 1 && pp < 2) {
      error(given("virtual-stages", llvm::Twine(o.virtualStages)) +
            " splits each pipeline rank's layers into chunks: it needs a pp axis in " +
            name("grid") + ", which " + gridWords() + " does not have");
      return;
    }
    if (!o.ppLayout.empty() && pp < 2) {
      error(given("pp-layout", layout()) +
            " places layers on pipeline ranks: it needs a pp axis in " + name("grid") +
            ", which " + gridWords() + " does not have");
      return;
    }
    auto noEffect = [&](const std::string &option, llvm::StringRef axisName,
                        llvm::StringRef what) {
      problems.warnings.push_back(option + " " + what.str() + " over a " + axisName.str() +
                                  " axis, which " + gridWords() +
                                  " does not have: it has no effect");
    };
    if (o.zero > 0 && !hasAxis("dp"))
      noEffect(given("zero", llvm::Twine(o.zero)), "dp", "shards the training state");
    if (o.sequenceParallel && !hasAxis("tp"))
      noEffect(name("sequence-parallel"), "tp", "shards norms and residuals");
    if ((o.cpAttention.hasValue() || o.cpLayout.hasValue()) && !hasAxis("cp"))
      noEffect(o.cpAttention.hasValue() ? name("cp-attention") : name("cp-layout"), "cp",
               "splits the sequence");
  }

  const TrainingPipelineOptions &o;
  OptionSpelling spelling;
  Grid grid;
  OptionProblems problems;
};
} // namespace

OptionProblems checkTrainingPipelineOptions(const TrainingPipelineOptions &options,
                                            OptionSpelling spelling, bool useOnGrid) {
  return Checker(options, spelling).run(useOnGrid);
}

} // namespace braid
