//===- persistent.cpp - the tensors a program owns: layout and init -------===//

#include "persistent.h"

#include "rng.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace braid::rt {

bool describe(const braid_tensor_desc &desc, const char *kind, const Grid &grid,
              Persistent *out, std::string *error) {
  if (!desc.name || !*desc.name)
    fatal("a %s has no name", kind);
  int64_t size = braid_dtype_size(desc.dtype);
  if (size <= 0)
    fatal("%s %s: unknown dtype %d", kind, desc.name, int(desc.dtype));
  int64_t numel = numElements(desc.name, desc.rank, desc.shape);
  if (numel > INT64_MAX / size)
    fatal("%s %s: too large", kind, desc.name);
  Persistent p{&desc, numel, numel * size, {}, std::strcmp(kind, "parameter") == 0, {}};
  p.shape.assign(desc.shape, desc.shape + desc.rank);
  if (!shardLayout(grid, desc.rank, desc.shape, desc.global_shape, desc.split_axes, &p.layout,
                   error)) {
    *error = std::string(kind) + " " + desc.name + ": " + *error;
    return false;
  }
  if (desc.zero_axes && *desc.zero_axes) {
    p.zeroAxes = desc.zero_axes;
    if (!shardLayout(grid, desc.block_rank, desc.block_shape, desc.block_global_shape,
                     desc.block_split_axes, &p.zeroBlock, error)) {
      *error = std::string(kind) + " " + desc.name + " (its ZeRO block): " + *error;
      return false;
    }
  }
  *out = std::move(p);
  return true;
}

namespace {

/// The grid axes (indices) of a ZeRO group; none when `p` has no ZeRO range.
std::vector<int> zeroAxesOf(const braid_rt *rt, const Persistent &p) {
  std::vector<int> axes;
  std::string error;
  if (!p.zeroAxes.empty() && !groupAxes(rt->grid, p.zeroAxes, &axes, &error))
    fatal("%s: ZeRO group: %s", p.desc->name, error.c_str());
  return axes;
}

} // namespace

LocalSlice localSlice(const braid_rt *rt, const Persistent &p) {
  LocalSlice slice;
  slice.block = p.zeroAxes.empty() ? &p.layout : &p.zeroBlock;
  // A ZeRO range: the ranks of the group (row-major over its axes in grid
  // order, the communicator's order) hold consecutive ranges of the block.
  int64_t range = 0;
  for (int a : zeroAxesOf(rt, p))
    range = range * rt->grid.sizes[size_t(a)] + rt->coords[size_t(a)];
  slice.base = range * p.numel;
  for (const Box &box : flatRangeBoxes(slice.block->local, slice.base, slice.base + p.numel))
    for (Placed &placed : placeBox(*slice.block, rt->coords, box))
      slice.boxes.push_back(std::move(placed));
  return slice;
}

bool keepsSlice(const braid_rt *rt, const Persistent &p) {
  std::vector<bool> holds(rt->grid.names.size(), false);
  const ShardLayout &block = p.zeroAxes.empty() ? p.layout : p.zeroBlock;
  for (const std::vector<int> &axes : block.axes)
    for (int a : axes)
      holds[size_t(a)] = true;
  for (int a : zeroAxesOf(rt, p))
    holds[size_t(a)] = true;
  if (rt->stageAxis >= 0)
    holds[size_t(rt->stageAxis)] = true;
  for (size_t a = 0; a < holds.size(); ++a)
    if (!holds[a] && rt->coords[a] != 0)
      return false;
  return true;
}

void dumpPersistent(braid_rt *rt, const std::string &file, const void *data,
                    const Persistent &p) {
  if (p.zeroAxes.empty())
    dumpSharded(rt, file, data, p.desc->dtype, p.layout);
  else
    dumpZeroBlock(rt, file, data, p.desc->dtype, p.numel, p.zeroAxes.c_str(), p.zeroBlock);
}

static constexpr int64_t kInitChunk = int64_t(1) << 22; ///< elements generated per host copy

