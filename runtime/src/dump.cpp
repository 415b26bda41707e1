//===- dump.cpp - tensor dumps: local, and assembled from shards -----------===//
//
// A dump is DIR/<name>.npy. A sharded tensor is gathered from the ranks that
// hold its blocks (over the world, or over a pipeline stage's group) and the
// writer (rank 0, or the stage's leader) places each block by its rank's
// coordinates, dropping padding and replicas.
//
//===----------------------------------------------------------------------===//

#include "rt_impl.h"

#include "npy.h"
#include "rng.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace braid::rt {

namespace {

/// Writes host data as DIR/<prefix><file><suffix>.npy ('/' in `file` becomes
/// '.'), and in the run's first step K with --dump-first-step also as
/// DIR/<prefix>step<K>.<file><suffix>.npy.
void writeDump(braid_rt *rt, const std::string &file, const void *host, braid_dtype dtype,
               const std::vector<int64_t> &shape, const std::string &prefix = "") {
  std::string name = file;
  for (char &c : name)
    if (c == '/')
      c = '.';
  std::string error;
  std::string path =
      rt->options.dumpDir + "/" + prefix + name + rt->options.dumpSuffix + ".npy";
  if (!npy::writeTensor(path, dtype, shape, host, &error))
    fatal("dump: %s", error.c_str());
  if (rt->options.dumpFirstStep && rt->step == rt->options.firstStep) {
    path = rt->options.dumpDir + "/" + prefix + "step" + std::to_string(rt->options.firstStep) +
           "." + name + rt->options.dumpSuffix + ".npy";
    if (!npy::writeTensor(path, dtype, shape, host, &error))
      fatal("dump: %s", error.c_str());
  }
}

/// "dp, tp" -> {"dp", "tp"} (spaces around names ignored).
std::vector<std::string> axisNames(const char *spec) {
  std::vector<std::string> names;
  std::string text = spec;
  size_t begin = 0;
  while (true) {
    size_t comma = text.find(',', begin);
    std::string part = text.substr(begin, comma == std::string::npos ? std::string::npos
                                                                     : comma - begin);
    size_t a = part.find_first_not_of(' '), b = part.find_last_not_of(' ');
    names.push_back(a == std::string::npos ? std::string() : part.substr(a, b - a + 1));
    if (comma == std::string::npos)
      return names;
    begin = comma + 1;
  }
}

/// Element i of host data as a double (bf16 and f16 widened exactly).
double elementAt(const char *data, braid_dtype dtype, int64_t i) {
  switch (dtype) {
  case BRAID_F32: {
    float v;
    std::memcpy(&v, data + i * 4, 4);
    return v;
  }
  case BRAID_BF16:
  case BRAID_F16: {
    uint16_t bits;
    std::memcpy(&bits, data + i * 2, 2);
    return dtype == BRAID_BF16 ? rng::bf16ToF32(bits) : rng::f16ToF32(bits);
  }
  case BRAID_I32: {
    int32_t v;
    std::memcpy(&v, data + i * 4, 4);
    return v;
  }
  case BRAID_I64: {
    int64_t v;
    std::memcpy(&v, data + i * 8, 8);
    return double(v);
  }
  }
  return 0;
}

/// max |a[i] - b[i]| over n elements; NaN when any difference is.
double maxDifference(const char *a, const char *b, braid_dtype dtype, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = std::fabs(elementAt(a, dtype, i) - elementAt(b, dtype, i));
    if (std::isnan(d))
      return NAN;
    worst = std::max(worst, d);
  }
  return worst;
}

/// The linear rank (row-major over the grid) of grid coordinates.
int32_t rankOf(const Grid &grid, const std::vector<int32_t> &coords) {
  int64_t rank = 0;
  for (size_t a = 0; a < grid.sizes.size(); ++a)
    rank = rank * grid.sizes[a] + coords[a];
  return int32_t(rank);
}

