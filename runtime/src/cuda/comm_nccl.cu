//===- comm_nccl.cu - communicators of GPU ranks over NCCL ----------------===//
//
// See comm_nccl.h. Every NCCL call's result is checked; a failure aborts every
// NCCL communicator of the process, then fails with
// "braid runtime: rank R: <collective> on '<axes>': NCCL error: <ncclGetErrorString>
//  (<ncclGetLastError>)".
//
// Compiled only where nccl.h exists (the build adds it to braid_comm_nccl when
// NCCL is found; test/Cuda/compile.py compiles every .cu here).
//
//===----------------------------------------------------------------------===//

#if __has_include(<nccl.h>)

#include "cuda/comm_nccl.h"

#include "cuda/check.h"
#include "rt_impl.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace braid::rt::nccl {

namespace {

//===--- Every communicator of the process (for abortAll) -----------------===//

std::mutex &liveMutex() {
  static std::mutex m;
  return m;
}
std::set<ncclComm_t> &liveComms() {
  static std::set<ncclComm_t> comms;
  return comms;
}
bool aborted = false;

[[noreturn]] void failNccl(ncclResult_t code, const char *what, const std::string &axes,
                           ncclComm_t comm) {
  const char *last = ncclGetLastError(comm);
  std::string detail = last && *last ? std::string(" (") + last + ")" : std::string();
  abortAll();
  fatal("%s on '%s': NCCL error: %s%s", what, axes.c_str(), ncclGetErrorString(code),
        detail.c_str());
}

void check(ncclResult_t code, const char *what, const std::string &axes, ncclComm_t comm) {
  if (code != ncclSuccess)
    failNccl(code, what, axes, comm);
}

void checkCuda(cudaError_t code, const char *what, const std::string &axes, const char *call) {
  if (code != cudaSuccess) {
    abortAll();
    fatal("%s on '%s': %s failed: %s (%s)", what, axes.c_str(), call, cudaGetErrorString(code),
          cudaGetErrorName(code));
  }
}
#define BRAID_NCCL_CUDA(expr, what, axes) checkCuda((expr), (what), (axes), #expr)

void abortOnFatal() {
  abortAll();
  std::abort();
}

ncclDataType_t dataType(braid_dtype dtype) {
  switch (dtype) {
  case BRAID_F32:
    return ncclFloat32;
  case BRAID_BF16:
    return ncclBfloat16;
  case BRAID_F16:
    return ncclFloat16;
  case BRAID_I32:
    return ncclInt32;
  case BRAID_I64:
    return ncclInt64;
  }
  return ncclNumTypes;
}

//===--- Events ----------------------------------------------------------===//

/// cudaEvents (timing disabled) reused across collectives; `timed` when the
/// run is traced (Bootstrap::timed: each transfer is also bracketed by
/// timed events, a DeviceSpan).
class EventPool {
public:
  explicit EventPool(bool timed = false) : timed(timed) {}
  const bool timed;
  ~EventPool() {
    for (cudaEvent_t e : free_)
      cudaEventDestroy(e);
  }
  cudaEvent_t acquire() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    BRAID_NCCL_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event pool", "-");
    return e;
  }
  void release(cudaEvent_t e) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(e);
  }

private:
  std::mutex mutex_;
  std::vector<cudaEvent_t> free_;
};

