//===- serve_mixed.h - the rows of a mixed serving call ---------*- C++ -*-===//
//
// A mixed program (--braid-derive-inference mixed-rows; docs/serving.md)
// runs an iteration's decode rows and prompt chunks as rows of one call: M
// one-token rows in K groups of G = M / K, each row with its own position,
// last row (0, or -1: idle) and page table, and `logit_rows` [K] naming the
// row of each group whose logits the call returns. This file lays an
// iteration out on those rows (no MLIR, no program: the driver,
// driver_serve.cpp, fills the sampler's inputs and runs the call).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SERVE_MIXED_H
#define BRAID_RUNTIME_SERVE_MIXED_H

#include "serve_scheduler.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace braid::rt::serve {

/// A mixed program's size: its rows and its groups of rows.
struct MixedShape {
  int64_t rows = 0, groups = 0;
};

/// The first of `shapes` (smallest first) that holds the iteration's tokens
/// and the rows whose logits it needs (a decode row, a chunk that completes
/// its prompt); the last when none does (the scheduler's budget is its rows).
size_t pickMixedShape(const Iteration &iteration, const std::vector<MixedShape> &shapes);

/// An iteration laid out on a mixed program's rows.
struct MixedLayout {
  std::vector<int32_t> tokens, positions, lastRows; ///< [M]
  std::vector<int32_t> pages;                       ///< [M, T]
  std::vector<int32_t> logitRows;                   ///< [K], -1: none
  std::vector<int64_t> decodeGroups;                ///< the group of each decode row
  std::vector<int64_t> chunkGroups; ///< the group of each chunk; -1: its prompt goes on
};

/// Lays `iteration` out on a program of `shape`: every row whose logits are
/// needed first in a group of its own (decode rows, then completing chunks'
/// last tokens), the other prompt tokens in the free rows; each row gets its
/// sequence's page table (`pageTable(slot)`, `tableEntries` entries).
/// `chunkShift` moves every chunk after a sequence's first that many
/// positions back (0; the test hook BRAID_TEST_SERVE_FAULT=chunk gives 1).
/// Aborts when the iteration does not fit (the scheduler's bug).
MixedLayout layoutMixedCall(const Iteration &iteration, MixedShape shape, int64_t tableEntries,
                            const std::function<std::vector<int32_t>(int64_t)> &pageTable,
                            int64_t chunkShift = 0);

} // namespace braid::rt::serve

#endif // BRAID_RUNTIME_SERVE_MIXED_H