/// Writes DIR/owners.<file>.npy (as writeDump, step 1 included): the global
/// rank whose copy the dump kept, per element.
void writeOwners(braid_rt *rt, const std::string &file, const std::vector<int32_t> &owners,
                 const std::vector<int64_t> &shape) {
  writeDump(rt, file, owners.data(), BRAID_I32, shape, "owners.");
}

/// Writes DIR/replicas.<file>.npy (as writeDump, step 1 included): rows
/// (rank, max |copy - kept copy|).
void writeReplicas(braid_rt *rt, const std::string &file,
                   const std::vector<std::pair<int32_t, double>> &copies) {
  std::vector<float> rows;
  for (auto [rank, d] : copies) {
    rows.push_back(float(rank));
    rows.push_back(float(d));
  }
  writeDump(rt, file, rows.data(), BRAID_F32, {int64_t(copies.size()), 2}, "replicas.");
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

} // namespace

void dumpTensor(braid_rt *rt, const std::string &file, const void *data, braid_dtype dtype,
                const std::vector<int64_t> &shape) {
  if (rt->options.dumpDir.empty())
    return;
  int64_t elementSize = braid_dtype_size(dtype);
  if (elementSize <= 0)
    fatal("dump of %s: unknown dtype %d", file.c_str(), int(dtype));
  int64_t numel = numElements(file.c_str(), int32_t(shape.size()), shape.data());
  std::vector<char> host(static_cast<size_t>(numel * elementSize));
  if (numel) {
    if (!data)
      fatal("dump of %s: null data", file.c_str());
    rt->backend->synchronize();
    rt->backend->copyToHost(host.data(), data, numel * elementSize);
  }
  writeDump(rt, file, host.data(), dtype, shape);
}

bool ShardLayout::split() const {
  for (int64_t p : parts)
    if (p > 1)
      return true;
  return false;
}

int64_t ShardLayout::block(size_t d, const std::vector<int32_t> &coords) const {
  int64_t c = 0;
  for (int a : axes[d])
    c = c * gridSizes[size_t(a)] + coords[size_t(a)];
  return c;
}

int64_t ShardLayout::natural(size_t d, int64_t p) const {
  const int64_t n = zigzag[d];
  if (n == 0 || p >= global[d])
    return p;
  // Stored pair j of chunks (2c indices) is chunk j then chunk 2n-1-j.
  const int64_t c = global[d] / (2 * n), j = p / (2 * c), w = p % (2 * c);
  return w < c ? j * c + w : (2 * n - 1 - j) * c + (w - c);
}

int64_t ShardLayout::contiguous(size_t d, int64_t p) const {
  const int64_t n = zigzag[d];
  if (n == 0)
    return INT64_MAX;
  const int64_t c = global[d] / (2 * n);
  return c - p % c;
}