// Fills this rank's shard of a sharded tensor: local element i holds global
// element g (g_d = the global index of stored index block_d * local_d + i_d,
// ShardLayout::natural; rng.h's value at g's linear index over the global
// shape), zero where g is padding. The local elements that share their
// indices up to the innermost split dimension k (a "block": the slice
// [i_0, ..., i_(k-1), :, ..., :]) start with a run of global indices that is
// contiguous (dimensions after k are whole), followed by padding; in zigzag
// order along k the run breaks where the chunks do.
static void initializeShard(braid_rt *rt, const Persistent &p, uint64_t seed) {
  const braid_tensor_desc &d = *p.desc;
  const ShardLayout &l = p.layout;
  const int64_t size = braid_dtype_size(d.dtype);
  const int rank = int(l.local.size());
  int k = rank - 1;
  while (k > 0 && l.parts[size_t(k)] == 1)
    --k;
  int64_t inner = 1;
  for (int j = k + 1; j < rank; ++j)
    inner *= l.local[size_t(j)];
  std::vector<int64_t> base(static_cast<size_t>(rank));
  for (int j = 0; j < rank; ++j)
    base[size_t(j)] = l.block(size_t(j), rt->coords) * l.local[size_t(j)];
  const int64_t blockLen = l.local[size_t(k)] * inner;
  const int64_t validLen =
      std::max<int64_t>(0, std::min(l.local[size_t(k)], l.global[size_t(k)] - base[size_t(k)])) *
      inner;
  if (p.numel == 0)
    return;
  std::string error;
  if (!rng::fill(nullptr, d.dtype, d.init, d.std, d.bound, seed, d.name, 0, 0, &error))
    fatal("init of %s", error.c_str());
  // The linear index over the global dimensions before k of block b; -1 for
  // a padding block.
  auto blockOuter = [&](int64_t b) -> int64_t {
    int64_t at = 0, stride = 1;
    for (int j = k - 1; j >= 0; --j) {
      int64_t g = l.natural(size_t(j), base[size_t(j)] + b % l.local[size_t(j)]);
      b /= l.local[size_t(j)];
      if (g >= l.global[size_t(j)])
        return -1;
      at += g * stride;
      stride *= l.global[size_t(j)];
    }
    return at;
  };
  std::vector<char> host(size_t(std::min(p.numel, kInitChunk) * size));
  for (int64_t start = 0; start < p.numel; start += kInitChunk) {
    const int64_t end = std::min(p.numel, start + kInitChunk);
    std::memset(host.data(), 0, size_t((end - start) * size));
    // Blocks [first, last] overlap the chunk; each fills its valid run.
    const int64_t first = start / blockLen, last = (end - 1) / blockLen;
    auto fillBlocks = [&](int64_t from, int64_t to) {
      for (int64_t b = from; b < to; ++b) {
        int64_t outer = blockOuter(b);
        int64_t lo = std::max(start, b * blockLen);
        int64_t hi = std::min(end, b * blockLen + validLen);
        if (outer < 0)
          continue;
        // [lo, hi) in pieces of consecutive global indices: one piece in
        // natural order, a zigzag chunk's (or less) otherwise.
        while (lo < hi) {
          int64_t e = lo - b * blockLen, i = e / inner, stored = base[size_t(k)] + i;
          int64_t run = l.contiguous(size_t(k), stored);
          int64_t piece =
              run >= l.local[size_t(k)] - i ? hi - lo : std::min(hi - lo, (i + run) * inner - e);
          int64_t global =
              (outer * l.global[size_t(k)] + l.natural(size_t(k), stored)) * inner + e % inner;
          rng::fill(host.data() + (lo - start) * size, d.dtype, d.init, d.std, d.bound, seed,
                    d.name, uint64_t(global), uint64_t(piece), nullptr);
          lo += piece;
        }
      }
    };
    // Long runs: rng::fill splits each over the cores; short ones: the blocks
    // are split over the cores instead.
    unsigned threads = 1;
    if (validLen < (int64_t(1) << 16) && end - start >= (int64_t(1) << 17))
      threads = std::max(1u, std::min(std::thread::hardware_concurrency(),
                                       unsigned(std::min<int64_t>(64, last - first + 1))));
    if (threads == 1) {
      fillBlocks(first, last + 1);
    } else {
      std::vector<std::thread> pool;
      int64_t per = (last - first + threads) / threads;
      for (unsigned t = 0; t < threads; ++t) {
        int64_t a = first + per * t, b = std::min(last + 1, a + per);
        if (a < b)
          pool.emplace_back(fillBlocks, a, b);
      }
      for (std::thread &thread : pool)
        thread.join();
    }
    rt->backend->copyToDevice(rt->arena + d.offset + start * size, host.data(),
                              (end - start) * size);
  }
}

// Generates the tensor on the host in chunks and copies it to the arena.
void initialize(braid_rt *rt, const Persistent &p, uint64_t seed) {
  if (p.layout.split())
    return initializeShard(rt, p, seed);
  const braid_tensor_desc &d = *p.desc;
  int64_t size = braid_dtype_size(d.dtype);
  constexpr int64_t chunk = kInitChunk;
  std::vector<char> host(size_t(std::min(p.numel, chunk) * size));
  for (int64_t start = 0; start < p.numel; start += chunk) {
    int64_t count = std::min(chunk, p.numel - start);
    std::string error;
    if (!rng::fill(host.data(), d.dtype, d.init, d.std, d.bound, seed, d.name, uint64_t(start),
                   uint64_t(count), &error))
      fatal("init of %s", error.c_str());
    rt->backend->copyToDevice(rt->arena + d.offset + start * size, host.data(), count * size);
  }
}

} // namespace braid::rt