/// An NCCL communicator, destroyed when the last Communicator using it goes.
struct Handle {
  ncclComm_t comm = nullptr;
  std::string axes;
  /// A lone ncclSend or ncclRecv blocks its communicator, whose operations
  /// run one after another whatever their streams, until the peer's matching
  /// call runs. Two pipeline neighbours that each send before they receive
  /// (1F1B), or whose interleaved chunks cross, would then each wait for the
  /// other, where MPI's non-blocking sends (comm_mpi.h) do not. So every
  /// transfer between ring neighbours of a group (group ranks r and r+1 mod
  /// n) goes on a communicator of its own direction, with a stream of its own
  /// (edge communicators, made with the group's: NcclProvider::makeEdges):
  /// each carries the sends of one rank to one peer, matched in issue order
  /// by that peer's receives, and blocks nothing else.
  struct Edge {
    std::shared_ptr<Handle> handle;
    int peer; ///< the peer's rank in the edge's two-rank communicator
  };
  std::map<int32_t, Edge> sendTo, recvFrom; ///< by the peer's group rank
  void track() {
    std::lock_guard<std::mutex> lock(liveMutex());
    liveComms().insert(comm);
  }
  ~Handle() {
    if (!comm)
      return;
    bool wasAborted;
    {
      std::lock_guard<std::mutex> lock(liveMutex());
      liveComms().erase(comm);
      wasAborted = aborted;
    }
    if (wasAborted)
      return; // ncclCommAbort already freed it
    // Flushes the operations in flight, then frees the resources.
    ncclResult_t code = ncclCommFinalize(comm);
    if (code == ncclSuccess)
      code = ncclCommDestroy(comm);
    else
      code = ncclCommAbort(comm);
    if (code != ncclSuccess)
      std::fprintf(stderr, "braid runtime: releasing the NCCL communicator of '%s': %s\n",
                   axes.c_str(), ncclGetErrorString(code));
  }
};

/// A traced transfer's timed events on its stream: from when the stream
/// could start it to when NCCL had finished it (the trace's communication
/// lane). Destroyed with the trace's record of it.
class NcclSpan final : public DeviceSpan {
public:
  NcclSpan(cudaEvent_t begin, cudaEvent_t end) : begin_(begin), end_(end) {}
  ~NcclSpan() override {
    cudaEventDestroy(begin_);
    cudaEventDestroy(end_);
  }
  void *beginEvent() const override { return begin_; }
  void *endEvent() const override { return end_; }

private:
  cudaEvent_t begin_, end_;
};

/// One collective in flight: the completion event recorded on the comm stream.
class NcclEvent final : public Event {
public:
  NcclEvent(cudaEvent_t done, std::shared_ptr<EventPool> pool, std::shared_ptr<Handle> handle,
            const char *what, std::shared_ptr<DeviceSpan> span = nullptr)
      : done_(done), pool_(std::move(pool)), handle_(std::move(handle)), what_(what),
        span_(std::move(span)) {}
  ~NcclEvent() override {
    if (done_)
      pool_->release(done_);
  }
  void wait(Backend &backend) override {
    if (!done_)
      return;
    ncclResult_t state = ncclSuccess;
    check(ncclCommGetAsyncError(handle_->comm, &state), what_, handle_->axes, handle_->comm);
    if (state != ncclSuccess && state != ncclInProgress)
      failNccl(state, what_, handle_->axes, handle_->comm);
    auto compute = static_cast<cudaStream_t>(backend.computeStream());
    if (!compute)
      fatal("braid_event_wait: an NCCL event needs the cuda backend, not %s", backend.name());
    BRAID_NCCL_CUDA(cudaStreamWaitEvent(compute, done_, 0), what_, handle_->axes);
    pool_->release(done_);
    done_ = nullptr;
  }
  std::shared_ptr<DeviceSpan> deviceSpan() const override { return span_; }

private:
  cudaEvent_t done_;
  std::shared_ptr<EventPool> pool_;
  std::shared_ptr<Handle> handle_;
  const char *what_;
  std::shared_ptr<DeviceSpan> span_;
};