bool shardLayout(const Grid &grid, int32_t rank, const int64_t *shape,
                 const int64_t *globalShape, const char *const *splitAxes, ShardLayout *out,
                 std::string *error) {
  ShardLayout layout;
  layout.local.assign(shape, shape + rank);
  layout.global = globalShape ? std::vector<int64_t>(globalShape, globalShape + rank)
                              : layout.local;
  layout.axes.resize(size_t(rank));
  layout.parts.assign(size_t(rank), 1);
  layout.zigzag.assign(size_t(rank), 0);
  layout.gridSizes = grid.sizes;
  std::vector<int> usedBy(grid.names.size(), -1);
  for (int32_t d = 0; d < rank; ++d) {
    const char *spec = splitAxes ? splitAxes[d] : nullptr;
    if (spec && *spec) {
      if (!globalShape) {
        *error = "dimension " + std::to_string(d) + " is split over '" + spec +
                 "' but there is no global shape";
        return false;
      }
      for (const std::string &name : axisNames(spec)) {
        size_t a = 0;
        while (a < grid.names.size() && grid.names[a] != name)
          ++a;
        if (a == grid.names.size()) {
          *error = "dimension " + std::to_string(d) + " is split over axis '" + name +
                   "', which grid " + grid.str() + " does not have";
          return false;
        }
        if (usedBy[a] >= 0) {
          *error = "axis '" + name + "' splits " +
                   (usedBy[a] == d ? "dimension " + std::to_string(d) + " twice"
                                   : "dimensions " + std::to_string(usedBy[a]) + " and " +
                                         std::to_string(d));
          return false;
        }
        if (int(a) == grid.zigzagAxis && !layout.axes[size_t(d)].empty()) {
          *error = "dimension " + std::to_string(d) + " is split over '" + spec +
                   "' (zigzag axis '" + name +
                   "'): the zigzag axis must be the first (major) axis splitting a dimension";
          return false;
        }
        usedBy[a] = d;
        layout.axes[size_t(d)].push_back(int(a));
        layout.parts[size_t(d)] *= grid.sizes[a];
      }
    }
    int64_t global = layout.global[size_t(d)], parts = layout.parts[size_t(d)];
    if (global < 0) {
      *error = "negative global dimension " + std::to_string(global);
      return false;
    }
    // Over one rank the zigzag order is the natural one.
    const std::vector<int> &axes = layout.axes[size_t(d)];
    if (!axes.empty() && axes[0] == grid.zigzagAxis && grid.sizes[size_t(axes[0])] > 1) {
      const int64_t n = grid.sizes[size_t(axes[0])];
      if (global % (2 * n) != 0) {
        *error = "dimension " + std::to_string(d) + " of size " + std::to_string(global) +
                 " is split in zigzag order over axis '" + grid.names[size_t(axes[0])] +
                 "' of " + std::to_string(n) + " ranks: its size must be a multiple of 2 x " +
                 std::to_string(n) + " = " + std::to_string(2 * n);
        return false;
      }
      layout.zigzag[size_t(d)] = n;
    }
    int64_t want = (global + parts - 1) / parts;
    if (layout.local[size_t(d)] != want) {
      *error = "local shape " + shapeString(layout.local) + " does not match global shape " +
               shapeString(layout.global) + ": dimension " + std::to_string(d) +
               (parts > 1 ? " over " + std::to_string(parts) + " ranks" : std::string()) +
               " must be " + std::to_string(want);
      return false;
    }
  }
  *out = std::move(layout);
  return true;
}

std::string stageGroup(const braid_rt *rt) {
  std::string group;
  for (size_t a = 0; a < rt->grid.names.size(); ++a)
    if (int(a) != rt->stageAxis)
      group += (group.empty() ? "" : ",") + rt->grid.names[a];
  return group;
}

