//===- ModelStats.cpp - the --braid-model-stats pass ----------------------===//

#include "dialects/braid/Transforms/EntryPass.h"
#include "dialects/braid/Transforms/Passes.h"
#include "dialects/braid/Transforms/ReportNumbers.h"

#include "dialects/braid/Analysis/ModelStats.h"
#include "dialects/braid/IR/BraidOps.h"
#include "dialects/braid/IR/EntryPoints.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDMODELSTATSPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;

static void printAttribute(llvm::raw_ostream &os, Attribute attr) {
  if (auto str = dyn_cast<StringAttr>(attr))
    os << str.getValue();
  else if (auto flag = dyn_cast<BoolAttr>(attr))
    os << (flag.getValue() ? "true" : "false");
  else if (auto integer = dyn_cast<IntegerAttr>(attr))
    os << integer.getValue();
  else if (auto fp = dyn_cast<FloatAttr>(attr))
    os << fp.getValueAsDouble();
  else
    attr.print(os);
}

namespace mlir::braid {
namespace {
struct BraidModelStatsPass
    : EntryPass<BraidModelStatsPass, braid::impl::BraidModelStatsPassBase> {
  using EntryPass::EntryPass;

  LogicalResult runOnEntry(ModuleOp module, func::FuncOp step) {
    FailureOr<ModelStats> stats = computeModelStats(module, step);
    if (failed(stats))
      return failure();

    llvm::raw_ostream &os = llvm::outs();
    auto line = [&](const Twine &name, double value) {
      os << name << ": ";
      printReportNumber(os, value);
      os << "\n";
    };
    if (auto config = module->getAttrOfType<DictionaryAttr>(kModelAttrName)) {
      for (NamedAttribute entry : config) {
        os << "config." << entry.getName().getValue() << ": ";
        printAttribute(os, entry.getValue());
        os << "\n";
      }
    }
    double tokens = static_cast<double>(stats->tokensPerStep);
    double forward = stats->forwardMatmulFlops / tokens;
    double layerForward = stats->layerForwardMatmulFlops / tokens;
    line("parameters", stats->parameters);
    line("parameters_active", std::round(stats->activeParameters));
    line("parameters_embedding", stats->embeddingParameters);
    line("parameter_bytes", stats->parameterBytes);
    line("tokens_per_step", stats->tokensPerStep);
    line("layers", stats->layers);
    line("forward_flops_per_token", forward);
    line("forward_nonmatmul_flops_per_token",
         stats->forwardOtherFlops / tokens);
    // Backward of a matrix product is two products of the same size.
    line("training_flops_per_token", 3 * forward);
    line("training_flops_per_token_selective_recompute",
         3 * forward + stats->layerAttentionMatmulFlops / tokens);
    line("training_flops_per_token_full_recompute", 3 * forward + layerForward);
    for (const LayerKindStats &layer : stats->layerKinds) {
      std::string prefix = "layer." + layer.function;
      line(prefix + ".calls", layer.calls);
      line(prefix + ".forward_flops_per_token",
           layer.forwardMatmulFlops / tokens);
      line(prefix + ".activation_bytes_per_token",
           layer.activationBytes / tokens);
    }
    os.flush();
    markAllAnalysesPreserved();
    return success();
  }
};
} // namespace
} // namespace mlir::braid