//===--- Communicators ---------------------------------------------------===//

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(std::shared_ptr<Handle> handle, std::string axes,
                   std::shared_ptr<EventPool> pool)
      : handle_(std::move(handle)), axes_(std::move(axes)), pool_(std::move(pool)) {
    int n = 0, r = 0;
    check(ncclCommCount(handle_->comm, &n), "braid_rt_comm", axes_, handle_->comm);
    check(ncclCommUserRank(handle_->comm, &r), "braid_rt_comm", axes_, handle_->comm);
    size_ = n;
    rank_ = r;
  }
  const char *kind() const override { return "nccl"; }
  int32_t size() const override { return size_; }
  int32_t rank() const override { return rank_; }

  std::unique_ptr<Event> allReduce(Backend &backend, const void *send, void *recv, int64_t count,
                                   braid_dtype dtype, braid_redop op) override {
    const char *what = "braid_all_reduce";
    Issue in = begin(backend, what, send, recv, count, dtype);
    ncclRedOp_t rop = redOp(what, op);
    int64_t bytes = count * braid_dtype_size(dtype);
    if (count > 0) {
      if (send != recv && overlaps(send, bytes, recv, bytes))
        send = stage(in, send, bytes);
      check(ncclAllReduce(send, recv, size_t(count), dataType(dtype), rop, comm(), in.stream),
            what, axes_, comm());
    }
    return finish(in);
  }

  std::unique_ptr<Event> allGather(Backend &backend, const void *send, void *recv,
                                   int64_t countPerRank, braid_dtype dtype) override {
    const char *what = "braid_all_gather";
    Issue in = begin(backend, what, send, recv, countPerRank, dtype);
    int64_t bytes = countPerRank * braid_dtype_size(dtype);
    char *out = static_cast<char *>(recv);
    if (countPerRank > 0) {
      // In place when this rank's block already sits in recv (NCCL's rule).
      if (send != out + rank_ * bytes && overlaps(send, bytes, recv, bytes * size_))
        send = stage(in, send, bytes);
      check(ncclAllGather(send, recv, size_t(countPerRank), dataType(dtype), comm(), in.stream),
            what, axes_, comm());
    }
    return finish(in);
  }

  std::unique_ptr<Event> reduceScatter(Backend &backend, const void *send, void *recv,
                                       int64_t countPerRank, braid_dtype dtype,
                                       braid_redop op) override {
    const char *what = "braid_reduce_scatter";
    Issue in = begin(backend, what, send, recv, countPerRank, dtype);
    ncclRedOp_t rop = redOp(what, op);
    int64_t bytes = countPerRank * braid_dtype_size(dtype);
    if (countPerRank > 0) {
      const char *input = static_cast<const char *>(send);
      if (send == recv && rank_ != 0) {
        // Braid's in place (like MPI_IN_PLACE): the input is recv's full
        // extent, the result its first block. NCCL's in place puts the result
        // at this rank's block; move it to the first block afterwards.
        char *block = static_cast<char *>(recv) + rank_ * bytes;
        check(ncclReduceScatter(input, block, size_t(countPerRank), dataType(dtype), rop, comm(),
                                in.stream),
              what, axes_, comm());
        BRAID_NCCL_CUDA(cudaMemcpyAsync(recv, block, size_t(bytes), cudaMemcpyDeviceToDevice,
                                        in.stream),
                        what, axes_);
        return finish(in);
      }
      if (send != recv && static_cast<const void *>(input + rank_ * bytes) != recv &&
          overlaps(send, bytes * size_, recv, bytes))
        input = static_cast<const char *>(stage(in, send, bytes * size_));
      check(ncclReduceScatter(input, recv, size_t(countPerRank), dataType(dtype), rop, comm(),
                              in.stream),
            what, axes_, comm());
    }
    return finish(in);
  }

  std::unique_ptr<Event> allToAll(Backend &backend, const void *send, void *recv,
                                  int64_t countPerRank, braid_dtype dtype) override {
    const char *what = "braid_all_to_all";
    Issue in = begin(backend, what, send, recv, countPerRank, dtype);
    int64_t bytes = countPerRank * braid_dtype_size(dtype);
    if (countPerRank > 0) {
      if (overlaps(send, bytes * size_, recv, bytes * size_))
        send = stage(in, send, bytes * size_);
      const char *from = static_cast<const char *>(send);
      char *to = static_cast<char *>(recv);
      check(ncclGroupStart(), what, axes_, comm());
      for (int32_t peer = 0; peer < size_; ++peer) {
        check(ncclSend(from + peer * bytes, size_t(countPerRank), dataType(dtype), peer, comm(),
                       in.stream),
              what, axes_, comm());
        check(ncclRecv(to + peer * bytes, size_t(countPerRank), dataType(dtype), peer, comm(),
                       in.stream),
              what, axes_, comm());
      }
      check(ncclGroupEnd(), what, axes_, comm());
    }
    return finish(in);
  }

  std::unique_ptr<Event> broadcast(Backend &backend, void *buffer, int64_t count,
                                   braid_dtype dtype, int32_t root) override {
    const char *what = "braid_broadcast";
    Issue in = begin(backend, what, buffer, buffer, count, dtype);
    checkPeer(what, "root", root, true);
    if (count > 0)
      check(ncclBroadcast(buffer, buffer, size_t(count), dataType(dtype), root, comm(),
                          in.stream),
            what, axes_, comm());
    return finish(in);
  }

  // NCCL has no tags: transfers between two ranks match in issue order.
  // Between ring neighbours they go on the edge communicators
  // (Handle::Edge); with other ranks of the group, on the group's
  // communicator, where a lone send holds every later operation of the group
  // until its peer receives (the programs Braid emits send to neighbours
  // only: pipeline stages, the CP ring).
  std::unique_ptr<Event> send(Backend &backend, const void *buffer, int64_t count,
                              braid_dtype dtype, int32_t peer, int32_t /*tag*/) override {
    const char *what = "braid_send";
    checkPeer(what, "peer", peer, false);
    if (auto edge = handle_->sendTo.find(peer); count > 0 && edge != handle_->sendTo.end())
      return onEdge(backend, what, edge->second, const_cast<void *>(buffer), count, dtype, true);
    Issue in = begin(backend, what, buffer, buffer, count, dtype);
    if (count > 0)
      check(ncclSend(buffer, size_t(count), dataType(dtype), peer, comm(), in.stream), what,
            axes_, comm());
    return finish(in);
  }

  std::unique_ptr<Event> recv(Backend &backend, void *buffer, int64_t count, braid_dtype dtype,
                              int32_t peer, int32_t /*tag*/) override {
    const char *what = "braid_recv";
    checkPeer(what, "peer", peer, false);
    if (auto edge = handle_->recvFrom.find(peer); count > 0 && edge != handle_->recvFrom.end())
      return onEdge(backend, what, edge->second, buffer, count, dtype, false);
    Issue in = begin(backend, what, buffer, buffer, count, dtype);
    if (count > 0)
      check(ncclRecv(buffer, size_t(count), dataType(dtype), peer, comm(), in.stream), what,
            axes_, comm());
    return finish(in);
  }

  // A ring's or a halo's step in one NCCL group: every rank sends and
  // receives at once without deadlock (a lone ncclSend holds the stream
  // until its peer receives).
  std::unique_ptr<Event> sendRecv(Backend &backend, const void *sendBuffer, int64_t sendCount,
                                  int32_t dst, void *recvBuffer, int64_t recvCount,
                                  int32_t src, braid_dtype dtype) override {
    const char *what = "braid_sendrecv";
    Issue in = begin(backend, what, dst >= 0 ? sendBuffer : recvBuffer,
                     src >= 0 ? recvBuffer : sendBuffer,
                     std::max(dst >= 0 ? sendCount : 0, src >= 0 ? recvCount : 0), dtype);
    if (dst >= 0)
      checkPeer(what, "destination", dst, false);
    if (src >= 0)
      checkPeer(what, "source", src, false);
    check(ncclGroupStart(), what, axes_, comm());
    if (dst >= 0 && sendCount > 0)
      check(ncclSend(sendBuffer, size_t(sendCount), dataType(dtype), dst, comm(), in.stream),
            what, axes_, comm());
    if (src >= 0 && recvCount > 0)
      check(ncclRecv(recvBuffer, size_t(recvCount), dataType(dtype), src, comm(), in.stream),
            what, axes_, comm());
    check(ncclGroupEnd(), what, axes_, comm());
    return finish(in);
  }