namespace {

/// The ranks a sharded tensor is gathered from: the world, or the ranks of
/// this pipeline stage (every axis but the stage axis; this rank's
/// coordinate on it).
struct DumpGroup {
  std::string name;      ///< the axis group: "world", or stageGroup(rt)
  std::vector<int> axes; ///< its grid axes, in grid order
  int64_t members = 1;
};

DumpGroup dumpGroup(const braid_rt *rt, const std::string &file, const ShardLayout &layout) {
  // A stage holds its own tensors: none lies across the stages.
  const bool staged = rt->stageAxis >= 0;
  if (staged)
    for (const std::vector<int> &axes : layout.axes)
      for (int a : axes)
        if (a == rt->stageAxis)
          fatal("dump of %s: split over the pipeline's stage axis '%s'", file.c_str(),
                rt->grid.names[size_t(a)].c_str());
  DumpGroup group;
  group.name = staged ? stageGroup(rt) : std::string("world");
  for (size_t a = 0; a < rt->grid.names.size(); ++a)
    if (int(a) != rt->stageAxis) {
      group.axes.push_back(int(a));
      group.members *= rt->grid.sizes[a];
    }
  return group;
}

/// Dumps this rank's buffer as an unsharded value: a tensor whole on every
/// rank, or (--dump-all-ranks) this rank's own shard.
void dumpOwnBuffer(braid_rt *rt, const std::string &file, const void *data, braid_dtype dtype,
                   const ShardLayout &layout) {
  dumpTensor(rt, file, data, dtype, layout.local);
  // A stage of one rank writes its own tensors: all of it is this rank's.
  if (rt->options.checkReplicas && !rt->options.dumpLocal && !rt->options.dumpDir.empty())
    writeOwners(rt, file,
                std::vector<int32_t>(size_t(numElements(file.c_str(),
                                                        int32_t(layout.local.size()),
                                                        layout.local.data())),
                                     rankOf(rt->grid, rt->coords)),
                layout.local);
}

/// Every member's shard of `localNumel` elements, in group-rank order, on
/// the host (collective over the group). The gather runs on the backend's
/// communicator (device memory on GPU ranks), then one copy.
std::vector<char> gatherShards(braid_rt *rt, const std::string &file, const void *data,
                               braid_dtype dtype, const DumpGroup &group, int64_t localNumel) {
  Backend &backend = *rt->backend;
  Communicator &comm = *braid_rt_comm(rt, group.name.c_str())->impl;
  const int32_t ranks = comm.size();
  if (ranks != group.members)
    fatal("dump of %s: the group '%s' has %d ranks but grid %s has %lld", file.c_str(),
          group.name.c_str(), int(ranks), rt->grid.str().c_str(), (long long)group.members);
  const int64_t localBytes = localNumel * braid_dtype_size(dtype);
  std::vector<char> shards(size_t(localBytes * ranks));
  backend.synchronize();
  if (localBytes > 0) {
    void *gathered = backend.allocate(localBytes * ranks);
    comm.allGather(backend, data, gathered, localNumel, dtype)->wait(backend);
    backend.synchronize();
    backend.copyToHost(shards.data(), gathered, localBytes * ranks);
    backend.release(gathered);
  }
  return shards;
}

/// The global tensor assembled from the gathered blocks, and with
/// --check-replicas each replica's distance from the copy kept and the rank
/// each element was taken from (so --verify names the rank of a difference).
class Assembly {
public:
  Assembly(const braid_rt *rt, const ShardLayout &layout, braid_dtype dtype, int64_t localNumel,
           int64_t globalNumel, bool checkCopies)
      : rt(rt), layout(layout), dtype(dtype), size(braid_dtype_size(dtype)),
        rank(int32_t(layout.local.size())), localNumel(localNumel), checkCopies(checkCopies) {
    global.assign(size_t(globalNumel * size), 0);
    owners.assign(checkCopies ? size_t(globalNumel) : 0, -1);
    splits.assign(rt->grid.names.size(), false);
    for (const std::vector<int> &axes : layout.axes)
      for (int a : axes)
        splits[size_t(a)] = true;
  }

  /// Places each member's block by its rank's grid coordinates. Of the
  /// ranks holding the same block (replicas along axes of the group that do
  /// not split the tensor) the one at coordinate 0 on those axes is taken.
  void placeAll(const std::vector<char> &shards, const DumpGroup &group) {
    const int64_t localBytes = localNumel * size;
    for (int32_t r = 0; r < int32_t(group.members); ++r) {
      // Group rank r is row-major over the group's axes (comm.h, GroupSplit).
      std::vector<int32_t> coords = rt->coords;
      bool replica = false;
      int32_t kept = 0; // the group rank of the copy kept: 0 on non-splitting axes
      for (int32_t i = int32_t(group.axes.size()) - 1, rest = r, stride = 1; i >= 0; --i) {
        size_t a = size_t(group.axes[size_t(i)]);
        coords[a] = rest % rt->grid.sizes[a];
        rest /= rt->grid.sizes[a];
        replica |= !splits[a] && coords[a] != 0;
        if (splits[a])
          kept += coords[a] * stride;
        stride *= rt->grid.sizes[a];
      }
      const char *block = shards.data() + r * localBytes;
      if (!replica)
        place(block, coords);
      else if (checkCopies)
        copies.emplace_back(rankOf(rt->grid, coords),
                            maxDifference(block, shards.data() + kept * localBytes, dtype,
                                          localNumel));
    }
  }

