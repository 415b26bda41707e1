//===- serve_transfer.h - the cache moved from prefill to decode -*- C++ -*-===//
//
// Disaggregated serving (braid-run --serve --disaggregate, driver_serve.cpp):
// the launch is two groups of ranks, the first running the prefill calls on
// its own grid, the second the decode calls on its own (--groups P,D; each
// group's programs partitioned for its grid). Both plan every iteration
// alike (the same scheduler, the same arrivals and drawn tokens), so a
// sequence's pages carry the same numbers in both groups' pools. After each
// iteration's prefill call, the rows it wrote into each attention layer's
// KV pool (every chunk's positions, through its page table) and the Mamba
// states of the chunks' slots move to the decode group: every state's block
// on each prefill rank is intersected with its block on each decode rank
// (the layouts' boxes, exchanged once over the launch: kv heads over tp,
// channels of a Mamba state over tp), and each prefill rank sends each
// decode rank the parts they share, one message per pair and iteration
// (a block several prefill ranks hold whole, as kv heads fewer than tp, is
// sent by the first of them). The decode group receives them after its
// decode call. What this step leaves to the next: transfers issued layer by
// layer inside the prefill program as dist ops (docs/serving.md).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SERVE_TRANSFER_H
#define BRAID_RUNTIME_SERVE_TRANSFER_H

#include "boxes.h"
#include "driver.h"
#include "serve_scheduler.h"

#include <cstdint>
#include <vector>

namespace braid::rt::driver {

class CacheTransfer {
public:
  /// The states that move: every KV pool (cache.<...>.k/.v, [N, P, H, D],
  /// items: a page's rows) and Mamba state (cache.<...>.conv/.ssm, [slots,
  /// ...], items: slots). Collective over the launch: exchanges every rank's
  /// blocks of them.
  explicit CacheTransfer(Session &s);

  /// Prefill group: sends what `chunks` wrote (`tables[i]`: chunk i's page
  /// table) to the decode group.
  void send(const std::vector<serve::PrefillChunk> &chunks,
            const std::vector<std::vector<int32_t>> &tables);
  /// Decode group: receives it into its own states.
  void receive(const std::vector<serve::PrefillChunk> &chunks,
               const std::vector<std::vector<int32_t>> &tables);

  /// Bytes moved so far by this rank.
  int64_t bytesMoved() const { return moved; }

private:
  /// One moving state: `lead` item dimensions (never split), then the
  /// dimensions of an item, which the layouts may split.
  struct Unit {
    const Persistent *state;
    size_t lead;
    int64_t itemBytes, elementBytes;
    std::vector<int64_t> itemShape; ///< this rank's item, local
  };
  /// The part of one unit's items that goes from one rank to another.
  struct Piece {
    const Unit *unit;
    Box global; ///< of an item, in the global item's coordinates
    std::vector<int64_t> items;
  };

  std::vector<Piece> piecesBetween(int32_t prefillRank, int32_t decodeRank,
                                   const std::vector<serve::PrefillChunk> &chunks,
                                   const std::vector<std::vector<int32_t>> &tables) const;
  std::vector<int64_t> itemsOf(const Unit &unit, const std::vector<serve::PrefillChunk> &chunks,
                               const std::vector<std::vector<int32_t>> &tables) const;
  /// Whether launch rank `rank` sends `unit`: no lower prefill rank holds
  /// the same block.
  bool sends(size_t unit, int32_t rank) const;

  Session &s;
  std::vector<Unit> units;
  /// boxes[launch rank][unit]: that rank's block of a unit's item.
  std::vector<std::vector<Box>> boxes;
  int32_t prefillRanks = 0;
  int64_t moved = 0;
};

} // namespace braid::rt::driver

#endif // BRAID_RUNTIME_SERVE_TRANSFER_H