private:
  /// A send or a receive on the edge communicator to or from a neighbour,
  /// on the edge's own stream.
  std::unique_ptr<Event> onEdge(Backend &backend, const char *what, const Handle::Edge &edge,
                                void *buffer, int64_t count, braid_dtype dtype, bool send) {
    const std::string &axes = edge.handle->axes;
    Issue in = begin(backend, what, buffer, buffer, count, dtype, axes);
    ncclComm_t c = edge.handle->comm;
    if (send)
      check(ncclSend(buffer, size_t(count), dataType(dtype), edge.peer, c, in.stream), what, axes,
            c);
    else
      check(ncclRecv(buffer, size_t(count), dataType(dtype), edge.peer, c, in.stream), what, axes,
            c);
    return completion(in, edge.handle);
  }

  /// A collective being issued: its comm stream and staging buffers.
  struct Issue {
    const char *what;
    cudaStream_t stream;
    std::vector<void *> staging; ///< freed (stream-ordered) after the call
    cudaEvent_t start = nullptr; ///< traced: when the stream could start it
  };

  ncclComm_t comm() const { return handle_->comm; }

  /// Checks the arguments and orders the comm stream (of `streamKey`, by
  /// default the group's) after the compute stream.
  Issue begin(Backend &backend, const char *what, const void *send, const void *recv,
              int64_t count, braid_dtype dtype, const std::string &streamKey = {}) {
    auto compute = static_cast<cudaStream_t>(backend.computeStream());
    auto stream = static_cast<cudaStream_t>(
        backend.commStream(streamKey.empty() ? handle_->axes : streamKey));
    if (!compute || !stream)
      fatal("%s on '%s': the NCCL communicator works on device memory (cuda backend), not %s",
            what, axes_.c_str(), backend.name());
    checkCollectiveArgs(what, axes_, send, recv, count, dtype);
    if (dataType(dtype) == ncclNumTypes)
      fatal("%s on '%s': unknown dtype %d", what, axes_.c_str(), int(dtype));
    // cudaStreamWaitEvent takes the event's state at the call: it can go back
    // to the pool at once.
    cudaEvent_t ready = pool_->acquire();
    BRAID_NCCL_CUDA(cudaEventRecord(ready, compute), what, axes_);
    BRAID_NCCL_CUDA(cudaStreamWaitEvent(stream, ready, 0), what, axes_);
    pool_->release(ready);
    Issue in{what, stream, {}};
    if (pool_->timed) {
      BRAID_NCCL_CUDA(cudaEventCreate(&in.start), what, axes_);
      BRAID_NCCL_CUDA(cudaEventRecord(in.start, stream), what, axes_);
    }
    return in;
  }

  /// Records the completion event (after freeing the staging buffers in
  /// stream order).
  std::unique_ptr<Event> finish(Issue &in) {
    for (void *p : in.staging)
      BRAID_NCCL_CUDA(cudaFreeAsync(p, in.stream), in.what, axes_);
    return completion(in, handle_);
  }

  /// The event of `in`'s completion on its stream, after (traced) the timed
  /// event that closes its span: a wait for the completion then never ends
  /// before the span does.
  std::unique_ptr<Event> completion(Issue &in, const std::shared_ptr<Handle> &handle) {
    std::shared_ptr<DeviceSpan> span;
    if (in.start) {
      cudaEvent_t end = nullptr;
      BRAID_NCCL_CUDA(cudaEventCreate(&end), in.what, axes_);
      BRAID_NCCL_CUDA(cudaEventRecord(end, in.stream), in.what, axes_);
      span = std::make_shared<NcclSpan>(in.start, end);
      in.start = nullptr;
    }
    cudaEvent_t done = pool_->acquire();
    BRAID_NCCL_CUDA(cudaEventRecord(done, in.stream), in.what, axes_);
    return std::make_unique<NcclEvent>(done, pool_, handle, in.what, std::move(span));
  }

  /// A stream-ordered copy of an input that overlaps the output.
  const void *stage(Issue &in, const void *src, int64_t bytes) {
    void *copy = nullptr;
    BRAID_NCCL_CUDA(cudaMallocAsync(&copy, size_t(bytes), in.stream), in.what, axes_);
    in.staging.push_back(copy);
    BRAID_NCCL_CUDA(
        cudaMemcpyAsync(copy, src, size_t(bytes), cudaMemcpyDeviceToDevice, in.stream), in.what,
        axes_);
    return copy;
  }

  ncclRedOp_t redOp(const char *what, braid_redop op) {
    switch (op) {
    case BRAID_RED_SUM:
      return ncclSum;
    case BRAID_RED_MAX:
      return ncclMax;
    case BRAID_RED_MIN:
      return ncclMin;
    }
    fatal("%s on '%s': unknown reduction %d", what, axes_.c_str(), int(op));
  }

  void checkPeer(const char *what, const char *role, int32_t peer, bool selfOk) {
    if (peer < 0 || peer >= size_)
      fatal("%s on '%s': %s %d is not a rank of a communicator of size %d", what, axes_.c_str(),
            role, int(peer), size_);
    if (!selfOk && peer == rank_)
      fatal("%s on '%s': %s %d is this rank (NCCL send/recv to oneself is not supported)", what,
            axes_.c_str(), role, int(peer));
  }

  std::shared_ptr<Handle> handle_;
  std::string axes_;
  std::shared_ptr<EventPool> pool_;
  int32_t rank_ = 0, size_ = 1;
};

