//===- rt.cpp - the runtime core: arena checks, scopes, dumps, trace, comm -===//

#include "rt_impl.h"

#include "npy.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace braid::rt {

namespace {
int32_t fatalRank = -1;
void (*fatalAbort)() = nullptr;
} // namespace

void setFatalRank(int32_t rank) { fatalRank = rank; }
void setFatalAbort(void (*abortFn)()) { fatalAbort = abortFn; }

void fatal(const char *format, ...) {
  std::fflush(stdout);
  // One write, so that the lines of several ranks do not interleave.
  char message[4096];
  int at = std::snprintf(message, sizeof message, "braid runtime: ");
  if (fatalRank >= 0)
    at += std::snprintf(message + at, sizeof message - size_t(at), "rank %d: ", int(fatalRank));
  va_list args;
  va_start(args, format);
  std::vsnprintf(message + at, sizeof message - size_t(at), format, args);
  va_end(args);
  std::fprintf(stderr, "%s\n", message);
  std::fflush(stderr);
  if (void (*abortFn)() = fatalAbort) {
    fatalAbort = nullptr; // once: a failure inside it ends in std::abort
    abortFn();
  }
  std::abort();
}

Backend *backendOf(struct ::braid_rt *rt) { return rt ? rt->backend.get() : nullptr; }

std::unique_ptr<braid_rt> createRuntime(std::unique_ptr<Backend> backend, int64_t arenaBytes,
                                        Options options, std::unique_ptr<CommProvider> comms) {
  if (!backend)
    fatal("no backend");
  if (arenaBytes < 0)
    fatal("negative arena size %lld", (long long)arenaBytes);
  auto rt = std::make_unique<braid_rt>();
  rt->backend = std::move(backend);
  rt->comms = comms ? std::move(comms) : makeSelfCommProvider();
  rt->options = std::move(options);
  rt->arenaBytes = arenaBytes;
  // Allocate at least one byte so the arena pointer is never null.
  rt->arena = static_cast<char *>(rt->backend->allocate(arenaBytes > 0 ? arenaBytes : 1));
  return rt;
}

void destroyRuntime(std::unique_ptr<braid_rt> rt) {
  if (!rt)
    return;
  rt->backend->synchronize();
  rt->comms->drain(); // sends still in flight use the communicators
  rt->commByAxes.clear();
  rt->backend->release(rt->arena);
  rt->arena = nullptr;
}

std::string currentScope(const braid_rt *rt) {
  std::string path;
  for (const std::string &s : rt->scopes) {
    if (s.empty())
      continue;
    if (!path.empty())
      path += '.';
    path += s;
  }
  return path;
}

int64_t numElements(const char *what, int32_t rank, const int64_t *shape) {
  if (rank < 0 || (rank > 0 && !shape))
    fatal("%s: bad shape (rank %d)", what, int(rank));
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      fatal("%s: negative dimension %lld", what, (long long)shape[i]);
    if (shape[i] && n > INT64_MAX / shape[i])
      fatal("%s: too many elements", what);
    n *= shape[i];
  }
  return n;
}

