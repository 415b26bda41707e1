//===- serve_transfer.cpp - the cache moved from prefill to decode --------===//
//
// What serve_transfer.h specifies. The test hook BRAID_TEST_SERVE_FAULT=
// transfer leaves the first KV pool (layer 0's keys) out of every message,
// a transfer missing one layer, which --verify must see (the launch's ranks
// share the environment, so both sides leave out the same).
//
//===----------------------------------------------------------------------===//

#include "serve_transfer.h"

#include "generate_requests.h"
#include "rng.h"

#ifdef BRAID_RUNTIME_MPI
#include "comm_mpi.h"
#endif

#include <cstdlib>
#include <cstring>
#include <string>

namespace braid::rt::driver {

namespace {

[[maybe_unused]] constexpr int32_t kTransferTag = 4301;
constexpr size_t kMaxRank = 4;

/// This rank's block of `p` in global coordinates, dimensions from `lead`.
Box blockOf(const Persistent &p, const std::vector<int32_t> &coords, size_t lead) {
  Box box;
  const ShardLayout &layout = p.layout;
  for (size_t d = lead; d < p.shape.size(); ++d) {
    const bool split = !layout.local.empty() && layout.parts[d] > 1;
    const int64_t start = split ? layout.block(d, coords) * layout.local[d] : 0;
    const int64_t global = layout.local.empty() ? p.shape[d] : layout.global[d];
    box.start.push_back(start);
    box.shape.push_back(std::max<int64_t>(0, std::min(p.shape[d], global - start)));
  }
  return box;
}

bool sameBox(const Box &a, const Box &b) { return a.start == b.start && a.shape == b.shape; }

bool faultDropsFirstPool() {
  const char *hook = std::getenv("BRAID_TEST_SERVE_FAULT");
  return hook && std::strcmp(hook, "transfer") == 0;
}

} // namespace

CacheTransfer::CacheTransfer(Session &s) : s(s) {
  for (const Persistent &p : s.persistent) {
    const std::string name = p.desc->name;
    const CacheState kind = cacheStateOf(name);
    size_t lead = 0;
    if (kind == CacheState::KeysValues && p.shape.size() == 4)
      lead = 2; // [pages, page rows | heads, head dim]
    else if (kind == CacheState::Mamba)
      lead = 1; // [slots | ...]
    else
      continue;
    for (size_t d = 0; d < lead; ++d)
      if (!p.layout.local.empty() && p.layout.parts[d] > 1)
        fatal("serve: %s is split along its pages or slots, which --disaggregate does not move",
              name.c_str());
    Unit unit{&p, lead, 0, braid_dtype_size(p.desc->dtype), {}};
    unit.itemShape.assign(p.shape.begin() + lead, p.shape.end());
    unit.itemBytes = unit.elementBytes;
    for (int64_t n : unit.itemShape)
      unit.itemBytes *= n;
    units.push_back(unit);
  }
  // Every rank's blocks, and a check that both groups hold the same states.
  std::vector<int64_t> mine;
  for (const Unit &unit : units) {
    Box box = blockOf(*unit.state, s.coords, unit.lead);
    mine.push_back(int64_t(rng::fnv1a64(unit.state->desc->name, std::strlen(unit.state->desc->name))));
    for (size_t d = 0; d < kMaxRank; ++d) {
      mine.push_back(d < box.start.size() ? box.start[d] : 0);
      mine.push_back(d < box.shape.size() ? box.shape[d] : 0);
    }
  }
  const size_t perUnit = 1 + 2 * kMaxRank;
#ifdef BRAID_RUNTIME_MPI
  std::vector<int64_t> all = mpi::allGatherOnLaunch(mine);
#else
  std::vector<int64_t> all = mine;
#endif
  const size_t launch = all.size() / std::max<size_t>(1, mine.size());
  boxes.assign(launch, std::vector<Box>(units.size()));
  for (size_t r = 0; r < launch; ++r)
    for (size_t u = 0; u < units.size(); ++u) {
      const int64_t *at = all.data() + (r * units.size() + u) * perUnit;
      if (at[0] != mine[u * perUnit])
        fatal("serve: the prefill and decode groups' programs hold different caches (%s)",
              units[u].state->desc->name);
      const size_t rank = units[u].itemShape.size();
      for (size_t d = 0; d < rank; ++d) {
        boxes[r][u].start.push_back(at[1 + 2 * d]);
        boxes[r][u].shape.push_back(at[2 + 2 * d]);
      }
    }
  prefillRanks = s.ranks.replica == 0 ? s.ranks.size : int32_t(launch) - s.ranks.size;
}

bool CacheTransfer::sends(size_t unit, int32_t rank) const {
  for (int32_t lower = 0; lower < rank; ++lower)
    if (sameBox(boxes[size_t(lower)][unit], boxes[size_t(rank)][unit]))
      return false;
  return true;
}

std::vector<int64_t> CacheTransfer::itemsOf(const Unit &unit,
                                            const std::vector<serve::PrefillChunk> &chunks,
                                            const std::vector<std::vector<int32_t>> &tables) const {
  std::vector<int64_t> items;
  if (unit.lead == 1) { // a Mamba state: each chunk's slot, whole
    for (const serve::PrefillChunk &chunk : chunks)
      items.push_back(chunk.slot);
    return items;
  }
  const int64_t pages = unit.state->shape[0], pageSize = unit.state->shape[1];
  for (size_t c = 0; c < chunks.size(); ++c)
    for (size_t t = 0; t < chunks[c].tokens.size(); ++t) {
      const int64_t position = chunks[c].position + int64_t(t);
      const int32_t page = tables[c][size_t(position / pageSize)];
      if (page < 0 || page >= pages)
        fatal("serve: request %lld's position %lld has no page to move",
              (long long)chunks[c].sequence, (long long)position);
      items.push_back(page * pageSize + position % pageSize);
    }
  return items;
}

std::vector<CacheTransfer::Piece>
CacheTransfer::piecesBetween(int32_t prefillRank, int32_t decodeRank,
                             const std::vector<serve::PrefillChunk> &chunks,
                             const std::vector<std::vector<int32_t>> &tables) const {
  std::vector<Piece> pieces;
  for (size_t u = 0; u < units.size(); ++u) {
    if (u == 0 && faultDropsFirstPool() && units[0].lead == 2)
      continue;
    if (!sends(u, prefillRank))
      continue;
    Box shared = boxes[size_t(prefillRank)][u].intersect(boxes[size_t(decodeRank)][u]);
    if (shared.numel() == 0)
      continue;
    pieces.push_back({&units[u], shared, itemsOf(units[u], chunks, tables)});
  }
  return pieces;
}

void CacheTransfer::send(const std::vector<serve::PrefillChunk> &chunks,
                         const std::vector<std::vector<int32_t>> &tables) {
  if (chunks.empty())
    return;
  const int32_t me = s.ranks.launchRank;
  const int32_t launch = int32_t(boxes.size());
  for (int32_t to = prefillRanks; to < launch; ++to) {
    std::vector<Piece> pieces = piecesBetween(me, to, chunks, tables);
    std::vector<char> message, item;
    for (const Piece &piece : pieces) {
      const Unit &unit = *piece.unit;
      const Box &mine = boxes[size_t(me)][size_t(&unit - units.data())];
      item.resize(size_t(unit.itemBytes));
      for (int64_t index : piece.items) {
        s.rt->backend->copyToHost(item.data(),
                                  s.rt->arena + unit.state->desc->offset + index * unit.itemBytes,
                                  unit.itemBytes);
        const size_t at = message.size();
        message.resize(at + size_t(piece.global.numel() * unit.elementBytes));
        std::vector<int64_t> local(piece.global.start.size());
        for (size_t d = 0; d < local.size(); ++d)
          local[d] = piece.global.start[d] - mine.start[d];
        copyBox({item.data(), unit.itemShape, local, 0, message.data() + at, piece.global.shape,
                 std::vector<int64_t>(local.size(), 0), 0, piece.global.shape,
                 unit.elementBytes});
      }
    }
    if (message.empty())
      continue;
#ifdef BRAID_RUNTIME_MPI
    mpi::sendOnLaunch(message.data(), int64_t(message.size()), to, kTransferTag);
#else
    fatal("--disaggregate needs ranks launched by mpirun");
#endif
    moved += int64_t(message.size());
  }
}

void CacheTransfer::receive(const std::vector<serve::PrefillChunk> &chunks,
                            const std::vector<std::vector<int32_t>> &tables) {
  if (chunks.empty())
    return;
  const int32_t me = s.ranks.launchRank;
  for (int32_t from = 0; from < prefillRanks; ++from) {
    std::vector<Piece> pieces = piecesBetween(from, me, chunks, tables);
    int64_t bytes = 0;
    for (const Piece &piece : pieces)
      bytes += piece.global.numel() * piece.unit->elementBytes * int64_t(piece.items.size());
    if (bytes == 0)
      continue;
    std::vector<char> message(static_cast<size_t>(bytes)), item;
#ifdef BRAID_RUNTIME_MPI
    mpi::receiveOnLaunch(message.data(), bytes, from, kTransferTag);
#else
    fatal("--disaggregate needs ranks launched by mpirun");
#endif
    size_t at = 0;
    for (const Piece &piece : pieces) {
      const Unit &unit = *piece.unit;
      const Box &mine = boxes[size_t(me)][size_t(&unit - units.data())];
      std::vector<int64_t> local(piece.global.start.size());
      for (size_t d = 0; d < local.size(); ++d)
        local[d] = piece.global.start[d] - mine.start[d];
      item.resize(size_t(unit.itemBytes));
      for (int64_t index : piece.items) {
        char *where = s.rt->arena + unit.state->desc->offset + index * unit.itemBytes;
        s.rt->backend->copyToHost(item.data(), where, unit.itemBytes);
        copyBox({message.data() + at, piece.global.shape, std::vector<int64_t>(local.size(), 0),
                 0, item.data(), unit.itemShape, local, 0, piece.global.shape,
                 unit.elementBytes});
        s.rt->backend->copyToDevice(where, item.data(), unit.itemBytes);
        at += size_t(piece.global.numel() * unit.elementBytes);
      }
    }
    moved += bytes;
  }
}

} // namespace braid::rt::driver