//===--- Provider --------------------------------------------------------===//

class NcclProvider final : public CommProvider {
public:
  NcclProvider(Grid grid, const Bootstrap &boot)
      : grid_(std::move(grid)), pool_(std::make_shared<EventPool>(boot.timed)) {
    size_ = boot.size;
    rank_ = boot.rank;
    if (size_ < 1 || rank_ < 0 || rank_ >= size_)
      fatal("NCCL: rank %d of a world of %d ranks", int(rank_), int(size_));
    if (grid_.ranks() != size_)
      fatal("grid %s has %lld ranks but the NCCL world has %d ranks", grid_.str().c_str(),
            (long long)grid_.ranks(), int(size_));
    if (size_ > 1)
      setFatalRank(rank_);
    if (!boot.broadcast)
      setFatalAbort(abortOnFatal); // under MPI, MPI_Abort ends every rank already

    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (rank_ == 0)
      check(ncclGetUniqueId(&id), "ncclGetUniqueId", "world", nullptr);
    bool store = !boot.broadcast;
    if (store) {
      if (boot.storeDir.empty())
        fatal("NCCL: a world of %d ranks without MPI needs BRAID_NCCL_STORE=DIR", int(size_));
      if (rank_ == 0)
        storeWrite(boot.storeDir, &id, sizeof id);
      else
        storeRead(boot.storeDir, rank_, &id, sizeof id);
    } else {
      boot.broadcast(&id, sizeof id);
    }

    world_ = std::make_shared<Handle>();
    world_->axes = "world";
    check(ncclCommInitRank(&world_->comm, size_, id, rank_), "ncclCommInitRank", "world",
          nullptr);
    world_->track();
    makeEdges(*world_);
    if (store && rank_ == 0) // every rank has joined: the id was read
      storeRemove(boot.storeDir);
    coords_ = grid_.coordinates(rank_);
  }
  const char *kind() const override { return "nccl"; }
  int32_t worldSize() const override { return size_; }
  int32_t worldRank() const override { return rank_; }

