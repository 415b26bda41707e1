//===- DeriveInferencePass.cpp - the --braid-derive-inference pass --------===//
//
// The pass's options (Passes.td): the shapes of the programs they ask for
// (prefill, decode, forward and the serving pass's mixed programs), the
// paged cache and the sampling, each checked with a located error before
// DeriveInference.cpp derives them from the training step.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Transforms/DeriveInference.h"
#include "dialects/braid/Transforms/DeriveInferenceMamba.h"
#include "dialects/braid/Transforms/EntryPass.h"
#include "dialects/braid/Transforms/Passes.h"

#include "dialects/braid/IR/EntryPoints.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"

#include <iterator>

namespace mlir::braid {
#define GEN_PASS_DEF_BRAIDDERIVEINFERENCEPASS
#include "dialects/braid/Transforms/Passes.h.inc"
} // namespace mlir::braid

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::derive;

namespace mlir::braid {
namespace {
struct BraidDeriveInferencePass
    : TrainStepPass<BraidDeriveInferencePass,
                    impl::BraidDeriveInferencePassBase> {
  using EntryPass::EntryPass;

  LogicalResult runOnEntry(ModuleOp module, func::FuncOp step) {
    const char *flag = "--braid-derive-inference";
    auto tokens = step.getNumArguments() == 2
                      ? dyn_cast<RankedTensorType>(step.getArgumentTypes()[0])
                      : RankedTensorType();
    if (!tokens || tokens.getRank() != 2 ||
        !isa<IntegerType>(tokens.getElementType()))
      return step.emitError(flag) << ": the training step must take tokens "
                                     "[B, S] and labels";
    TokenShape train{tokens.getDimSize(0), tokens.getDimSize(1)};
    int64_t sequences = batch ? static_cast<int64_t>(batch) : train.batch;
    int64_t rows = context ? static_cast<int64_t>(context) : train.rows;
    int64_t prompt = promptLen ? static_cast<int64_t>(promptLen) : rows;
    if (sequences < 1 || rows < 1 || prompt < 1 || prompt > rows)
      return step.emitError(flag)
             << ": needs batch >= 1, context >= 1 and 1 <= prompt-len <= "
                "context, found batch "
             << sequences << ", context " << rows << ", prompt-len " << prompt;
    if (topKCap < 0)
      return step.emitError(flag) << ": top-k-cap must be >= 0, found "
                                  << static_cast<int64_t>(topKCap);
    std::optional<SamplingSpec> sampling;
    if (sample)
      sampling = SamplingSpec{sampleMode, topKCap};
    int64_t prefillRows =
        prefillBatch ? static_cast<int64_t>(prefillBatch) : sequences;
    FailureOr<std::optional<PagedSpec>> paging =
        pagingOf(step, sequences, rows, prefillRows);
    if (failed(paging))
      return failure();
    SmallVector<ProgramSpec> programs = {
        {EntryKind::Prefill, "prefill", {prefillRows, prompt}},
        {EntryKind::Decode, "decode", {sequences, 1}},
        {EntryKind::Forward, "forward", {sequences, rows}}};
    if (failed(addMixedPrograms(module, step, *paging, sequences, prefillRows,
                                programs)))
      return failure();
    return derivePrograms(module, step, train, rows, sampling, *paging, programs);
  }

  /// The mixed programs `mixed-rows` asks for, smallest first: decode's
  /// shape with each size's rows, rounded up to `groups` (decode rows plus
  /// prompt chunks: the rows whose logits a call may need) groups of equal
  /// size. Their kind is prefill's: most of their rows are prompt tokens,
  /// and their products are a prefill's (a decode step's stream W for a few
  /// rows: MatmulOps.cpp).
  LogicalResult addMixedPrograms(ModuleOp module, func::FuncOp step,
                                 const std::optional<PagedSpec> &paging,
                                 int64_t sequences, int64_t prefillRows,
                                 SmallVectorImpl<ProgramSpec> &programs) {
    static constexpr StringLiteral kNames[] = {"mixed_0", "mixed_1",
                                               "mixed_2", "mixed_3"};
    const char *flag = "--braid-derive-inference";
    if (mixedRows.empty())
      return success();
    if (!paging)
      return step.emitError(flag)
             << ": mixed-rows needs a paged cache (page-size)";
    // A Mamba state advances one token per call: a chunk's tokens cannot be
    // rows of one call.
    SymbolTable symbols(module);
    if (hasMambaState(step, symbols))
      return step.emitError(flag)
             << ": mixed-rows needs a model without Mamba layers (their "
                "states advance one token per call)";
    int64_t groups = sequences + prefillRows;
    SmallVector<int64_t> rows;
    for (int64_t size : mixedRows) {
      if (size <= sequences)
        return step.emitError(flag)
               << ": mixed-rows (" << size << ") must exceed the batch ("
               << sequences
               << "): its rows hold every decode row and the prompt tokens "
                  "beside them";
      rows.push_back((size + groups - 1) / groups * groups);
    }
    llvm::sort(rows);
    rows.erase(llvm::unique(rows), rows.end());
    if (rows.size() > std::size(kNames))
      return step.emitError(flag)
             << ": mixed-rows has " << rows.size()
             << " sizes (after rounding up to multiples of " << groups
             << "); at most " << std::size(kNames) << " are derived";
    for (auto [i, size] : llvm::enumerate(rows))
      programs.push_back(
          {EntryKind::Prefill, kNames[i], {size, 1}, groups});
    return success();
  }

  /// The paged cache the options ask for (none without page-size).
  FailureOr<std::optional<PagedSpec>>
  pagingOf(func::FuncOp step, int64_t sequences, int64_t rows,
           int64_t prefillRows) {
    const char *flag = "--braid-derive-inference";
    if (prefillBatch < 0 || pageSize < 0 || kvPages < 0)
      return step.emitError(flag)
             << ": prefill-batch, page-size and kv-pages must be >= 0";
    if (!pageSize) {
      if (kvPages || prefillRows != sequences)
        return step.emitError(flag)
               << ": kv-pages and a prefill-batch other than the batch need "
                  "a paged cache (page-size)";
      return std::optional<PagedSpec>();
    }
    int64_t size = pageSize;
    int64_t entries = (rows + size - 1) / size;
    int64_t pages = kvPages ? static_cast<int64_t>(kvPages) : sequences * entries;
    return std::optional<PagedSpec>(PagedSpec{size, pages, entries, sequences});
  }
};
} // namespace
} // namespace mlir::braid