namespace {

/// Writes host data as DIR/<file><suffix>.npy ('/' in `file` becomes '.').
void writeDump(braid_rt *rt, const std::string &file, const void *host, braid_dtype dtype,
               const std::vector<int64_t> &shape) {
  std::string name = file;
  for (char &c : name)
    if (c == '/')
      c = '.';
  std::string error;
  std::string path = rt->options.dumpDir + "/" + name + rt->options.dumpSuffix + ".npy";
  if (!npy::writeTensor(path, dtype, shape, host, &error))
    fatal("dump: %s", error.c_str());
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

bool shardLayout(const Grid &grid, int32_t rank, const int64_t *shape,
                 const int64_t *globalShape, const char *const *splitAxes, ShardLayout *out,
                 std::string *error) {
  ShardLayout layout;
  layout.local.assign(shape, shape + rank);
  layout.global = globalShape ? std::vector<int64_t>(globalShape, globalShape + rank)
                              : layout.local;
  layout.axes.resize(size_t(rank));
  layout.parts.assign(size_t(rank), 1);
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

void dumpSharded(braid_rt *rt, const std::string &file, const void *data, braid_dtype dtype,
                 const ShardLayout &layout) {
  if (!rt->options.dumping && rt->options.dumpDir.empty())
    return;
  // A stage holds its own tensors: none lies across the stages.
  const bool staged = rt->stageAxis >= 0;
  if (staged)
    for (const std::vector<int> &axes : layout.axes)
      for (int a : axes)
        if (a == rt->stageAxis)
          fatal("dump of %s: split over the pipeline's stage axis '%s'", file.c_str(),
                rt->grid.names[size_t(a)].c_str());
  // Whole on every rank, or each rank's own shard: as an unsharded value.
  // (A stage group without axes never gets past here: nothing splits it.)
  if (!layout.split() || rt->options.dumpLocal) {
    dumpTensor(rt, file, data, dtype, layout.local);
    return;
  }
  int64_t size = braid_dtype_size(dtype);
  if (size <= 0)
    fatal("dump of %s: unknown dtype %d", file.c_str(), int(dtype));
  const int32_t rank = int32_t(layout.local.size());
  int64_t localNumel = numElements(file.c_str(), rank, layout.local.data());
  int64_t globalNumel = numElements(file.c_str(), rank, layout.global.data());
  if (localNumel && !data)
    fatal("dump of %s: null data", file.c_str());
  // The ranks holding the tensor: the world, or the ranks of this pipeline
  // stage (every axis but the stage axis; this rank's coordinate on it).
  std::vector<int> groupAxes;
  int64_t members = 1;
  for (size_t a = 0; a < rt->grid.names.size(); ++a)
    if (int(a) != rt->stageAxis) {
      groupAxes.push_back(int(a));
      members *= rt->grid.sizes[a];
    }
  const std::string group = staged ? stageGroup(rt) : std::string("world");
  // Every member's shard, in group-rank order, on the host. The gather runs
  // on the backend's communicator (device memory on GPU ranks), then one copy.
  Backend &backend = *rt->backend;
  Communicator &comm = *braid_rt_comm(rt, group.c_str())->impl;
  const int32_t ranks = comm.size();
  if (ranks != members)
    fatal("dump of %s: the group '%s' has %d ranks but grid %s has %lld", file.c_str(),
          group.c_str(), int(ranks), rt->grid.str().c_str(), (long long)members);
  const int64_t localBytes = localNumel * size;
  std::vector<char> shards(size_t(localBytes * ranks));
  backend.synchronize();
  if (localBytes > 0) {
    void *gathered = backend.allocate(localBytes * ranks);
    comm.allGather(backend, data, gathered, localNumel, dtype)->wait(backend);
    backend.synchronize();
    backend.copyToHost(shards.data(), gathered, localBytes * ranks);
    backend.release(gathered);
  }
  if (rt->options.dumpDir.empty())
    return; // a rank that only took part in the gather

  // Place each block by its rank's grid coordinates, row by row (the last
  // dimension is contiguous in both), dropping padding. Of the ranks holding
  // the same block (replicas along axes of the group that do not split the
  // tensor) the one at coordinate 0 on those axes is taken.
  std::vector<char> global(size_t(globalNumel * size), 0);
  std::vector<bool> splits(rt->grid.names.size(), false);
  for (const std::vector<int> &axes : layout.axes)
    for (int a : axes)
      splits[size_t(a)] = true;
  const int64_t lastLocal = layout.local[size_t(rank - 1)];
  const int64_t lastGlobal = layout.global[size_t(rank - 1)];
  const int64_t rows = lastLocal ? localNumel / lastLocal : 0;
  for (int32_t r = 0; r < ranks; ++r) {
    // Group rank r is row-major over the group's axes (comm.h, GroupSplit).
    std::vector<int32_t> coords = rt->coords;
    bool replica = false;
    for (int32_t i = int32_t(groupAxes.size()) - 1, rest = r; i >= 0; --i) {
      size_t a = size_t(groupAxes[size_t(i)]);
      coords[a] = rest % rt->grid.sizes[a];
      rest /= rt->grid.sizes[a];
      replica |= !splits[a] && coords[a] != 0;
    }
    if (replica)
      continue;
    std::vector<int64_t> base(static_cast<size_t>(rank));
    for (int32_t d = 0; d < rank; ++d)
      base[size_t(d)] = layout.block(size_t(d), coords) * layout.local[size_t(d)];
    int64_t valid =
        std::max<int64_t>(0, std::min(lastLocal, lastGlobal - base[size_t(rank - 1)]));
    if (valid == 0)
      continue;
    const char *block = shards.data() + r * localBytes;
    // The row's local index (the last dimension's entry stays 0).
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    for (int64_t row = 0; row < rows; ++row) {
      int64_t at = 0;
      bool inside = true;
      for (int32_t d = 0; d + 1 < rank; ++d) {
        int64_t g = base[size_t(d)] + index[size_t(d)];
        inside &= g < layout.global[size_t(d)];
        at = at * layout.global[size_t(d)] + g;
      }
      if (inside)
        std::memcpy(global.data() + (at * lastGlobal + base[size_t(rank - 1)]) * size,
                    block + row * lastLocal * size, size_t(valid * size));
      for (int32_t d = rank - 2; d >= 0; --d) { // next row, row-major
        if (++index[size_t(d)] < layout.local[size_t(d)])
          break;
        index[size_t(d)] = 0;
      }
    }
  }
  writeDump(rt, file, global.data(), dtype, layout.global);
}

} // namespace braid::rt

using namespace braid::rt;

namespace {

/// The dump name of a value: SCOPE.NAME. An explicit scope wins; a null one
/// means the scope stack.
std::string valueFile(const braid_rt *rt, const char *scope, const char *name) {
  std::string path = scope ? std::string(scope) : currentScope(rt);
  return path.empty() ? std::string(name ? name : "?") : path + "." + (name ? name : "?");
}

} // namespace

/// The stream generated elementwise kernels are launched on (codegen.h):
/// the backend's compute stream, null on the CPU or without a context.
extern "C" void *braid_rt_compute_stream(braid_rt *rt) {
  braid::rt::Backend *backend = braid::rt::backendOf(rt);
  return backend ? backend->computeStream() : nullptr;
}

extern "C" {

int64_t braid_dtype_size(braid_dtype dtype) {
  switch (dtype) {
  case BRAID_F32:
  case BRAID_I32:
    return 4;
  case BRAID_BF16:
  case BRAID_F16:
    return 2;
  case BRAID_I64:
    return 8;
  }
  return 0;
}

void braid_rt_alloc(braid_rt *rt, int64_t offset, int64_t bytes, const char *name) {
  if (!rt)
    fatal("braid_rt_alloc: null context");
  if (!name)
    name = "?";
  if (bytes == 0)
    return;
  if (bytes < 0 || offset < 0 || offset > rt->arenaBytes - bytes)
    fatal("buffer %s [%lld, %lld) is outside the arena [0, %lld)", name, (long long)offset,
          (long long)(offset + bytes), (long long)rt->arenaBytes);
  int64_t end = offset + bytes;
  auto next = rt->live.upper_bound(offset); // first live buffer beginning after offset
  auto check = [&](std::map<int64_t, braid_rt::Live>::iterator it) {
    if (it != rt->live.end() && it->first < end && offset < it->second.end)
      fatal("buffer %s [%lld, %lld) overlaps live buffer %s [%lld, %lld)", name,
            (long long)offset, (long long)end, it->second.name.c_str(), (long long)it->first,
            (long long)it->second.end);
  };
  check(next);
  if (next != rt->live.begin())
    check(std::prev(next));
  rt->live.emplace(offset, braid_rt::Live{end, name});
  if (end > rt->peakBytes)
    rt->peakBytes = end;
}

void braid_rt_free(braid_rt *rt, int64_t offset, int64_t bytes) {
  if (!rt)
    fatal("braid_rt_free: null context");
  if (bytes == 0)
    return;
  auto it = rt->live.find(offset);
  if (it == rt->live.end())
    fatal("braid_rt_free: no live buffer at [%lld, %lld)", (long long)offset,
          (long long)(offset + bytes));
  if (it->second.end != offset + bytes)
    fatal("braid_rt_free: buffer %s is [%lld, %lld), freed as [%lld, %lld)",
          it->second.name.c_str(), (long long)it->first, (long long)it->second.end,
          (long long)offset, (long long)(offset + bytes));
  rt->live.erase(it);
}

void braid_rt_op_begin(braid_rt *rt, const char *op, const char *label) {
  if (rt && rt->comms)
    rt->comms->progress();
  if (!rt || !rt->options.trace)
    return;
  rt->trace.begin(*rt->backend, op, label, currentScope(rt), rt->step);
}

void braid_rt_op_end(braid_rt *rt) {
  if (rt && rt->comms)
    rt->comms->progress();
  if (!rt || !rt->options.trace)
    return;
  if (!rt->trace.end(*rt->backend))
    fatal("braid_rt_op_end without braid_rt_op_begin");
}

void braid_rt_op_flops(braid_rt *rt, double flops) {
  if (!rt || !rt->options.trace)
    return;
  if (!rt->trace.setFlops(flops))
    fatal("braid_rt_op_flops without braid_rt_op_begin");
}

void braid_rt_value(braid_rt *rt, const char *scope, const char *name, const void *data,
                    braid_dtype dtype, int32_t rank, const int64_t *shape) {
  if (!rt || rt->options.dumpDir.empty())
    return;
  std::string file = valueFile(rt, scope, name);
  numElements(file.c_str(), rank, shape);
  dumpTensor(rt, file, data, dtype, std::vector<int64_t>(shape, shape + rank));
}

void braid_rt_value_sharded(braid_rt *rt, const char *scope, const char *name, const void *data,
                            braid_dtype dtype, int32_t rank, const int64_t *shape,
                            const int64_t *global_shape, const char *const *split_axes) {
  // Cheap unless dumping: the layout is only parsed for a dump.
  if (!rt || (!rt->options.dumping && rt->options.dumpDir.empty()))
    return;
  std::string file = valueFile(rt, scope, name);
  numElements(file.c_str(), rank, shape);
  ShardLayout layout;
  std::string error;
  if (!shardLayout(rt->grid, rank, shape, global_shape, split_axes, &layout, &error))
    fatal("braid_rt_value_sharded %s: %s", file.c_str(), error.c_str());
  dumpSharded(rt, file, data, dtype, layout);
}

void braid_rt_push_scope(braid_rt *rt, const char *scope) {
  if (rt)
    rt->scopes.emplace_back(scope ? scope : "");
}

void braid_rt_pop_scope(braid_rt *rt) {
  if (!rt)
    return;
  if (rt->scopes.empty())
    fatal("braid_rt_pop_scope without braid_rt_push_scope");
  rt->scopes.pop_back();
}

braid_comm *braid_rt_comm(braid_rt *rt, const char *axes) {
  if (!rt)
    fatal("braid_rt_comm: null context");
  std::string key = axes && *axes ? axes : "world";
  auto &slot = rt->commByAxes[key];
  if (!slot) {
    slot = std::make_unique<braid_comm>();
    slot->axes = key;
    slot->impl = rt->comms->create(key);
    if (!slot->impl)
      fatal("braid_rt_comm: no communicator for axes '%s'", key.c_str());
  }
  return slot.get();
}

int32_t braid_comm_size(const braid_comm *comm) {
  if (!comm)
    fatal("braid_comm_size: null communicator");
  return comm->impl->size();
}

int32_t braid_comm_rank(const braid_comm *comm) {
  if (!comm)
    fatal("braid_comm_rank: null communicator");
  return comm->impl->rank();
}

} // extern "C"

namespace {

braid_event *wrap(std::unique_ptr<braid::rt::Event> event) {
  auto *out = new braid_event;
  out->impl = std::move(event);
  return out;
}

braid::rt::Communicator &commOf(braid_rt *rt, braid_comm *comm, const char *what) {
  if (!rt)
    fatal("%s: null context", what);
  if (!comm || !comm->impl)
    fatal("%s: null communicator", what);
  return *comm->impl;
}

/// Counts one collective of the step in flight; `blocks` is how many
/// `bytes`-sized blocks a rank sends for a group of n (ring model).
void account(braid_rt *rt, braid_comm *comm, const char *kind, double bytes,
             double blocks) {
  int32_t n = comm->impl->size();
  if (n <= 1 || rt->step == 0)
    return;
  auto &[count, sent] = rt->collectives[kind];
  ++count;
  sent += bytes * blocks;
}

} // namespace

extern "C" {

braid_event *braid_all_reduce(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                              int64_t count, braid_dtype dtype, braid_redop op) {
  braid::rt::Communicator &c = commOf(rt, comm, "braid_all_reduce");
  double n = c.size();
  account(rt, comm, "all_reduce", double(count * braid_dtype_size(dtype)), 2 * (n - 1) / n);
  return wrap(c.allReduce(*rt->backend, send, recv, count, dtype, op));
}

braid_event *braid_all_gather(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                              int64_t count_per_rank, braid_dtype dtype) {
  braid::rt::Communicator &c = commOf(rt, comm, "braid_all_gather");
  account(rt, comm, "all_gather", double(count_per_rank * braid_dtype_size(dtype)), c.size() - 1);
  return wrap(c.allGather(*rt->backend, send, recv, count_per_rank, dtype));
}

braid_event *braid_reduce_scatter(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                                  int64_t count_per_rank, braid_dtype dtype, braid_redop op) {
  braid::rt::Communicator &c = commOf(rt, comm, "braid_reduce_scatter");
  account(rt, comm, "reduce_scatter", double(count_per_rank * braid_dtype_size(dtype)), c.size() - 1);
  return wrap(c.reduceScatter(*rt->backend, send, recv, count_per_rank, dtype, op));
}

braid_event *braid_all_to_all(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                              int64_t count_per_rank, braid_dtype dtype) {
  braid::rt::Communicator &c = commOf(rt, comm, "braid_all_to_all");
  account(rt, comm, "all_to_all", double(count_per_rank * braid_dtype_size(dtype)), c.size() - 1);
  return wrap(c.allToAll(*rt->backend, send, recv, count_per_rank, dtype));
}

braid_event *braid_broadcast(braid_rt *rt, braid_comm *comm, void *buffer, int64_t count,
                             braid_dtype dtype, int32_t root) {
  return wrap(
      commOf(rt, comm, "braid_broadcast").broadcast(*rt->backend, buffer, count, dtype, root));
}

braid_event *braid_send(braid_rt *rt, braid_comm *comm, const void *buffer, int64_t count,
                        braid_dtype dtype, int32_t peer) {
  return braid_send_tagged(rt, comm, buffer, count, dtype, peer, -1);
}

braid_event *braid_recv(braid_rt *rt, braid_comm *comm, void *buffer, int64_t count,
                        braid_dtype dtype, int32_t peer) {
  return braid_recv_tagged(rt, comm, buffer, count, dtype, peer, -1);
}

braid_event *braid_send_tagged(braid_rt *rt, braid_comm *comm, const void *buffer,
                               int64_t count, braid_dtype dtype, int32_t peer, int32_t tag) {
  return wrap(
      commOf(rt, comm, "braid_send").send(*rt->backend, buffer, count, dtype, peer, tag));
}

braid_event *braid_recv_tagged(braid_rt *rt, braid_comm *comm, void *buffer, int64_t count,
                               braid_dtype dtype, int32_t peer, int32_t tag) {
  return wrap(
      commOf(rt, comm, "braid_recv").recv(*rt->backend, buffer, count, dtype, peer, tag));
}

void braid_rt_copy(braid_rt *rt, void *dst, const void *src, int64_t bytes) {
  if (!rt)
    fatal("braid_rt_copy: null context");
  rt->backend->copy(dst, src, bytes);
}

void braid_event_wait(braid_rt *rt, braid_event *event) {
  if (!rt)
    fatal("braid_event_wait: null context");
  if (!event)
    return;
  if (event->impl)
    event->impl->wait(*rt->backend);
  delete event;
}

} // extern "C"