  std::vector<char> global;
  std::vector<int32_t> owners;
  std::vector<std::pair<int32_t, double>> copies;

private:
  /// Copies the block of the rank at `coords` where it lies in the global
  /// tensor, row by row (the last dimension is contiguous in both, but for
  /// the chunks of zigzag order), dropping padding.
  void place(const char *block, const std::vector<int32_t> &coords) {
    const int32_t owner = rankOf(rt->grid, coords);
    if (rank == 0) { // a scalar (whole everywhere, gathered only to check its copies)
      std::memcpy(global.data(), block, size_t(localNumel * size));
      if (checkCopies)
        owners[0] = owner;
      return;
    }
    const size_t last = size_t(rank - 1);
    const int64_t lastLocal = layout.local[last], lastGlobal = layout.global[last];
    const int64_t rows = lastLocal ? localNumel / lastLocal : 0;
    std::vector<int64_t> base(static_cast<size_t>(rank));
    for (int32_t d = 0; d < rank; ++d)
      base[size_t(d)] = layout.block(size_t(d), coords) * layout.local[size_t(d)];
    int64_t valid = std::max<int64_t>(0, std::min(lastLocal, lastGlobal - base[last]));
    if (valid == 0)
      return;
    // The row's local index (the last dimension's entry stays 0).
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    for (int64_t row = 0; row < rows; ++row) {
      int64_t at = 0;
      bool inside = true;
      for (int32_t d = 0; d + 1 < rank; ++d) {
        int64_t g = layout.natural(size_t(d), base[size_t(d)] + index[size_t(d)]);
        inside &= g < layout.global[size_t(d)];
        at = at * layout.global[size_t(d)] + g;
      }
      // The row's valid part in runs of consecutive global indices (one run
      // in natural order).
      const char *from = block + row * lastLocal * size;
      for (int64_t i = 0; inside && i < valid;) {
        int64_t p = base[last] + i;
        int64_t run = std::min(valid - i, layout.contiguous(last, p));
        const int64_t to = at * lastGlobal + layout.natural(last, p);
        std::memcpy(global.data() + to * size, from + i * size, size_t(run * size));
        if (checkCopies)
          std::fill_n(owners.begin() + to, run, owner);
        i += run;
      }
      for (int32_t d = rank - 2; d >= 0; --d) { // next row, row-major
        if (++index[size_t(d)] < layout.local[size_t(d)])
          break;
        index[size_t(d)] = 0;
      }
    }
  }

  const braid_rt *rt;
  const ShardLayout &layout;
  braid_dtype dtype;
  int64_t size;
  int32_t rank;
  int64_t localNumel;
  bool checkCopies;
  std::vector<bool> splits; ///< per grid axis: it splits the tensor
};

} // namespace

void dumpSharded(braid_rt *rt, const std::string &file, const void *data, braid_dtype dtype,
                 const ShardLayout &layout) {
  if (!rt->options.dumping && rt->options.dumpDir.empty())
    return;
  const DumpGroup group = dumpGroup(rt, file, layout);
  // Whole on every rank, or each rank's own shard: as an unsharded value,
  // unless every rank's copy is to be checked. (A stage group without axes
  // never gets past here: nothing splits it and it has one member.)
  const bool checkCopies = rt->options.checkReplicas && group.members > 1;
  if ((!layout.split() && !checkCopies) || rt->options.dumpLocal) {
    dumpOwnBuffer(rt, file, data, dtype, layout);
    return;
  }
  if (braid_dtype_size(dtype) <= 0)
    fatal("dump of %s: unknown dtype %d", file.c_str(), int(dtype));
  const int32_t rank = int32_t(layout.local.size());
  const int64_t localNumel = numElements(file.c_str(), rank, layout.local.data());
  const int64_t globalNumel = numElements(file.c_str(), rank, layout.global.data());
  if (localNumel && !data)
    fatal("dump of %s: null data", file.c_str());
  const std::vector<char> shards = gatherShards(rt, file, data, dtype, group, localNumel);
  if (rt->options.dumpDir.empty())
    return; // a rank that only took part in the gather

  Assembly assembly(rt, layout, dtype, localNumel, globalNumel, checkCopies);
  assembly.placeAll(shards, group);
  writeDump(rt, file, assembly.global.data(), dtype, layout.global);
  if (checkCopies) {
    writeReplicas(rt, file, assembly.copies);
    writeOwners(rt, file, assembly.owners, layout.global);
  }
}

