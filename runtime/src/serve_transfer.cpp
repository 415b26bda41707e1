//===- serve_transfer.cpp - the cache moved from prefill to decode --------===//
//
// What serve_transfer.h specifies. The test hook BRAID_TEST_SERVE_FAULT=
// transfer leaves the first KV pool (layer 0's keys) out of every message,
// a transfer missing one layer, which --verify must see.
//
//===----------------------------------------------------------------------===//

#include "serve_transfer.h"

#ifdef BRAID_RUNTIME_MPI
#include "comm_mpi.h"
#endif

#include <cstdlib>
#include <cstring>
#include <string>

namespace braid::rt::driver {

namespace {

bool endsWith(const std::string &text, const char *tail) {
  size_t n = std::strlen(tail);
  return text.size() >= n && text.compare(text.size() - n, n, tail) == 0;
}

#ifdef BRAID_RUNTIME_MPI
constexpr int32_t kTransferTag = 4301;

/// The launch rank of this rank's partner in the other group.
int32_t partnerOf(const Session &s) {
  const int32_t group = s.ranks.size;
  return s.ranks.replica == 0 ? s.ranks.rank + group : s.ranks.rank;
}
#endif

} // namespace

CacheTransfer::CacheTransfer(Session &s) : s(s) {
  for (const Persistent &p : s.persistent) {
    const std::string name = p.desc->name;
    if (name.rfind("cache.", 0) != 0)
      continue;
    if ((endsWith(name, ".k") || endsWith(name, ".v")) && p.shape.size() == 4)
      pools.push_back(&p);
    else if (endsWith(name, ".conv") || endsWith(name, ".ssm"))
      mambaStates.push_back(&p);
  }
}

std::vector<CacheTransfer::Slice>
CacheTransfer::slicesOf(const std::vector<serve::PrefillChunk> &chunks,
                        const std::vector<std::vector<int32_t>> &tables) const {
  const char *hook = std::getenv("BRAID_TEST_SERVE_FAULT");
  const bool dropFirstLayer = hook && std::strcmp(hook, "transfer") == 0;
  std::vector<Slice> slices;
  for (const Persistent *pool : pools) {
    if (dropFirstLayer && pool == pools.front())
      continue;
    // [N, P, H, D] local: a position's row is H x D contiguous elements.
    const int64_t pageSize = pool->shape[1];
    const int64_t rowBytes = pool->bytes / (pool->shape[0] * pageSize);
    for (size_t c = 0; c < chunks.size(); ++c)
      for (size_t t = 0; t < chunks[c].tokens.size(); ++t) {
        const int64_t position = chunks[c].position + int64_t(t);
        const int32_t page = tables[c][size_t(position / pageSize)];
        if (page < 0 || page >= pool->shape[0])
          fatal("serve: request %lld's position %lld has no page to move",
                (long long)chunks[c].sequence, (long long)position);
        slices.push_back({pool->desc->offset + (page * pageSize + position % pageSize) * rowBytes,
                          rowBytes});
      }
  }
  // A Mamba state [slots, ...]: the chunk's slot, whole.
  for (const Persistent *state : mambaStates) {
    const int64_t slotBytes = state->bytes / state->shape[0];
    for (const serve::PrefillChunk &chunk : chunks)
      slices.push_back({state->desc->offset + chunk.slot * slotBytes, slotBytes});
  }
  return slices;
}

void CacheTransfer::send(const std::vector<serve::PrefillChunk> &chunks,
                         const std::vector<std::vector<int32_t>> &tables) {
  if (chunks.empty())
    return;
  std::vector<Slice> slices = slicesOf(chunks, tables);
  int64_t total = 0;
  for (const Slice &slice : slices)
    total += slice.bytes;
  std::vector<char> message(static_cast<size_t>(total));
  int64_t at = 0;
  for (const Slice &slice : slices) {
    s.rt->backend->copyToHost(message.data() + at, s.rt->arena + slice.offset, slice.bytes);
    at += slice.bytes;
  }
#ifdef BRAID_RUNTIME_MPI
  mpi::sendOnLaunch(message.data(), total, partnerOf(s), kTransferTag);
#else
  fatal("--disaggregate needs ranks launched by mpirun");
#endif
  moved += total;
}

void CacheTransfer::receive(const std::vector<serve::PrefillChunk> &chunks,
                            const std::vector<std::vector<int32_t>> &tables) {
  if (chunks.empty())
    return;
  // The sender's slices (the launch's ranks share the environment, so the
  // fault hook leaves the same one out on both sides).
  std::vector<Slice> slices = slicesOf(chunks, tables);
  int64_t total = 0;
  for (const Slice &slice : slices)
    total += slice.bytes;
  std::vector<char> message(static_cast<size_t>(total));
#ifdef BRAID_RUNTIME_MPI
  mpi::receiveOnLaunch(message.data(), total, partnerOf(s), kTransferTag);
#else
  fatal("--disaggregate needs ranks launched by mpirun");
#endif
  int64_t at = 0;
  for (const Slice &slice : slices) {
    s.rt->backend->copyToDevice(s.rt->arena + slice.offset, message.data() + at, slice.bytes);
    at += slice.bytes;
  }
  moved += total;
}

} // namespace braid::rt::driver
