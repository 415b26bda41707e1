//===- DeriveInference.h - inference programs from the step -----*- C++ -*-===//
//
// Private to dialects/braid/Transforms. What --braid-derive-inference
// (DeriveInferencePass.cpp: its options, their checks and the programs they
// ask for) asks of the derivation (DeriveInference.cpp: the programs cloned
// from the training step, re-typed, with their caches threaded through).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_DERIVEINFERENCE_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_DERIVEINFERENCE_H

#include "dialects/braid/IR/BraidOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace mlir::braid::derive {

/// The token shape of a program: its sequences and rows per sequence.
struct TokenShape {
  int64_t batch = 0, rows = 0;
};

/// One program to derive. `logitGroups` K > 0 (the mixed program): its
/// batch rows form K groups of batch / K rows, and the logits are those of
/// one row per group, picked by the `logit_rows` argument.
struct ProgramSpec {
  EntryKind kind;
  StringRef name;
  TokenShape shape;
  int64_t logitGroups = 0;
};

/// How prefill and decode sample (the pass's `sample` options).
struct SamplingSpec {
  SampleMode mode;
  int64_t topKCap;
};

/// A paged KV cache (the pass's `page-size`): each attention layer's cache
/// is a pool of `pages` pages of `pageSize` rows, addressed through a table
/// of `tableEntries` pages per sequence; Mamba states keep one slot per
/// decode row (`stateSlots`).
struct PagedSpec {
  int64_t pageSize, pages, tableEntries, stateSlots;
};

/// Derives `programs` from the training step `step` (tokens [B, S] and
/// labels to the loss, shape `train`) with a cache of `context` rows per
/// sequence, each an entry point of the module, then removes the step and
/// what only it called. Fails after a located error.
LogicalResult derivePrograms(ModuleOp module, func::FuncOp step, TokenShape train,
                             int64_t context, std::optional<SamplingSpec> sampling,
                             std::optional<PagedSpec> paged, ArrayRef<ProgramSpec> programs);

} // namespace mlir::braid::derive

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_DERIVEINFERENCE_H
