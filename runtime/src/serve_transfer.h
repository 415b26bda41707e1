//===- serve_transfer.h - the cache moved from prefill to decode -*- C++ -*-===//
//
// Disaggregated serving (braid-run --serve --disaggregate, driver_serve.cpp):
// the launch is two groups of ranks running the same programs on the same
// grid, the first the prefill calls, the second the decode calls, both
// planning every iteration alike (the same scheduler, the same arrivals and
// drawn tokens, so the same page numbers in both pools). After each
// iteration's prefill call, the rows it wrote into each attention layer's
// KV pool (every chunk's positions, through its page table) and the Mamba
// states of the chunks' slots move from each rank of the prefill group to
// the rank of the decode group with the same coordinates, which holds the
// same block of them: one message per iteration, sent by the prefill group
// after its call and received by the decode group after its decode call.
// What this first step leaves to the next: groups with different layouts
// (the slices then cut by the two layouts' boxes) and transfers issued
// layer by layer inside the prefill program as dist ops (docs/serving.md).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SERVE_TRANSFER_H
#define BRAID_RUNTIME_SERVE_TRANSFER_H

#include "driver.h"
#include "serve_scheduler.h"

#include <cstdint>
#include <vector>

namespace braid::rt::driver {

class CacheTransfer {
public:
  /// The states that move: every KV pool (cache.<...>.k/.v, [N, P, H, D])
  /// and Mamba state (cache.<...>.conv/.ssm, [slots, ...]) of the program.
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
  /// One contiguous piece of a state in the arena.
  struct Slice {
    int64_t offset, bytes;
  };
  std::vector<Slice> slicesOf(const std::vector<serve::PrefillChunk> &chunks,
                              const std::vector<std::vector<int32_t>> &tables) const;

  Session &s;
  std::vector<const Persistent *> pools, mambaStates;
  int64_t moved = 0;
};

} // namespace braid::rt::driver

#endif // BRAID_RUNTIME_SERVE_TRANSFER_H
