//===- persistent.cpp - the tensors a program owns: layout and init -------===//

#include "persistent.h"

#include "comm.h"
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

const std::vector<int64_t> &globalShape(const Persistent &p) {
  return (p.zeroAxes.empty() ? p.layout : p.zeroBlock).global;
}

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

namespace {

// Writes local elements [start, end) of `p`'s buffer into `host` (the
// element `start` first): local element i holds global element g (g_d = the
// global index of stored index block_d * local_d + i_d,
// ShardLayout::natural; rng.h's value at g's linear index over the global
// shape), zero where g is padding. The local elements that share their
// indices up to the innermost split dimension k (a "block": the slice
// [i_0, ..., i_(k-1), :, ..., :]) start with a run of global indices that is
// contiguous (dimensions after k are whole), followed by padding; in zigzag
// order along k the run breaks where the chunks do. A tensor whole on every
// rank is one block.
class LocalFiller {
public:
  LocalFiller(const braid_rt *rt, const Persistent &p, uint64_t seed)
      : d(*p.desc), l(p.layout), split(p.layout.split()), seed(seed),
        size(braid_dtype_size(d.dtype)) {
    std::string error;
    if (!rng::fill(nullptr, d.dtype, d.init, d.std, d.bound, seed, d.name, 0, 0, &error))
      fatal("init of %s", error.c_str());
    if (!split)
      return;
    const int rank = int(l.local.size());
    k = rank - 1;
    while (k > 0 && l.parts[size_t(k)] == 1)
      --k;
    for (int j = k + 1; j < rank; ++j)
      inner *= l.local[size_t(j)];
    base.resize(size_t(rank));
    for (int j = 0; j < rank; ++j)
      base[size_t(j)] = l.block(size_t(j), rt->coords) * l.local[size_t(j)];
    blockLen = l.local[size_t(k)] * inner;
    validLen =
        std::max<int64_t>(0, std::min(l.local[size_t(k)], l.global[size_t(k)] - base[size_t(k)])) *
        inner;
  }

  void fill(char *host, int64_t start, int64_t end) const {
    if (!split) {
      rng::fill(host, d.dtype, d.init, d.std, d.bound, seed, d.name, uint64_t(start),
                uint64_t(end - start), nullptr);
      return;
    }
    std::memset(host, 0, size_t((end - start) * size));
    // Blocks [first, last] overlap the range; each fills its valid run.
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
          rng::fill(host + (lo - start) * size, d.dtype, d.init, d.std, d.bound, seed, d.name,
                    uint64_t(global), uint64_t(piece), nullptr);
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
      return;
    }
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

private:
  // The linear index over the global dimensions before k of block b; -1 for
  // a padding block.
  int64_t blockOuter(int64_t b) const {
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
  }

  const braid_tensor_desc &d;
  const ShardLayout &l;
  const bool split;
  const uint64_t seed;
  const int64_t size;
  int k = 0;
  int64_t inner = 1, blockLen = 0, validLen = 0;
  std::vector<int64_t> base;
};

/// Below this many elements a replicated tensor is generated whole by every
/// replica (an all-gather's latency would cost more than the draws).
constexpr int64_t kMinSplitInit = int64_t(1) << 16;

/// The communicator of the ranks that hold the same local buffer of `p` as
/// this one (its replicas: the grid axes that neither split it nor hold its
/// ZeRO ranges nor are the pipeline's stage axis), when generating the
/// buffer is worth splitting among them (random draws, large enough); null
/// otherwise. Creating a communicator is collective over the world: every
/// rank of a program initializes the same tensors in one order, so it is
/// created here, but the stages of a pipeline are different programs, so a
/// pipelined program only uses a group it lists (created before
/// initialization).
Communicator *replicaComm(braid_rt *rt, const Persistent &p) {
  const braid_init init = p.desc->init;
  if (!p.zeroAxes.empty() || p.numel < kMinSplitInit ||
      (init != BRAID_INIT_NORMAL && init != BRAID_INIT_MAMBA_DT && init != BRAID_INIT_TOKENS))
    return nullptr;
  std::vector<int> replicas;
  std::vector<bool> holds(rt->grid.names.size(), false);
  for (const std::vector<int> &axes : p.layout.axes)
    for (int a : axes)
      holds[size_t(a)] = true;
  if (rt->stageAxis >= 0)
    holds[size_t(rt->stageAxis)] = true;
  for (size_t a = 0; a < holds.size(); ++a)
    if (!holds[a] && rt->grid.sizes[a] > 1)
      replicas.push_back(int(a));
  if (replicas.empty())
    return nullptr;
  if (rt->stageAxis < 0) {
    std::string key;
    for (int a : replicas)
      key += (key.empty() ? "" : ",") + rt->grid.names[size_t(a)];
    Communicator *comm = braid_rt_comm(rt, key.c_str())->impl.get();
    return comm->size() > 1 ? comm : nullptr;
  }
  for (auto &[key, comm] : rt->commByAxes) {
    std::vector<int> axes;
    std::string error;
    if (!groupAxes(rt->grid, key, &axes, &error))
      continue;
    axes.erase(std::remove_if(axes.begin(), axes.end(),
                              [&](int a) { return rt->grid.sizes[size_t(a)] == 1; }),
               axes.end());
    if (axes == replicas && comm->impl->size() > 1)
      return comm->impl.get();
  }
  return nullptr;
}

} // namespace

// Generates the tensor on the host in chunks and copies them to the arena.
// Replicas split the work: in each chunk of R pieces, the rank at position r
// of the replica group generates piece r and an all-gather assembles the
// chunk on every replica (the values depend only on the global index, so
// they are those the rank would have generated itself).
void initialize(braid_rt *rt, const Persistent &p, uint64_t seed) {
  if (p.numel == 0)
    return;
  const braid_tensor_desc &d = *p.desc;
  const int64_t size = braid_dtype_size(d.dtype);
  const LocalFiller filler(rt, p, seed);
  Backend &backend = *rt->backend;
  char *dst = rt->arena + d.offset;
  Communicator *comm = replicaComm(rt, p);
  if (!comm) {
    std::vector<char> host(size_t(std::min(p.numel, kInitChunk) * size));
    for (int64_t start = 0; start < p.numel; start += kInitChunk) {
      const int64_t end = std::min(p.numel, start + kInitChunk);
      filler.fill(host.data(), start, end);
      backend.copyToDevice(dst + start * size, host.data(), (end - start) * size);
    }
    return;
  }
  const int64_t replicas = comm->size(), me = comm->rank();
  const int64_t piece = std::min(kInitChunk, (p.numel + replicas - 1) / replicas);
  std::vector<char> host(size_t(piece * size));
  // The all-gather runs on the backend's communicator: device buffers.
  char *send = static_cast<char *>(backend.allocate(piece * size));
  char *gathered = static_cast<char *>(backend.allocate(replicas * piece * size));
  for (int64_t start = 0; start < p.numel; start += replicas * piece) {
    const int64_t lo = std::min(p.numel, start + me * piece);
    const int64_t hi = std::min(p.numel, lo + piece);
    std::memset(host.data(), 0, size_t(piece * size));
    if (lo < hi)
      filler.fill(host.data(), lo, hi);
    backend.copyToDevice(send, host.data(), piece * size);
    comm->allGather(backend, send, gathered, piece, d.dtype)->wait(backend);
    backend.copy(dst + start * size, gathered,
                 (std::min(p.numel, start + replicas * piece) - start) * size);
  }
  backend.synchronize();
  backend.release(send);
  backend.release(gathered);
}

} // namespace braid::rt