std::vector<char> gatherGlobal(braid_rt *rt, const std::string &name, const void *data,
                               braid_dtype dtype, const ShardLayout &layout) {
  const int32_t rank = int32_t(layout.local.size());
  const int64_t localNumel = numElements(name.c_str(), rank, layout.local.data());
  const int64_t size = braid_dtype_size(dtype);
  if (!layout.split()) {
    std::vector<char> whole(size_t(localNumel * size));
    rt->backend->synchronize();
    rt->backend->copyToHost(whole.data(), data, localNumel * size);
    return whole;
  }
  const DumpGroup group = dumpGroup(rt, name, layout);
  const std::vector<char> shards = gatherShards(rt, name, data, dtype, group, localNumel);
  Assembly assembly(rt, layout, dtype, localNumel,
                    numElements(name.c_str(), rank, layout.global.data()),
                    /*checkCopies=*/false);
  assembly.placeAll(shards, group);
  return std::move(assembly.global);
}

void dumpZeroBlock(braid_rt *rt, const std::string &file, const void *data, braid_dtype dtype,
                   int64_t count, const char *zeroAxes, const ShardLayout &block) {
  if (!rt->options.dumping && rt->options.dumpDir.empty())
    return;
  Backend &backend = *rt->backend;
  Communicator &comm = *braid_rt_comm(rt, zeroAxes)->impl;
  int64_t numel = 1;
  for (int64_t n : block.local)
    numel *= n;
  if (count * comm.size() != numel)
    fatal("dump of %s: %lld elements on each of the %d ranks of '%s' are not its block's %lld",
          file.c_str(), (long long)count, int(comm.size()), zeroAxes, (long long)numel);
  // The block from its ranges, then the block as any sharded value.
  void *whole = backend.allocate(numel * braid_dtype_size(dtype));
  backend.synchronize();
  comm.allGather(backend, data, whole, count, dtype)->wait(backend);
  backend.synchronize();
  dumpSharded(rt, file, whole, dtype, block);
  backend.release(whole);
}

void checkLossCopies(braid_rt *rt, int64_t lossOffset) {
  Backend &backend = *rt->backend;
  Communicator &comm = *braid_rt_comm(rt, "world")->impl;
  const int32_t ranks = comm.size();
  if (ranks < 2)
    return;
  std::vector<float> all(static_cast<size_t>(ranks));
  void *gathered = backend.allocate(4 * int64_t(ranks));
  comm.allGather(backend, rt->arena + lossOffset, gathered, 1, BRAID_F32)->wait(backend);
  backend.synchronize();
  backend.copyToHost(all.data(), gathered, 4 * int64_t(ranks));
  backend.release(gathered);
  if (rt->lossCopies.empty())
    rt->lossCopies.assign(size_t(ranks), 0.0);
  // Relative to rank 0's loss, the largest over the steps.
  for (int32_t r = 1; r < ranks; ++r) {
    double d = std::fabs(double(all[size_t(r)]) - double(all[0]));
    d = all[0] != 0 ? d / std::fabs(double(all[0])) : d;
    double &worst = rt->lossCopies[size_t(r)];
    if (std::isnan(d) || (!std::isnan(worst) && d > worst))
      worst = d;
  }
}

void writeLossCopies(braid_rt *rt) {
  if (rt->options.dumpDir.empty() || rt->lossCopies.size() < 2)
    return;
  std::vector<std::pair<int32_t, double>> copies;
  for (size_t r = 1; r < rt->lossCopies.size(); ++r)
    copies.emplace_back(int32_t(r), rt->lossCopies[r]);
  writeReplicas(rt, "loss", copies);
}

} // namespace braid::rt
