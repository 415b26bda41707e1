//===- rt.cpp - the runtime core: arena checks, scopes, trace, comm --------===//

#include "rt_impl.h"

#include "braid/link_model.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace braid::rt {

namespace {
int32_t fatalRank = -1;
void (*fatalAbort)() = nullptr;
} // namespace

namespace {
std::atomic<int64_t> stepNow{0};
} // namespace

void setCurrentStep(int64_t step) { stepNow = step; }
int64_t currentStep() { return stepNow; }

double collectiveTimeout() {
  static const double seconds = [] {
    const char *text = std::getenv("BRAID_COLLECTIVE_TIMEOUT");
    if (!text || !*text)
      return 600.0;
    char *end = nullptr;
    double value = std::strtod(text, &end);
    if (end == text || *end)
      fatal("BRAID_COLLECTIVE_TIMEOUT='%s' is not a number of seconds", text);
    return value;
  }();
  return seconds;
}

namespace {
/// Appends `value` in decimal to `out` (async-signal-safe).
char *appendNumber(char *out, int64_t value) {
  if (value < 0) {
    *out++ = '-';
    value = -value;
  }
  char digits[24];
  int n = 0;
  do {
    digits[n++] = char('0' + value % 10);
    value /= 10;
  } while (value);
  while (n)
    *out++ = digits[--n];
  return out;
}

void onTerminate(int signal) {
  // Only async-signal-safe calls: the message is assembled by hand.
  char message[256], *at = message;
  auto append = [&](const char *text) {
    while (*text)
      *at++ = *text++;
  };
  append("braid runtime: ");
  if (fatalRank >= 0) {
    append("rank ");
    at = appendNumber(at, fatalRank);
    append(": ");
  }
  append("stopped at step ");
  at = appendNumber(at, stepNow.load());
  append(fatalRank >= 0 ? " by SIGTERM (the launcher ends the run: another rank failed or was "
                          "lost)\n"
                        : " by SIGTERM\n");
  ssize_t ignored = ::write(2, message, size_t(at - message));
  (void)ignored;
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}
} // namespace

void reportTermination() { std::signal(SIGTERM, onTerminate); }

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