  std::unique_ptr<Communicator> create(const std::string &axes) override {
    GroupSplit split = splitForGroup(grid_, coords_, axes);
    const std::string &key = split.key;
    const int color = split.color, order = split.order;
    std::shared_ptr<Handle> &handle = byGroup_[key];
    if (!handle) {
      if (split.world) {
        handle = world_;
      } else {
        handle = std::make_shared<Handle>();
        handle->axes = key;
        check(ncclCommSplit(world_->comm, color, order, &handle->comm, nullptr),
              "braid_rt_comm (ncclCommSplit)", axes, world_->comm);
        if (!handle->comm)
          fatal("braid_rt_comm: ncclCommSplit gave no communicator for '%s'", axes.c_str());
        handle->track();
        makeEdges(*handle);
      }
    }
    return std::make_unique<NcclCommunicator>(handle, axes, pool_);
  }

private:
  /// The edge communicators of a group (Handle::Edge): for each pair of ring
  /// neighbours {i, i+1 mod n}, one two-rank communicator per direction.
  /// ncclCommSplit is collective over the group and gives a rank one
  /// communicator per call, so the pairs are split in rounds in which no
  /// rank is in two pairs: even and odd i (and the pair {n-1, 0} alone when
  /// n is odd). The key is the group rank: in each two-rank communicator the
  /// lower group rank is rank 0. NCCL connects a pair's transfers on first
  /// use, so an edge the program never uses costs its creation only.
  void makeEdges(Handle &group) {
    int n = 0, r = 0;
    check(ncclCommCount(group.comm, &n), "braid_rt_comm", group.axes, group.comm);
    check(ncclCommUserRank(group.comm, &r), "braid_rt_comm", group.axes, group.comm);
    if (n < 2)
      return;
    const int pairs = n == 2 ? 1 : n;
    auto roundOf = [&](int i) { return n % 2 && i == n - 1 ? 2 : i % 2; };
    const int rounds = n == 2 ? 1 : n % 2 ? 3 : 2;
    for (int round = 0; round < rounds; ++round) {
      // This rank's pair in this round: {r, r+1} or {r-1, r}.
      int pair = -1;
      if (r < pairs && roundOf(r) == round)
        pair = r;
      else if (int below = (r - 1 + n) % n; below < pairs && roundOf(below) == round)
        pair = below;
      for (int up = 0; up < 2; ++up) {
        int from = -1, to = -1;
        if (pair >= 0) {
          from = up ? pair : (pair + 1) % n;
          to = up ? (pair + 1) % n : pair;
        }
        auto edge = std::make_shared<Handle>();
        edge->axes = group.axes + "[" + std::to_string(from) + ">" + std::to_string(to) + "]";
        check(ncclCommSplit(group.comm, pair >= 0 ? pair : NCCL_SPLIT_NOCOLOR, r, &edge->comm,
                            nullptr),
              "braid_rt_comm (ncclCommSplit of a neighbour pair)", group.axes, group.comm);
        if (pair < 0)
          continue;
        if (!edge->comm)
          fatal("braid_rt_comm: ncclCommSplit gave no communicator for '%s'",
                edge->axes.c_str());
        edge->track();
        int other = r == from ? to : from;
        Handle::Edge e{edge, r < other ? 1 : 0};
        if (r == from)
          group.sendTo[to] = e;
        else
          group.recvFrom[from] = e;
      }
    }
  }

  Grid grid_;
  int32_t size_ = 1, rank_ = 0;
  std::vector<int32_t> coords_;
  std::shared_ptr<Handle> world_;
  std::map<std::string, std::shared_ptr<Handle>> byGroup_;
  std::shared_ptr<EventPool> pool_;
};

} // namespace

void abortAll() {
  std::lock_guard<std::mutex> lock(liveMutex());
  if (aborted)
    return;
  aborted = true;
  for (ncclComm_t comm : liveComms())
    ncclCommAbort(comm);
  liveComms().clear();
}

std::unique_ptr<CommProvider> makeCommProvider(const Grid &grid, const Bootstrap &bootstrap) {
  return std::make_unique<NcclProvider>(grid, bootstrap);
}

} // namespace braid::rt::nccl

#endif // __has_include(<nccl.h>)