std::unique_ptr<Event> Communicator::sendRecv(Backend &backend, const void *sendBuffer,
                                              int64_t sendCount, int32_t dst,
                                              void *recvBuffer, int64_t recvCount,
                                              int32_t src, braid_dtype dtype) {
  // Providers whose sends do not wait for their receive (MPI: the data is
  // copied; comm_mpi.h) need no grouping: the receive first, then the send.
  std::unique_ptr<Event> r =
      src >= 0 ? recv(backend, recvBuffer, recvCount, dtype, src, -1) : nullptr;
  std::unique_ptr<Event> s =
      dst >= 0 ? send(backend, sendBuffer, sendCount, dtype, dst, -1) : nullptr;
  return std::make_unique<PairEvent>(std::move(s), std::move(r));
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

namespace {
/// Values are dumped in the steps whose dumps survive: the last (each step
/// overwrites the previous one's files) and, with --dump-first-step, the first.
/// Every rank decides alike, so gathers stay collective.
bool dumpsThisStep(const braid_rt *rt) {
  return rt->step == 0 || rt->step >= rt->options.lastStep ||
         (rt->options.dumpFirstStep && rt->step == rt->options.firstStep);
}
/// Whether a sharded value is dumped this step (checked or written): the
/// layout is parsed only then.
bool dumpsShardedValue(const braid_rt *rt) {
  return rt && (rt->options.dumping || !rt->options.dumpDir.empty()) && dumpsThisStep(rt);
}

/// The layout of a sharded value's dump `file`; `kernel` names the entry
/// point in the message of a layout that does not fit the grid.
ShardLayout layoutOf(const braid_rt *rt, const char *kernel, const std::string &file,
                     int32_t rank, const int64_t *shape, const int64_t *globalShape,
                     const char *const *splitAxes) {
  numElements(file.c_str(), rank, shape);
  ShardLayout layout;
  std::string error;
  if (!shardLayout(rt->grid, rank, shape, globalShape, splitAxes, &layout, &error))
    fatal("%s %s: %s", kernel, file.c_str(), error.c_str());
  return layout;
}

} // namespace

void braid_rt_value(braid_rt *rt, const char *scope, const char *name, const void *data,
                    braid_dtype dtype, int32_t rank, const int64_t *shape) {
  if (!rt || !dumpsThisStep(rt))
    return;
  // Checking replicas, every rank's copy is gathered (collectively).
  if (rt->options.checkReplicas && rt->options.dumping) {
    braid_rt_value_sharded(rt, scope, name, data, dtype, rank, shape, nullptr, nullptr);
    return;
  }
  if (rt->options.dumpDir.empty())
    return;
  std::string file = valueFile(rt, scope, name);
  numElements(file.c_str(), rank, shape);
  dumpTensor(rt, file, data, dtype, std::vector<int64_t>(shape, shape + rank));
}

void braid_rt_value_sharded(braid_rt *rt, const char *scope, const char *name, const void *data,
                            braid_dtype dtype, int32_t rank, const int64_t *shape,
                            const int64_t *global_shape, const char *const *split_axes) {
  if (!dumpsShardedValue(rt))
    return;
  std::string file = valueFile(rt, scope, name);
  dumpSharded(rt, file, data, dtype,
              layoutOf(rt, "braid_rt_value_sharded", file, rank, shape, global_shape, split_axes));
}

void braid_rt_value_partial(braid_rt *rt, const char *scope, const char *name, const void *data,
                            braid_dtype dtype, int32_t rank, const int64_t *shape,
                            const int64_t *global_shape, const char *const *split_axes,
                            const char *partial_axes) {
  if (!dumpsShardedValue(rt))
    return;
  std::string file = valueFile(rt, scope, name);
  int64_t count = numElements(file.c_str(), rank, shape);
  int64_t bytes = count * braid_dtype_size(dtype);
  Backend &backend = *rt->backend;
  void *sum = bytes > 0 ? backend.allocate(bytes) : nullptr;
  if (bytes > 0) {
    backend.synchronize();
    braid_rt_comm(rt, partial_axes)
        ->impl->allReduce(backend, data, sum, count, dtype, BRAID_RED_SUM)
        ->wait(backend);
    backend.synchronize();
  }
  if (global_shape)
    braid_rt_value_sharded(rt, scope, name, sum, dtype, rank, shape, global_shape, split_axes);
  else
    braid_rt_value(rt, scope, name, sum, dtype, rank, shape);
  if (sum)
    backend.release(sum);
}

void braid_rt_value_zero_sharded(braid_rt *rt, const char *scope, const char *name,
                                 const void *data, braid_dtype dtype, int64_t count,
                                 const char *zero_axes, int32_t rank, const int64_t *shape,
                                 const int64_t *global_shape, const char *const *split_axes) {
  if (!dumpsShardedValue(rt))
    return;
  std::string file = valueFile(rt, scope, name);
  dumpZeroBlock(rt, file, data, dtype, count, zero_axes,
                layoutOf(rt, "braid_rt_value_zero_sharded", file, rank, shape, global_shape,
                         split_axes));
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

/// The C handle of a transfer of `kind` on `comm` (named for the trace when
/// the group has more than one rank).
braid_event *wrap(std::unique_ptr<braid::rt::Event> event, const braid_comm *comm,
                  const char *kind) {
  auto *out = new braid_event;
  out->impl = std::move(event);
  if (comm->impl->size() > 1) {
    out->kind = kind;
    out->comm = comm;
  }
  return out;
}

braid::rt::Communicator &commOf(braid_rt *rt, braid_comm *comm, const char *what) {
  if (!rt)
    fatal("%s: null context", what);
  if (!comm || !comm->impl)
    fatal("%s: null communicator", what);
  return *comm->impl;
}

/// Counts one collective of the step in flight: a rank sends
/// braid::link::ringBlocks blocks of `bytes` for a group of n.
void account(braid_rt *rt, braid_comm *comm, const char *kind, double bytes) {
  int32_t n = comm->impl->size();
  if (n <= 1 || rt->step == 0)
    return;
  auto &[count, sent] = rt->collectives[kind];
  ++count;
  sent += bytes * braid::link::ringBlocks(kind, n);
}

} // namespace

extern "C" {

braid_event *braid_all_reduce(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                              int64_t count, braid_dtype dtype, braid_redop op) {
  braid::rt::Communicator &c = commOf(rt, comm, "braid_all_reduce");
  account(rt, comm, "all_reduce", double(count * braid_dtype_size(dtype)));
  return wrap(c.allReduce(*rt->backend, send, recv, count, dtype, op), comm, "all_reduce");
}

braid_event *braid_all_gather(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                              int64_t count_per_rank, braid_dtype dtype) {
  braid::rt::Communicator &c = commOf(rt, comm, "braid_all_gather");
  account(rt, comm, "all_gather", double(count_per_rank * braid_dtype_size(dtype)));
  return wrap(c.allGather(*rt->backend, send, recv, count_per_rank, dtype), comm, "all_gather");
}

braid_event *braid_reduce_scatter(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                                  int64_t count_per_rank, braid_dtype dtype, braid_redop op) {
  braid::rt::Communicator &c = commOf(rt, comm, "braid_reduce_scatter");
  account(rt, comm, "reduce_scatter", double(count_per_rank * braid_dtype_size(dtype)));
  return wrap(c.reduceScatter(*rt->backend, send, recv, count_per_rank, dtype, op), comm,
              "reduce_scatter");
}

braid_event *braid_all_to_all(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                              int64_t count_per_rank, braid_dtype dtype) {
  braid::rt::Communicator &c = commOf(rt, comm, "braid_all_to_all");
  account(rt, comm, "all_to_all", double(count_per_rank * braid_dtype_size(dtype)));
  return wrap(c.allToAll(*rt->backend, send, recv, count_per_rank, dtype), comm, "all_to_all");
}

braid_event *braid_broadcast(braid_rt *rt, braid_comm *comm, void *buffer, int64_t count,
                             braid_dtype dtype, int32_t root) {
  braid::rt::Communicator &c = commOf(rt, comm, "braid_broadcast");
  // A chain (NCCL's ring broadcast): every rank but the last forwards the
  // buffer, (n - 1) / n of it per rank on average.
  account(rt, comm, "broadcast", double(count * braid_dtype_size(dtype)));
  return wrap(c.broadcast(*rt->backend, buffer, count, dtype, root), comm, "broadcast");
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
  braid::rt::Communicator &c = commOf(rt, comm, "braid_send");
  // A block to one peer: the plan printer's `send` (dist.send).
  account(rt, comm, "send", double(count * braid_dtype_size(dtype)));
  return wrap(c.send(*rt->backend, buffer, count, dtype, peer, tag), comm, "send");
}

braid_event *braid_recv_tagged(braid_rt *rt, braid_comm *comm, void *buffer, int64_t count,
                               braid_dtype dtype, int32_t peer, int32_t tag) {
  return wrap(commOf(rt, comm, "braid_recv").recv(*rt->backend, buffer, count, dtype, peer, tag),
              comm, "recv");
}

braid_event *braid_sendrecv(braid_rt *rt, braid_comm *comm, const void *send,
                            int64_t send_count, int32_t dst, void *recv, int64_t recv_count,
                            int32_t src, braid_dtype dtype) {
  braid::rt::Communicator &c = commOf(rt, comm, "braid_sendrecv");
  // One block to one peer: the plan printer's `shift` (dist.shift).
  if (dst >= 0)
    account(rt, comm, "shift", double(send_count * braid_dtype_size(dtype)));
  return wrap(c.sendRecv(*rt->backend, send, send_count, dst, recv, recv_count, src, dtype),
              comm, "shift");
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
  // Traced: the wait on the compute lane, the transfer on its group's lane.
  bool traced = rt->options.trace && event->kind && event->impl;
  if (traced)
    rt->trace.begin(*rt->backend, "wait",
                    (std::string(event->kind) + " over " + event->comm->axes).c_str(),
                    currentScope(rt), rt->step, "wait");
  if (event->impl)
    event->impl->wait(*rt->backend);
  if (traced) {
    rt->trace.end(*rt->backend);
    double begin = 0, end = 0, linkEnd = 0;
    if (event->impl->interval(&begin, &end, &linkEnd))
      rt->trace.addTransfer(
          {event->kind, event->comm->axes, rt->step, begin * 1e6, end * 1e6, linkEnd * 1e6, nullptr});
    else if (std::shared_ptr<DeviceSpan> span = event->impl->deviceSpan())
      rt->trace.addTransfer({event->kind, event->comm->axes, rt->step, 0, 0, 0, std::move(span)});
  }
  delete event;
}

} // extern "C"
